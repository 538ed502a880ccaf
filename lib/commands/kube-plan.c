/* SPDX-License-Identifier: MIT */
/*
 * aisb kube's plan: plan_gather and plan_build of the same policy as a run, with
 * a cluster's facts where they are not this machine's, the objects' names, and the harness's
 * bridged files; and the refusals, each in one line, of what the policy or the plan has that a
 * cluster cannot (kube_check_policy, kube_check_plan). The bridged files are written in a
 * directory of this process's own, read back and removed at once.
 */
#include <ctype.h>
#include <dirent.h>

#include "allowlist.h"
#include "digest.h"
#include "fileio.h"
#include "gate-squid.h"
#include "harness.h"
#include "jsonutil.h"
#include "kube.h"
#include "service.h"
#include "tree-walk.h"

/* A DNS-1123 label from the project's short name: lowercase letters, digits and '-'. */
static void kube_label(const char *in, char *out, size_t size)
{
        size_t n = 0;
        for (const char *c = in; *c && n + 1 < size; c++) {
                char ch = *c == '_' ? '-' : *c;
                if ((ch == '-' && (n == 0 || out[n - 1] == '-')))
                        continue;
                out[n++] = ch;
        }
        while (n > 0 && out[n - 1] == '-')
                n--;
        out[n] = 0;
        if (n == 0)
                snprintf(out, size, "scratch");
}

/* What the sandbox's objects are made of, as text: the project, the network mode, the
 * allowlist and the names mapped for the gate, the variables' names, the command, the caps,
 * and the options that shape the objects. Nothing of this machine (no path of aisb's own, no
 * terminal variable), so the same policy names the same objects anywhere. */
static int kube_identity(const aisb_policy *p, const kube_options *o, const allowlist *l, char **ret_hex)
{
        _cleanup_(buffer_free) buffer b = {};
        _cleanup_strv_free_ char **entries = NULL, **hosts = strv_copy((const char *const *) p->add_hosts);
        int r = buffer_printf(&b, "project=%s\nnet=%d\n", p->project ? p->project : "", (int) p->net);
        for (size_t i = 0; r >= 0 && i < l->n; i++) {
                _cleanup_free_ char *text = NULL;
                r = allowlist_entry_text(&l->entries[i], &text);
                if (r >= 0)
                        r = strv_push(&entries, text);
        }
        if (r < 0 || (p->add_hosts && !hosts))
                return -ENOMEM;
        strv_sort(entries);
        strv_sort(hosts);
        for (size_t i = 0; r >= 0 && entries && entries[i]; i++)
                r = buffer_printf(&b, "allow=%s\n", entries[i]);
        for (size_t i = 0; r >= 0 && hosts && hosts[i]; i++)
                r = buffer_printf(&b, "gate-add-host=%s\n", hosts[i]);
        for (size_t i = 0; r >= 0 && i < p->n_env; i++)
                if (!policy_env_inherited(p->env[i].name))
                        r = buffer_printf(&b, "env=%s\n", p->env[i].name);
        const char *const *cmd = policy_command(p);
        for (size_t i = 0; r >= 0 && cmd && cmd[i]; i++)
                r = buffer_printf(&b, "command=%zu:%s\n", strlen(cmd[i]), cmd[i]);
        if (r >= 0)
                r = buffer_printf(&b, "memory=%llu\ncpus=%llu\ntmp=%llu\nread-only=%d\n", p->memory, p->cpus_milli,
                                  p->tmp_size, (int) p->read_only);
        if (r >= 0)
                r = buffer_printf(&b, "as-sandbox=%d\npodman=%d\nnetfilter=%d\ntimeout=%llu\nworkspace=%llu\nrepo=%s\n",
                                  (int) o->as_sandbox, (int) o->podman, (int) o->netfilter_init, o->timeout_s,
                                  o->workspace_size, o->image_repo ? o->image_repo : "");
        if (r < 0)
                return -ENOMEM;
        return sha256_hex(b.data, b.size, 12, ret_hex);
}

static int kube_names_make(const aisb_policy *p, const kube_options *o, const allowlist *l, kube_names *ret)
{
        char base[33], short_name[33];
        project_short_name(p->project, base, sizeof base);
        kube_label(base, short_name, sizeof short_name);
        /* The project and all that shapes its objects: another policy for the same project, or
         * another scratch sandbox, is another set of objects, and applying one never widens or
         * removes another's NetworkPolicy. */
        _cleanup_free_ char *hash = NULL, *gate = NULL;
        if (kube_identity(p, o, l, &hash) < 0)
                return -ENOMEM;
        snprintf(ret->sandbox, sizeof ret->sandbox, "aisb-%.32s-%.12s", short_name, hash);
        int r = gate_squid_hash(l, (const char *const *) p->add_hosts, &gate);
        if (r < 0)
                return r;
        snprintf(ret->gate_hash, sizeof ret->gate_hash, "%s", gate);
        snprintf(ret->gate, sizeof ret->gate, "aisb-gate-%s", gate);
        return 0;
}

/* The variable Kubernetes gives a pod for the gate's Service: AISB_GATE_HASH_SERVICE_HOST. */
static void service_host_variable(const kube_names *n, char var[static 80])
{
        size_t k = 0;
        for (const char *c = n->gate; *c && k + 14 < 80; c++)
                var[k++] = *c == '-' ? '_' : (char) toupper((unsigned char) *c);
        snprintf(var + k, 80 - k, "_SERVICE_HOST");
}

/* What a cluster cannot be given as the policy says: refused, each in one line, rather than
 * emitted weaker. These the policy alone decides, before anything is read. */
static int kube_check_policy(const aisb_policy *p, const kube_options *o, aisb_error **err)
{
        if (p->n_secrets)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --secret is not supported on Kubernetes yet "
                                                        "(the gate would hold the value); use --env NAME");
        if (p->net == SANDBOX_NET_ALLOW && (p->no_gate || p->proxy))
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --%s has no meaning on Kubernetes: the gate is a pod "
                                                        "there",
                                      p->no_gate ? "no-gate" : "proxy");
        if (p->n_mounts || p->devices)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --%s names a host path, which a cluster's pod does "
                                                        "not have",
                                      p->n_mounts ? "mount" : "device");
        if (p->keep_root || p->allow_unenforced)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --%s is refused: the pod starts unprivileged",
                                      p->keep_root ? "insecure-keep-root" : "allow-unenforced");
        if (p->create_patch)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --unsafe-create-patch is podman's, not a cluster's");
        if (p->review)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --review keeps a run's changes in a layer on this "
                                                        "machine; a cluster's workspace has none");
        if (p->net == SANDBOX_NET_ALLOW && plan_asks(p, false))
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --ask tty asks on this machine (aisb ask) about names "
                                                        "the allowlist lacks; a cluster's gate cannot: --ask auto");
        if (o->netfilter_init && p->net == SANDBOX_NET_FULL)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: --netfilter init has no ruleset to install with --net full");
        if (o->podman && o->as_sandbox)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: podman plays no Sandbox: --target podman takes --as pod");
        return 0;
}

/* Files a ConfigMap holds as they are: keys it takes, UTF-8 text, within its size. */
#define KUBE_CONFIG_MAP_MAX (1000 * 1000)
static int config_map_check(const project_settings *files, const char *what, aisb_error **err)
{
        size_t total = 0;
        for (size_t i = 0; i < files->n_files; i++) {
                const project_file *f = &files->files[i];
                total += f->size;
                if (!*f->name || strlen(f->name) > 253 ||
                    strspn(f->name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._") != strlen(f->name))
                        return aisb_error_set(err, -EOPNOTSUPP, "kube: %s/%.64s: not a name a ConfigMap's key takes "
                                                                "(letters, digits, '-', '.', '_')",
                                              what, f->name);
                if (!json_utf8_valid(f->data, f->size))
                        return aisb_error_set(err, -EOPNOTSUPP, "kube: %s/%s is not UTF-8 text, which a ConfigMap "
                                                                "holds as it is",
                                              what, f->name);
        }
        if (total > KUBE_CONFIG_MAP_MAX)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: %s holds %zu bytes, more than a ConfigMap's %d", what,
                                      total, KUBE_CONFIG_MAP_MAX);
        return 0;
}

/* What the plan has that the pod cannot: refused in one line that names it and the option
 * that takes it away. On a cluster, nothing of this machine's files: not the agents
 * directory, a harness's directories, or the protected paths (binds of this machine's tree
 * over itself; a claim is not that tree, and a subPath missing there would be made a
 * directory). With podman a git directory outside the project is a path the pod is not
 * given. */
int kube_check_plan(const aisb_policy *p, const kube_options *o, const kube_plan *k, aisb_error **err)
{
        const plan_facts *f = &k->facts;
        if (!o->podman && f->harness.agents_dir)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: %s is mounted at ~/.agents, a path of this machine's "
                                                        "a cluster's pod does not have: --no-agents, or --target podman",
                                      f->harness.agents_dir);
        if (!o->podman && f->harness.n_mounts)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: %s is mounted at %s, a path of this machine's a "
                                                        "cluster's pod does not have: --no-harness-config, or --target "
                                                        "podman",
                                      f->harness.mounts[0].source, f->harness.mounts[0].destination);
        if (f->protect.outside)
                return aisb_error_set(err, -EOPNOTSUPP,
                                      "kube: the project's .git names %s, outside the project, which the pod is not "
                                      "given; run from the repository's main worktree, or --protect=-.git",
                                      f->protect.outside[0]);
        if (!o->podman && f->protect.n_mounts)
                return aisb_error_set(err, -EOPNOTSUPP, "kube: %s is protected, a bind of this machine's tree over "
                                                        "itself; a cluster's workspace claim is not that tree: "
                                                        "--protect none, or --target podman",
                                      f->protect.mounts[0].destination);
        int r = f->settings_copy ? config_map_check(&f->settings, PROJECT_SETTINGS_DIR, err) : 0;
        return r < 0 ? r : config_map_check(&k->seed, harness_sandbox_dir(p) ? harness_sandbox_dir(p) : "", err);
}

/* Each regular file of the bridge's directory, in name order (the walk's), read whole. */
typedef struct bridged_read {
        project_settings *files;
        aisb_error **err;
        bool said; /* err holds what went wrong */
} bridged_read;

static int read_bridged(const tree_entry *e, void *userdata)
{
        bridged_read *b = userdata;
        project_settings *s = b->files;
        if (e->type != DT_REG)
                return TREE_SKIP;
        project_file *more = reallocarray(s->files, s->n_files + 1, sizeof *s->files);
        if (!more)
                return -ENOMEM;
        s->files = more;
        project_file *f = &s->files[s->n_files];
        *f = (project_file) {};
        int r = read_file_at(e->dir, e->name, KUBE_CONFIG_MAP_MAX + 1, &f->data, &f->size);
        if (r < 0) {
                b->said = true;
                return aisb_error_set(b->err, r, "kube: reading the bridged %s: %s", e->name, strerror(-r));
        }
        s->n_files++;
        return (f->name = strdup(e->name)) ? 0 : -ENOMEM;
}

static int read_files(int dir, project_settings *ret, aisb_error **err)
{
        bridged_read b = { .files = ret, .err = err };
        int r = tree_walk(dir, 0, 0, read_bridged, &b);
        if (r >= 0 || b.said)
                return r;
        return r == -ENOMEM ? error_oom(err) : aisb_error_set(err, r, "kube: reading the bridged files: %s", strerror(-r));
}

DEFINE_TRIVIAL_CLEANUP_FUNC(aisb_ctx *, aisb_ctx_free)

/* The harness's files a fresh home gets from the bridge (harness_bridge_fresh), written in a
 * directory of this process's own, read back and removed: a pod's home is new each start. Its
 * warnings (what of the host's settings stays out) are the local run's to give. */
static int kube_seed(const aisb_policy *p, project_settings *ret, aisb_error **err)
{
        _cleanup_(run_dir_remove) run_dir d = RUN_DIR_NULL;
        _cleanup_(aisb_ctx_freep) aisb_ctx *ctx = NULL;
        int r = run_dir_create(&d, err);
        r = r < 0 ? r : aisb_ctx_new(&ctx, err);
        r = r < 0 ? r : harness_bridge_fresh(ctx, p, d.fd, err);
        return r < 0 ? r : read_files(d.fd, ret, err);
}

void kube_plan_done(kube_plan *k)
{
        plan_facts_done(&k->facts);
        run_plan_done(&k->plan);
        free(k->gate_host);
        free(k->gate_address);
        free(k->image);
        free(k->gate_image);
        project_settings_done(&k->seed);
        *k = (kube_plan) {};
}

int kube_image_name(const image_facts *f, const kube_options *o, const char *name, char **ret)
{
        _cleanup_free_ char *repo = NULL;
        if (!o->image_repo)
                return (*ret = strdup(f->tag)) ? 0 : -ENOMEM;
        return asprintf(&repo, "%s/%s", o->image_repo, name) < 0 ? -ENOMEM : image_context_tag(repo, &f->context, ret);
}

int kube_plan_make(const aisb_policy *p, const kube_options *o, kube_plan *ret, aisb_error **err)
{
        _cleanup_(kube_plan_done) kube_plan k = {};
        int r = kube_check_policy(p, o, err);
        r = r < 0 ? r : plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DRY_RUN }, &k.facts, err);
        if (r < 0)
                return r;
        plan_facts *f = &k.facts;
        if (gate_squid_intercepts(&f->net.list, 0))
                return aisb_error_set(err, -EOPNOTSUPP, "kube: allowlist entries with methods or paths are not "
                                                        "supported on Kubernetes yet (the gate would intercept TLS)");
        r = kube_names_make(p, o, &f->net.list, &k.names);
        if (r < 0)
                return aisb_error_set(err, r, "kube: cannot name the objects: %s", strerror(-r));
        /* A cluster's facts where they are not this machine's: the pod's uid, the gate's pod
         * (its Service's address, read from the variable Kubernetes sets, or podman's fixed
         * one), the network enforced outside the sandbox, a home that is fresh each start and
         * seeded with the bridged files, and on a cluster a workspace that is a claim, not the
         * directory whose inode a local run checks. */
        char var[80];
        service_host_variable(&k.names, var);
        k.gate = plan_needs_gate(p, f);
        f->uid = f->gid = KUBE_UID;
        f->gate_port = k.gate ? KUBE_GATE_PORT : 0;
        if (o->podman ? !(k.gate_host = strdup(k.names.gate)) || !(k.gate_address = strdup(KUBE_PODMAN_GATE_IP))
                      : asprintf(&k.gate_host, "$(%s)", var) < 0 || !(k.gate_address = strdup(var)))
                return error_oom(err);
        f->net.gate_host = k.gate_host;
        f->net.gate_address = k.gate_address;
        f->net.gate_address_env = !o->podman;
        f->net.external = true;
        f->seed_dir = harness_bridge_applies(p) ? "(the harness's bridged configuration: a ConfigMap)" : NULL;
        if (!o->podman)
                f->have_project_id = false;
        r = plan_build(p, f, &k.plan, err);
        if (r < 0)
                return r;
        if (kube_image_name(&f->built, o, "aisb", &k.image) < 0 ||
            (k.gate && f->built.gate && kube_image_name(f->built.gate, o, "aisb-gate", &k.gate_image) < 0))
                return error_oom(err);
        if (f->seed_dir && (r = kube_seed(p, &k.seed, err)) < 0)
                return r;
        *ret = k;
        k = (kube_plan) {};
        return 0;
}
