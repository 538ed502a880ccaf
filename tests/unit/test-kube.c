/* SPDX-License-Identifier: MIT */
/* aisb kube: each shape against its golden file (image tags aside, which hash the
 * entrypoint binary, and the project's device and inode), every pod spec against the
 * "restricted" Pod Security Standard, the refusals, no value of a variable in the output,
 * names a cluster takes; and for each policy of the plan test's matrix, the pod against the
 * plan a local run of it has (test_renders_plan). */
#include <check.h>
#include <fcntl.h>
#include <regex.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "internal.h"
#include "kube.h"
#include "unit.h"
#include "fileio.h"
#include "../suite-table.h"

static aisb_policy *policy(const char *net)
{
        aisb_policy *p = NULL;
        ck_assert_int_eq(aisb_policy_new(&p, NULL), 0);
        static const char *const base[][2] = {
                { "no-cwd", "true" },         { "base-image", "bootstrap:debian:trixie" },
                { "node-source", "npm" },     { "user-allowlist", "" },
                { "memory", "2g" },           { "cpus", "1.5" },
                { "tmp-size", "512m" },
        };
        for (size_t i = 0; i < ELEMENTSOF(base); i++) {
                aisb_error *err = NULL;
                ck_assert_msg(aisb_policy_set(p, base[i][0], base[i][1], &err) == 0, "%s: %s", base[i][0],
                              aisb_error_message(err));
        }
        ck_assert_int_eq(aisb_policy_set(p, "net", net, NULL), 0);
        ck_assert_msg(getenv("AISB_ENTRYPOINT"), "AISB_ENTRYPOINT is not set (meson sets it)");
        ck_assert_int_eq(aisb_policy_set(p, "entrypoint", getenv("AISB_ENTRYPOINT"), NULL), 0);
        return p;
}

/* Each directory of the NULL-ended list, made unless it is there. */
static void mkdir_each(const char *const *dirs)
{
        for (; *dirs; dirs++)
                ck_assert_msg(mkdir(*dirs, 0755) == 0 || errno == EEXIST, "%s: %s", *dirs, strerror(errno));
}

static void set(aisb_policy *p, const char *key, const char *value)
{
        aisb_error *err = NULL;
        ck_assert_msg(aisb_policy_set(p, key, value, &err) == 0, "%s=%s: %s", key, value, aisb_error_message(err));
}

/* NULL options are the zeroed ones; the push's TLS flag changes no object. */
START_TEST(test_options_defaults)
{
        aisb_policy *p = policy("none");
        char *none = NULL, *zeroed = NULL, *no_verify = NULL;
        ck_assert_int_eq(aisb_policy_kube(p, NULL, &none, NULL), 0);
        ck_assert_int_eq(aisb_policy_kube(p, &(aisb_kube_options) {}, &zeroed, NULL), 0);
        ck_assert_int_eq(aisb_policy_kube(p, &(aisb_kube_options) { .flags = AISB_KUBE_TLS_NO_VERIFY }, &no_verify, NULL),
                         0);
        ck_assert_str_eq(none, zeroed);
        ck_assert_str_eq(none, no_verify);
        free(none);
        free(zeroed);
        free(no_verify);
        aisb_policy_free(p);
}
END_TEST

/* A project at a fixed path, so that the names in the golden files stay the same. */
#define GOLDEN_PROJECT "/tmp/aisb-kube-golden/acme"
static aisb_policy *project_policy(void)
{
        mkdir_each((const char *const[]) { "/tmp/aisb-kube-golden", GOLDEN_PROJECT, NULL });
        aisb_policy *p = policy("allow");
        set(p, "no-cwd", "false");
        set(p, "project", GOLDEN_PROJECT);
        return p;
}

/* The text with every image tag's hash replaced by TAG. */
static char *untagged(const char *text)
{
        char *out = strdup(text);
        ck_assert_ptr_nonnull(out);
        regex_t re;
        ck_assert_int_eq(regcomp(&re, "/aisb(-gate)?:[0-9a-f]{32}", REG_EXTENDED), 0);
        regmatch_t m[1];
        for (char *at = out; regexec(&re, at, 1, m, 0) == 0;) {
                char *colon = memchr(at + m[0].rm_so, ':', (size_t) (m[0].rm_eo - m[0].rm_so));
                memcpy(colon + 1, "TAG", 3);
                memmove(colon + 4, at + m[0].rm_eo, strlen(at + m[0].rm_eo) + 1);
                at = colon + 4;
        }
        regfree(&re);
        /* --expect-mount PATH:DEV:INO: this machine's device and inode of the project. */
        ck_assert_int_eq(regcomp(&re, "\"(/project[^\":]*):[0-9]+:[0-9]+\"", REG_EXTENDED), 0);
        buffer b = {};
        regmatch_t g[2];
        const char *at = out;
        for (; regexec(&re, at, 2, g, 0) == 0; at += g[0].rm_eo)
                ck_assert_int_ge(buffer_printf(&b, "%.*s:DEV:INO\"", (int) g[1].rm_eo, at), 0);
        ck_assert_int_ge(buffer_printf(&b, "%s", at), 0);
        free(out);
        out = buffer_steal(&b);
        regfree(&re);
        return out;
}

static char *golden(const char *name)
{
        char path[4096];
        snprintf(path, sizeof path, "%s/tests/unit/kube/%s", getenv("AISB_SRC"), name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
        char *text = NULL;
        ck_assert_int_eq(read_full_fd(fd, 1 << 20, &text, NULL), 0);
        close(fd);
        return text;
}

static char *manifests(const aisb_policy *p, const kube_options *o)
{
        char *text = NULL;
        aisb_error *err = NULL;
        int r = kube_manifests(p, o, &text, &err);
        ck_assert_msg(r == 0, "%s", aisb_error_message(err));
        return text;
}

/* Each "---" document, parsed. */
static json_object *documents(const char *text)
{
        json_object *docs = json_object_new_array();
        ck_assert(startswith(text, "---\n"));
        for (const char *p = text; p && *p;) {
                ck_assert(startswith(p, "---\n"));
                p += 4;
                const char *next = strstr(p, "\n---\n");
                char *one = next ? strndup(p, (size_t) (next - p + 1)) : strdup(p);
                json_object *o = json_tokener_parse(one);
                ck_assert_msg(o, "not JSON: %s", one);
                free(one);
                ck_assert_int_eq(json_object_array_add(docs, o), 0);
                p = next ? next + 1 : NULL;
        }
        return docs;
}

static json_object *get(json_object *o, const char *path)
{
        char *copy = strdup(path), *save = NULL;
        for (char *k = strtok_r(copy, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
                if (!json_object_object_get_ex(o, k, &o))
                        o = NULL;
        free(copy);
        return o;
}

static bool is_true(json_object *o)
{
        return o && json_object_is_type(o, json_type_boolean) && json_object_get_boolean(o);
}

/* podman kube play on one machine, not a cluster's admission: the project is a hostPath
 * there, and that is all it may add to the standard. */
static bool podman_target;
/* --netfilter init: its one init container, "netfilter", may run as root with NET_ADMIN, and
 * nothing else may. */
static bool netfilter_variant;

/* The "restricted" Pod Security Standard (v1.30), as admission checks a pod spec. */
static void check_restricted(json_object *spec, const char *what)
{
        static const char *const host[] = { "hostNetwork", "hostPID", "hostIPC" };
        for (size_t i = 0; i < ELEMENTSOF(host); i++)
                ck_assert_msg(!is_true(get(spec, host[i])), "%s: %s", what, host[i]);
        static const char *const allowed_volumes[] = { "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                                                       "persistentVolumeClaim", "projected", "secret" };
        json_object *volumes = get(spec, "volumes");
        for (size_t i = 0; volumes && i < json_object_array_length(volumes); i++) {
                json_object_object_foreach(json_object_array_get_idx(volumes, i), key, value) {
                        (void) value;
                        if (streq(key, "name"))
                                continue;
                        bool ok = podman_target && streq(key, "hostPath");
                        for (size_t k = 0; k < ELEMENTSOF(allowed_volumes); k++)
                                ok |= streq(key, allowed_volumes[k]);
                        ck_assert_msg(ok, "%s: volume type %s", what, key);
                }
        }
        json_object *pod_sc = get(spec, "securityContext");
        ck_assert_msg(!get(pod_sc, "sysctls"), "%s: sysctls", what);
        const char *pod_seccomp = json_object_get_string(get(pod_sc, "seccompProfile.type"));
        static const char *const lists[] = { "initContainers", "containers", "ephemeralContainers" };
        for (size_t l = 0; l < ELEMENTSOF(lists); l++) {
                json_object *cs = get(spec, lists[l]);
                for (size_t i = 0; cs && i < json_object_array_length(cs); i++) {
                        json_object *c = json_object_array_get_idx(cs, i), *sc = get(c, "securityContext");
                        if (netfilter_variant && streq(lists[l], "initContainers") &&
                            streq(json_object_get_string(get(c, "name")), "netfilter")) {
                                json_object *add = get(sc, "capabilities.add");
                                ck_assert(add && json_object_array_length(add) == 1 &&
                                          streq(json_object_get_string(json_object_array_get_idx(add, 0)), "NET_ADMIN"));
                                ck_assert(!is_true(get(sc, "privileged")) && get(sc, "allowPrivilegeEscalation") &&
                                          !json_object_get_boolean(get(sc, "allowPrivilegeEscalation")));
                                ck_assert(is_true(get(sc, "readOnlyRootFilesystem")));
                                ck_assert_str_eq(json_object_get_string(get(sc, "seccompProfile.type")), "RuntimeDefault");
                                continue;
                        }
                        ck_assert_msg(!is_true(get(sc, "privileged")), "%s: privileged", what);
                        ck_assert_msg(get(sc, "allowPrivilegeEscalation") &&
                                              !json_object_get_boolean(get(sc, "allowPrivilegeEscalation")),
                                      "%s: allowPrivilegeEscalation must be false", what);
                        ck_assert_msg(is_true(get(sc, "runAsNonRoot")) || is_true(get(pod_sc, "runAsNonRoot")),
                                      "%s: runAsNonRoot", what);
                        json_object *uid = get(sc, "runAsUser") ? get(sc, "runAsUser") : get(pod_sc, "runAsUser");
                        ck_assert_msg(!uid || json_object_get_int64(uid) != 0, "%s: runAsUser 0", what);
                        const char *seccomp = json_object_get_string(get(sc, "seccompProfile.type"));
                        if (!seccomp)
                                seccomp = pod_seccomp;
                        ck_assert_msg(seccomp && (streq(seccomp, "RuntimeDefault") || streq(seccomp, "Localhost")),
                                      "%s: seccomp", what);
                        json_object *drop = get(sc, "capabilities.drop");
                        bool all = false;
                        for (size_t k = 0; drop && k < json_object_array_length(drop); k++)
                                all |= streq(json_object_get_string(json_object_array_get_idx(drop, k)), "ALL");
                        ck_assert_msg(all, "%s: capabilities.drop lacks ALL", what);
                        json_object *add = get(sc, "capabilities.add");
                        for (size_t k = 0; add && k < json_object_array_length(add); k++)
                                ck_assert_msg(streq(json_object_get_string(json_object_array_get_idx(add, k)),
                                                    "NET_BIND_SERVICE"),
                                              "%s: adds a capability", what);
                        json_object *ports = get(c, "ports");
                        for (size_t k = 0; ports && k < json_object_array_length(ports); k++)
                                ck_assert_msg(!get(json_object_array_get_idx(ports, k), "hostPort"), "%s: hostPort", what);
                        ck_assert_msg(!get(sc, "procMount"), "%s: procMount", what);
                }
        }
}

static void check_all_pods(json_object *docs)
{
        size_t pods = 0;
        for (size_t i = 0; i < json_object_array_length(docs); i++) {
                json_object *d = json_object_array_get_idx(docs, i);
                const char *kind = json_object_get_string(get(d, "kind"));
                if (streq(kind, "Pod"))
                        check_restricted(get(d, "spec"), "Pod"), pods++;
                else if (streq(kind, "Deployment"))
                        check_restricted(get(d, "spec.template.spec"), "Deployment"), pods++;
                const char *name = json_object_get_string(get(d, "metadata.name"));
                ck_assert_msg(name && strlen(name) <= 63 && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(name) &&
                                      name[0] != '-' && name[strlen(name) - 1] != '-',
                              "name '%s' is no DNS label", name ? name : "(none)");
        }
        ck_assert_uint_ge(pods, 1);
}

/* An empty array or object as json-c 0.18 prints it, "[]", where json-c 0.16 wrote "[",
 * a newline, the indentation and "]": the golden files hold 0.16's. Only where a newline
 * is among the blanks, which no JSON string can hold. In place. */
static void squeeze_empty(char *text)
{
        char *out = text;
        for (const char *in = text; *in;) {
                *out++ = *in;
                if (*in == '[' || *in == '{') {
                        size_t blank = strspn(in + 1, " \n");
                        char close = *in == '[' ? ']' : '}';
                        if (in[1 + blank] == close && memchr(in + 1, '\n', blank)) {
                                *out++ = close;
                                in += blank + 2;
                                continue;
                        }
                }
                in++;
        }
        *out = 0;
}

/* text kept in a file of its own, to compare with the golden one: its path. */
static const char *kept_in_file(const char *text)
{
        static char path[32];
        snprintf(path, sizeof path, "/tmp/aisb-kube-got.XXXXXX");
        _cleanup_close_ int fd = mkstemp(path);
        if (fd >= 0)
                (void) write_all(fd, text, strlen(text));
        return path;
}

static void expect_golden(const char *text, const char *name)
{
        char *got = untagged(text), *want = golden(name);
        squeeze_empty(got);
        squeeze_empty(want);
        if (!streq(got, want))
                ck_abort_msg("%s differs; what was made is in %s", name, kept_in_file(got));
        free(got);
        free(want);
}

/* How many documents p's objects with o are. */
static size_t document_count(const aisb_policy *p, const kube_options *o)
{
        char *text = manifests(p, o);
        json_object *docs = documents(text);
        size_t n = json_object_array_length(docs);
        json_object_put(docs);
        free(text);
        return n;
}

/* Every pod of docs to the standard, as o's target and variant take it. */
static void check_pods(json_object *docs, const kube_options *o)
{
        podman_target = o->podman;
        netfilter_variant = o->netfilter_init;
        check_all_pods(docs);
        podman_target = netfilter_variant = false;
}

/* p's objects with o, held to the golden file name and every pod to the standard; parsed,
 * with their text in *ret_text. */
static json_object *golden_documents(const aisb_policy *p, const kube_options *o, const char *name, char **ret_text)
{
        char *text = manifests(p, o);
        expect_golden(text, name);
        json_object *docs = documents(text);
        check_pods(docs, o);
        *ret_text = text;
        return docs;
}

START_TEST(test_allow)
{
        setenv("AISB_KUBE_TEST_KEY", "value-never-printed", 1);
        aisb_policy *p = policy("allow");
        set(p, "allow", "example.com");
        set(p, "allow", "registry.npmjs.org");
        set(p, "allow", "example.org:8443");
        set(p, "allow", "192.0.2.10:5432");
        set(p, "gate-add-host", "internal.test:198.51.100.7");
        set(p, "env", "AISB_KUBE_TEST_KEY");
        const char *const cmd[] = { "make", "test", NULL };
        ck_assert_int_eq(aisb_policy_set_command(p, cmd, NULL), 0);
        kube_options o = { .timeout_s = 3600 };
        char *text = NULL;
        json_object *docs = golden_documents(p, &o, "allow.json", &text);
        ck_assert_ptr_null(strstr(text, "value-never-printed"));
        /* The same policy, the same bytes. */
        char *again = manifests(p, &o);
        ck_assert_str_eq(text, again);
        free(again);
        json_object_put(docs);
        free(text);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_none)
{
        aisb_policy *p = policy("none");
        kube_options o = { .image_repo = "registry.example.com/team" };
        char *text = NULL;
        json_object *docs = golden_documents(p, &o, "none.json", &text);
        /* No gate, nothing out: the bridged settings' ConfigMap, the NetworkPolicy, the Pod. */
        ck_assert_uint_eq(json_object_array_length(docs), 3);
        ck_assert_str_eq(json_object_get_string(get(json_object_array_get_idx(docs, 0), "kind")), "ConfigMap");
        json_object *np = json_object_array_get_idx(docs, 1);
        ck_assert_str_eq(json_object_get_string(get(np, "kind")), "NetworkPolicy");
        ck_assert_uint_eq(json_object_array_length(get(np, "spec.egress")), 0);
        ck_assert_uint_eq(json_object_array_length(get(np, "spec.ingress")), 0);
        json_object_put(docs);
        free(text);
        aisb_policy_free(p);
}
END_TEST

START_TEST(test_refused)
{
        static const struct {
                const char *key, *value, *needle;
        } cases[] = {
                { "secret", "AISB_KUBE_TEST_KEY@api.example.com", "--secret is not supported on Kubernetes yet" },
                { "allow", "api.example.com GET /x", "methods or paths are not supported on Kubernetes yet" },
                { "no-gate", "true", "--no-gate has no meaning on Kubernetes" },
                { "insecure-keep-root", "true", "--insecure-keep-root is refused" },
                { "allow-unenforced", "true", "--allow-unenforced is refused" },
                { "device", "/dev/null", "--device names a host path" },
                { "review", "true", "--review keeps a run's changes in a layer" },
                { "ask", "tty", "--ask tty asks on this machine" },
                /* A path of this machine's: with podman a hostPath, on a cluster refused. */
                { "agents-dir", "/tmp", "/tmp is mounted at ~/.agents, a path of this machine's a cluster's pod "
                                        "does not have: --no-agents" },
        };
        setenv("AISB_KUBE_TEST_KEY", "value-never-printed", 1);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                aisb_policy *p = policy("allow");
                set(p, "allow", "example.com");
                set(p, cases[i].key, cases[i].value);
                char *text = NULL;
                aisb_error *err = NULL;
                kube_options o = {};
                ck_assert_int_eq(kube_manifests(p, &o, &text, &err), -EOPNOTSUPP);
                ck_assert_ptr_null(text);
                ck_assert_msg(strstr(aisb_error_message(err), cases[i].needle), "'%s' lacks '%s'",
                              aisb_error_message(err), cases[i].needle);
                ck_assert(!strchr(aisb_error_message(err), '\n'));
                aisb_error_free(err);
                aisb_policy_free(p);
        }
        /* The protected paths are binds of this machine's tree; a claim is not that tree. */
        {
                mkdir_each((const char *const[]) { "/tmp/aisb-kube-protect", "/tmp/aisb-kube-protect/.git", NULL });
                aisb_policy *q = policy("none");
                set(q, "no-cwd", "false");
                set(q, "project", "/tmp/aisb-kube-protect");
                char *out = NULL;
                aisb_error *err = NULL;
                ck_assert_int_eq(kube_manifests(q, &(kube_options) {}, &out, &err), -EOPNOTSUPP);
                ck_assert_msg(strstr(aisb_error_message(err), "/project/.git is protected") &&
                                      strstr(aisb_error_message(err), "--protect none, or --target podman"),
                              "%s", aisb_error_message(err));
                aisb_error_free(err);
                err = NULL;
                /* podman: the project is the user's tree, kept as a run keeps it; its settings
                 * the run's copy, in a ConfigMap */
                mkdir_each((const char *const[]) { "/tmp/aisb-kube-protect/.ai-sandbox", NULL });
                FILE *notes = fopen("/tmp/aisb-kube-protect/.ai-sandbox/notes", "w");
                ck_assert_ptr_nonnull(notes);
                fputs("the project's own\n", notes);
                fclose(notes);
                out = manifests(q, &(kube_options) { .podman = true });
                ck_assert_ptr_nonnull(strstr(out, "\"path\": \"/tmp/aisb-kube-protect/.git\""));
                ck_assert_ptr_null(strstr(out, "\"subPath\": \".git\""));
                ck_assert_ptr_nonnull(strstr(out, "\"notes\": \"the project's own\\n\""));
                free(out);
                /* what a ConfigMap cannot hold as it is: refused, not mangled */
                notes = fopen("/tmp/aisb-kube-protect/.ai-sandbox/notes", "w");
                ck_assert_ptr_nonnull(notes);
                fputs("caf\xe9\n", notes);
                fclose(notes);
                ck_assert_int_eq(kube_manifests(q, &(kube_options) { .podman = true }, &out, &err), -EOPNOTSUPP);
                ck_assert_msg(strstr(aisb_error_message(err), ".ai-sandbox/notes is not UTF-8 text"), "%s",
                              aisb_error_message(err));
                aisb_error_free(err);
                err = NULL;
                ck_assert_int_eq(unlink("/tmp/aisb-kube-protect/.ai-sandbox/notes"), 0);
                /* and without them, a cluster takes it */
                set(q, "protect", "none");
                free(manifests(q, &(kube_options) {}));
                aisb_policy_free(q);
        }
        /* the agents directory with podman: itself, read-only */
        {
                aisb_policy *q = policy("none");
                set(q, "agents-dir", "/tmp");
                char *out = manifests(q, &(kube_options) { .podman = true });
                ck_assert_ptr_nonnull(strstr(out, "\"mountPath\": \"/home/sandbox/.agents\",\n            \"readOnly\": true"));
                ck_assert_ptr_nonnull(strstr(out, "\"path\": \"/tmp\""));
                free(out);
                aisb_policy_free(q);
        }
        /* allow with nothing to allow */
        aisb_policy *p = policy("allow");
        char *text = NULL;
        kube_options o = {};
        ck_assert_int_eq(kube_manifests(p, &o, &text, NULL), -EINVAL);
        aisb_policy_free(p);
        /* a repository that is no registry path */
        p = policy("none");
        static const char *const bad_repos[] = { "", "Registry/Team", "a b", "x\ny", "repo\"", "r;m" };
        for (size_t i = 0; i < ELEMENTSOF(bad_repos); i++) {
                aisb_kube_options bad = { .image_repo = bad_repos[i] };
                ck_assert_int_eq(aisb_policy_kube(p, &bad, &text, NULL), -EINVAL);
                ck_assert_int_eq(aisb_kube_push(NULL, p, &bad, NULL), -EINVAL);
        }
        ck_assert_int_eq(aisb_policy_kube(p, &(aisb_kube_options) { .flags = 1u << 7 }, &text, NULL), -EINVAL);
        ck_assert_int_eq(aisb_policy_kube(p, &(aisb_kube_options) { .flags = AISB_KUBE_GATE_ONLY | AISB_KUBE_SANDBOX_ONLY },
                                          &text, NULL),
                         -EINVAL);
        /* Nowhere to push to. */
        ck_assert_int_eq(aisb_kube_push(NULL, p, NULL, NULL), -EINVAL);
        ck_assert_int_eq(aisb_kube_push(NULL, p, &(aisb_kube_options) {}, NULL), -EINVAL);
        ck_assert_ptr_null(text);
        aisb_policy_free(p);
}
END_TEST

/* With a project: its workspace claim, mounted at /project. */
START_TEST(test_project)
{
        aisb_policy *p = project_policy();
        set(p, "allow", "10.20.0.0/16");
        set(p, "insecure-allow-host-ranges", "true");
        kube_options o = { .workspace_size = 1ULL << 30 };
        char *text = NULL;
        json_object_put(golden_documents(p, &o, "project.json", &text));
        free(text);
        aisb_policy_free(p);
}
END_TEST

/* The agent-sandbox Sandbox: the same pod spec in its podTemplate, with the labels the
 * NetworkPolicies select on. */
START_TEST(test_sandbox)
{
        aisb_policy *p = policy("allow");
        set(p, "allow", "example.com");
        kube_options pod_o = {}, sandbox_o = { .as_sandbox = true };
        char *pod_text = manifests(p, &pod_o), *text = NULL;
        json_object *pods = documents(pod_text), *docs = golden_documents(p, &sandbox_o, "sandbox.json", &text);
        size_t last = json_object_array_length(docs) - 1;
        json_object *sandbox = json_object_array_get_idx(docs, last), *pod = json_object_array_get_idx(pods, last);
        ck_assert_str_eq(json_object_get_string(get(sandbox, "apiVersion")), "agents.x-k8s.io/v1beta1");
        ck_assert_str_eq(json_object_get_string(get(sandbox, "kind")), "Sandbox");
        /* The same pod spec, but for the names that follow the object's (its volumes'). */
        const char *pod_name = json_object_get_string(get(pod, "metadata.name")),
                   *sandbox_name = json_object_get_string(get(sandbox, "metadata.name"));
        char *want = strdup(json_object_to_json_string_ext(get(pod, "spec"), JSON_C_TO_STRING_PLAIN));
        buffer renamed = {};
        for (const char *at = want, *hit; at; at = hit ? hit + strlen(pod_name) : NULL) {
                hit = strstr(at, pod_name);
                ck_assert_int_ge(buffer_printf(&renamed, "%.*s%s", hit ? (int) (hit - at) : (int) strlen(at), at,
                                               hit ? sandbox_name : ""), 0);
        }
        ck_assert_str_eq(json_object_to_json_string_ext(get(sandbox, "spec.podTemplate.spec"), JSON_C_TO_STRING_PLAIN),
                         renamed.data);
        buffer_free(&renamed);
        free(want);
        /* Its own name (another shape is another set of objects), in the labels the policies
         * select on. */
        ck_assert_str_eq(json_object_get_string(json_object_object_get(get(sandbox, "spec.podTemplate.metadata.labels"),
                                                                       "aisb.sandbox")),
                         json_object_get_string(get(sandbox, "metadata.name")));
        ck_assert_str_ne(json_object_get_string(get(sandbox, "metadata.name")),
                         json_object_get_string(get(pod, "metadata.name")));
        check_restricted(get(sandbox, "spec.podTemplate.spec"), "Sandbox");
        json_object_put(pods);
        json_object_put(docs);
        free(pod_text);
        free(text);
        aisb_policy_free(p);
}
END_TEST

/* For podman kube play: no Service, no NetworkPolicy, the annotation podman reads, the
 * project as a hostPath, no resources; the parts apart. */
START_TEST(test_podman)
{
        const char *dir = GOLDEN_PROJECT;
        aisb_policy *p = project_policy();
        set(p, "allow", "example.com");
        kube_options o = { .podman = true };
        char *text = NULL;
        json_object *docs = golden_documents(p, &o, "podman.json", &text);
        /* The gate's ConfigMap and Deployment, the ConfigMaps of the project's settings and the
         * bridged ones, the Pod. */
        ck_assert_uint_eq(json_object_array_length(docs), 5);
        json_object *pod = json_object_array_get_idx(docs, 4);
        ck_assert_str_eq(json_object_get_string(get(pod, "kind")), "Pod");
        ck_assert_str_eq(json_object_get_string(get(json_object_array_get_idx(get(pod, "spec.volumes"), 0), "hostPath.path")),
                         dir);
        ck_assert_ptr_null(get(json_object_array_get_idx(get(pod, "spec.containers"), 0), "resources"));
        json_object_put(docs);
        free(text);
        o.parts = KUBE_PART_GATE;
        ck_assert_uint_eq(document_count(p, &o), 2);
        o.parts = KUBE_PART_SANDBOX;
        ck_assert_uint_eq(document_count(p, &o), 3);
        /* podman plays no Sandbox */
        o = (kube_options) { .podman = true, .as_sandbox = true };
        ck_assert_int_eq(kube_manifests(p, &o, &text, NULL), -EOPNOTSUPP);
        aisb_policy_free(p);
}
END_TEST

/* --netfilter init: an init container installs the ruleset (the gate's address from its
 * Service's variable, the address entries), the sandbox's container is as restricted as ever. */
START_TEST(test_netfilter)
{
        aisb_policy *p = policy("allow");
        set(p, "allow", "example.com");
        set(p, "allow", "192.0.2.10:5432");
        kube_options o = { .netfilter_init = true };
        char *text = NULL;
        json_object *docs = golden_documents(p, &o, "netfilter.json", &text);
        json_object *pod = json_object_array_get_idx(docs, json_object_array_length(docs) - 1);
        json_object *argv = get(json_object_array_get_idx(get(pod, "spec.initContainers"), 0), "command");
        char *joined = strdup(json_object_to_json_string_ext(argv, JSON_C_TO_STRING_PLAIN));
        ck_assert_ptr_nonnull(strstr(joined, "\"--ruleset-only\""));
        ck_assert_ptr_nonnull(strstr(joined, "\"--allow-env\",\"AISB_GATE_"));
        ck_assert_ptr_nonnull(strstr(joined, "\"--allow\",\"192.0.2.10:5432\""));
        free(joined);
        /* The sandbox's own container gained nothing. */
        ck_assert_ptr_null(get(json_object_array_get_idx(get(pod, "spec.containers"), 0), "securityContext.capabilities.add"));
        json_object_put(docs);
        free(text);
        /* Nothing to install with --net full. */
        set(p, "net", "full");
        ck_assert_int_eq(kube_manifests(p, &o, &text, NULL), -EOPNOTSUPP);
        aisb_policy_free(p);
}
END_TEST

/* What an attack review found: a command's '$' reaches the pod as written (Kubernetes would
 * expand $(NAME), a Secret's value included, and fold $$); another policy for the same
 * project, or another scratch sandbox, names other objects; more ports than the gate's
 * NetworkPolicy lists are refused, not cut. */
START_TEST(test_review)
{
        aisb_policy *p = policy("none");
        const char *const cmd[] = { "sh", "-c", "echo $HOME $(SECRET) $$", NULL };
        ck_assert_int_eq(aisb_policy_set_command(p, cmd, NULL), 0);
        kube_options o = {};
        char *text = manifests(p, &o);
        ck_assert_ptr_nonnull(strstr(text, "\"echo $$HOME $$(SECRET) $$$$\""));
        json_object *docs = documents(text);
        const char *none_name = json_object_get_string(get(json_object_array_get_idx(docs, 0), "metadata.name"));
        char *first = strdup(none_name);
        json_object_put(docs);
        free(text);
        o.podman = true; /* podman expands nothing */
        text = manifests(p, &o);
        ck_assert_ptr_nonnull(strstr(text, "\"echo $HOME $(SECRET) $$\""));
        free(text);
        o.podman = false;
        set(p, "net", "full");
        text = manifests(p, &o);
        docs = documents(text);
        ck_assert_str_ne(json_object_get_string(get(json_object_array_get_idx(docs, 0), "metadata.name")), first);
        json_object_put(docs);
        free(text);
        free(first);
        aisb_policy_free(p);

        p = policy("allow");
        char entry[64];
        for (unsigned port = 1000; port < 1070; port++) {
                snprintf(entry, sizeof entry, "example.com:%u", port);
                set(p, "allow", entry);
        }
        aisb_error *err = NULL;
        ck_assert_int_eq(kube_manifests(p, &o, &text, &err), -EOPNOTSUPP);
        ck_assert_ptr_nonnull(strstr(aisb_error_message(err), "more than 64 ports"));
        aisb_error_free(err);
        aisb_policy_free(p);
}
END_TEST

/* A project with a name no cluster takes as it is still names valid objects. */
START_TEST(test_names)
{
        static const char *const names[] = { "__Weird__Name--", "-", "a.b.c", "UPPER", "x_y_z_", "0123456789abcdefghijklmnopqrstuvwxyz0123456789" };
        char dir[] = "/tmp/aisb-kube.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                char path[4096];
                snprintf(path, sizeof path, "%s/%s", dir, names[i]);
                ck_assert_int_eq(mkdir(path, 0700), 0);
                aisb_policy *p = policy("none");
                set(p, "no-cwd", "false");
                set(p, "project", path);
                kube_options o = {};
                char *text = manifests(p, &o);
                json_object *docs = documents(text);
                check_all_pods(docs);
                json_object_put(docs);
                free(text);
                aisb_policy_free(p);
                rmdir(path);
        }
        rmdir(dir);
}
END_TEST

/* ---- the plan's renderings: the pod is the plan a local run of the policy has ---- */

/* test-plan.c's matrix: each row a policy, as keys and values. */
typedef struct row {
        const char *name;
        const char *keys[12][2];
        const char *refused; /* what kube's one line names, for what a pod cannot have */
} row;

static const row rows[] = {
        { "none", { { "net", "none" } }, NULL },
        { "full", { { "net", "full" } }, NULL },
        { "gate", { { "net", "allow" }, { "allow", "example.org" }, { "allow", "192.0.2.10:5432" } }, NULL },
        { "addresses", { { "net", "allow" }, { "allow", "192.0.2.10:5432" }, { "allow", "198.51.100.0/24" } }, NULL },
        { "proxy", { { "net", "allow" }, { "proxy", "127.0.0.1:3128" }, { "allow", "192.0.2.10:5432" } }, "--proxy" },
        { "secret", { { "net", "allow" }, { "allow", "api.example.com" }, { "secret", "AISB_PLAN_KEY@api.example.com" } },
          "--secret" },
        { "rules", { { "net", "allow" }, { "allow", "example.org GET,HEAD /v1/" } }, "methods or paths" },
        { "mounts", { { "net", "none" }, { "mount", "/tmp:/data:ro" }, { "env", "AISB_PLAN_TOKEN=hunter2" } }, "--mount" },
        { "devices", { { "net", "none" }, { "device", "/dev/null" } }, "--device" },
        { "ephemeral", { { "net", "none" }, { "ephemeral-home", NULL }, { "insecure-keep-root", "true" } },
          "--insecure-keep-root" },
        { "codex", { { "net", "none" }, { "harness", "codex" } }, NULL },
        { "claude", { { "net", "none" }, { "harness", "claude" } }, NULL },
        /* beyond test-plan.c's: a variable of the policy's, an ephemeral home a pod can have */
        { "env", { { "net", "none" }, { "env", "AISB_PLAN_TOKEN=hunter2" }, { "ephemeral-home", NULL } }, NULL },
};

#define MATRIX_PROJECT "/tmp/aisb-test-kube/acme"

static aisb_policy *row_policy(const row *w, bool project)
{
        aisb_policy *p = policy("none");
        set(p, "no-agents", "true");
        set(p, "thinking", "high");
        if (project) {
                mkdir_each((const char *const[]) { "/tmp/aisb-test-kube", MATRIX_PROJECT, MATRIX_PROJECT "/.git",
                                                    MATRIX_PROJECT "/.vscode", NULL });
                set(p, "no-cwd", "false");
                set(p, "project", MATRIX_PROJECT);
        }
        setenv("AISB_PLAN_KEY", "s3cr3t-plan-key", 1);
        for (size_t i = 0; i < ELEMENTSOF(w->keys) && w->keys[i][0]; i++)
                set(p, w->keys[i][0], w->keys[i][1]);
        return p;
}

static bool is_proxy_variable(const char *name)
{
        static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (streq(name, names[i]))
                        return true;
        return false;
}

/* The value of NAME in a NAME=VALUE list, or NULL. */
static const char *env_of(char *const *env, const char *name)
{
        char prefix[256];
        snprintf(prefix, sizeof prefix, "%s=", name);
        for (size_t i = 0; env && env[i]; i++)
                if (startswith(env[i], prefix))
                        return env[i] + strlen(prefix);
        return NULL;
}

/* The pod's variable name as "VALUE", or as "secret:POD/NAME" for a Secret's; NULL: none. */
static char *pod_env(json_object *container, const char *name)
{
        json_object *env = get(container, "env");
        for (size_t i = 0; env && i < json_object_array_length(env); i++) {
                json_object *e = json_object_array_get_idx(env, i);
                if (!streq(json_object_get_string(get(e, "name")), name))
                        continue;
                if (get(e, "value"))
                        return strdup(json_object_get_string(get(e, "value")));
                char *out = NULL;
                ck_assert_int_ge(asprintf(&out, "secret:%s/%s", json_object_get_string(get(e, "valueFrom.secretKeyRef.name")),
                                          json_object_get_string(get(e, "valueFrom.secretKeyRef.key"))),
                                 0);
                return out;
        }
        return NULL;
}

/* The local plan's entrypoint argv as a pod's is told it: the pod's uid, --net external for
 * the network's arguments (kube_plan.facts.net.external), no check of the project's inode on
 * a cluster (the workspace is a claim), the bridge's seed (a pod's home is fresh). */
static char **expected_argv(const aisb_policy *p, const run_plan *local, bool podman)
{
        char **v = NULL;
        size_t n_net = strv_length((const char *const *) local->net.entrypoint_args);
        for (size_t i = 0; local->entrypoint[i]; i++) {
                const char *a = local->entrypoint[i];
                if (streq(a, "--uid") || streq(a, "--gid")) {
                        ck_assert_int_ge(strv_push(&v, a), 0);
                        ck_assert_int_ge(strv_push(&v, "1000"), 0);
                        i++;
                } else if (streq(a, "--net")) {
                        ck_assert_int_ge(strv_push(&v, "--net"), 0);
                        ck_assert_int_ge(strv_push(&v, "external"), 0);
                        i += n_net - 1;
                } else if (streq(a, "--expect-mount") && !podman && startswith(local->entrypoint[i + 1], "/project:"))
                        i++;
                else if (streq(a, "--") && harness_bridge_applies(p) && !strv_contains((const char *const *) local->entrypoint, "--seed")) {
                        char seed[256];
                        snprintf(seed, sizeof seed, AISB_SEED_IN_SANDBOX ":%s", harness_sandbox_dir(p));
                        ck_assert_int_ge(strv_push(&v, "--seed"), 0);
                        ck_assert_int_ge(strv_push(&v, seed), 0);
                        ck_assert_int_ge(strv_push(&v, a), 0);
                } else
                        ck_assert_int_ge(strv_push(&v, a), 0);
        }
        return v;
}

/* The lines of v, sorted, each ended by a newline; v freed. */
static char *sorted_lines(char **v)
{
        strv_sort(v);
        buffer b = {};
        for (size_t i = 0; v && v[i]; i++)
                ck_assert_int_ge(buffer_printf(&b, "%s\n", v[i]), 0);
        strv_free(v);
        return buffer_steal(&b);
}

/* The body's mounts as "DEST ro|rw" lines, sorted; the home volume's too. */
static char *body_mounts(json_object *body, bool seed)
{
        char **v = NULL;
        json_object *mounts = get(body, "mounts");
        for (size_t i = 0; mounts && i < json_object_array_length(mounts); i++) {
                json_object *m = json_object_array_get_idx(mounts, i);
                bool ro = strstr(json_object_to_json_string(get(m, "options")), "\"ro\"") != NULL;
                char line[600];
                snprintf(line, sizeof line, "%s %s", json_object_get_string(get(m, "destination")), ro ? "ro" : "rw");
                ck_assert_int_ge(strv_push(&v, line), 0);
        }
        if (get(body, "volumes"))
                ck_assert_int_ge(strv_push(&v, AISB_SANDBOX_HOME " rw"), 0);
        if (seed && !strv_contains((const char *const *) v, AISB_SEED_IN_SANDBOX " ro"))
                ck_assert_int_ge(strv_push(&v, AISB_SEED_IN_SANDBOX " ro"), 0);
        return sorted_lines(v);
}

/* The pod's volumeMounts the same way, the seed's files as their directory. */
static char *pod_mounts(json_object *container)
{
        char **v = NULL;
        json_object *mounts = get(container, "volumeMounts");
        for (size_t i = 0; i < json_object_array_length(mounts); i++) {
                json_object *m = json_object_array_get_idx(mounts, i);
                const char *path = json_object_get_string(get(m, "mountPath"));
                char line[600];
                snprintf(line, sizeof line, "%s %s", startswith(path, AISB_SEED_IN_SANDBOX "/") ? AISB_SEED_IN_SANDBOX : path,
                         is_true(get(m, "readOnly")) ? "ro" : "rw");
                if (!strv_contains((const char *const *) v, line))
                        ck_assert_int_ge(strv_push(&v, line), 0);
        }
        return sorted_lines(v);
}

static json_object *doc_named(json_object *docs, const char *kind, const char *name)
{
        for (size_t i = 0; i < json_object_array_length(docs); i++) {
                json_object *d = json_object_array_get_idx(docs, i);
                if (streq(json_object_get_string(get(d, "kind")), kind) &&
                    (!name || streq(json_object_get_string(get(d, "metadata.name")), name)))
                        return d;
        }
        return NULL;
}

/* For each policy of the matrix, with podman (the project, its protected paths) and for a
 * cluster (scratch): the pod's variables, mounts and entrypoint argv are the plan's, and the
 * local plan's but for the facts a pod has of its own; the bridged settings are in a
 * ConfigMap the seed copies into the home, with the level in them (pi, codex) or in the
 * environment too (claude); what a pod cannot have is refused in one line that names it. */
START_TEST(test_renders_plan)
{
        const row *w = &rows[_i / 2];
        bool podman = _i % 2 == 0;
        aisb_policy *p = row_policy(w, podman);
        kube_options o = { .podman = podman };
        char *text = NULL;
        aisb_error *err = NULL;
        int r = kube_manifests(p, &o, &text, &err);
        if (w->refused) {
                ck_assert_msg(r == -EOPNOTSUPP, "%s: %d %s", w->name, r, aisb_error_message(err));
                ck_assert_msg(startswith(aisb_error_message(err), "kube: ") && strstr(aisb_error_message(err), w->refused) &&
                                      !strchr(aisb_error_message(err), '\n'),
                              "%s: '%s' lacks '%s'", w->name, aisb_error_message(err), w->refused);
                aisb_error_free(err);
                aisb_policy_free(p);
                return;
        }
        ck_assert_msg(r == 0, "%s: %s", w->name, aisb_error_message(err));
        ck_assert_ptr_null(strstr(text, "hunter2"));
        kube_plan k = {};
        ck_assert_int_eq(kube_plan_make(p, &o, &k, NULL), 0);
        plan_facts lf = {};
        run_plan local = {};
        ck_assert_int_eq(plan_gather(p, &(plan_gather_options) { .purpose = PLAN_DESCRIBE, .image = "x" }, &lf, NULL), 0);
        ck_assert_int_eq(plan_build(p, &lf, &local, NULL), 0);

        json_object *docs = documents(text);
        json_object *pod = doc_named(docs, "Pod", NULL);
        ck_assert_ptr_nonnull(pod);
        json_object *c = json_object_array_get_idx(get(pod, "spec.containers"), 0);
        const char *pod_name = json_object_get_string(get(pod, "metadata.name"));

        /* The variables: the plan's, each; a policy's by name from the Secret; and the local
         * plan's, but for the proxy's, which name the gate's pod. */
        size_t n = 0;
        for (size_t i = 0; k.plan.env[i]; i++) {
                char *name = strndup(k.plan.env[i], strcspn(k.plan.env[i], "="));
                char *got = pod_env(c, name), want[600];
                if (policy_env_named(p, name))
                        snprintf(want, sizeof want, "secret:%s/%s", pod_name, name);
                else
                        snprintf(want, sizeof want, "%s", k.plan.env[i] + strlen(name) + 1);
                ck_assert_msg(got && streq(got, want), "%s: %s is %s, not %s", w->name, name, got ? got : "absent", want);
                const char *there = env_of(local.env, name);
                ck_assert_msg(there, "%s: %s is not the local plan's", w->name, name);
                ck_assert_msg(is_proxy_variable(name) || streq(there, k.plan.env[i] + strlen(name) + 1),
                              "%s: %s differs from the local plan's", w->name, name);
                n++;
                free(name);
                free(got);
        }
        ck_assert_uint_eq(json_object_array_length(get(c, "env")), n);
        ck_assert_uint_eq(strv_length((const char *const *) local.env), n);
        for (const struct harness_env *q = harness_quiet_env; q->name; q++) {
                char *got = pod_env(c, q->name);
                ck_assert_msg(got && streq(got, q->value), "%s: %s", w->name, q->name);
                free(got);
        }
        if (k.gate) {
                char *proxy = pod_env(c, "HTTPS_PROXY");
                ck_assert_msg(strstr(proxy, podman ? "http://aisb-gate-" : "http://$(AISB_GATE_"), "%s", proxy);
                free(proxy);
        }

        /* The entrypoint's argv: the plan's, then the command; the local plan's as a pod is
         * told it. */
        json_object *cmd = get(c, "command");
        size_t n_argv = strv_length((const char *const *) k.plan.entrypoint);
        for (size_t i = 0; i < n_argv; i++)
                ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(cmd, i)), k.plan.entrypoint[i]);
        json_object *body_cmd = get(k.plan.body, "command");
        ck_assert_uint_eq(json_object_array_length(cmd), n_argv + json_object_array_length(body_cmd));
        char **want = expected_argv(p, &local, podman);
        ck_assert_uint_eq(strv_length((const char *const *) want), n_argv);
        for (size_t i = 0; i < n_argv; i++)
                ck_assert_msg(streq(want[i], k.plan.entrypoint[i]), "%s: argument %zu is %s, not %s", w->name, i,
                              k.plan.entrypoint[i], want[i]);
        strv_free(want);

        /* The mounts: the plan's body's, and the local plan's with the seed. */
        bool bridge = harness_bridge_applies(p);
        char *kube_body = body_mounts(k.plan.body, false), *local_body = body_mounts(local.body, bridge),
             *in_pod = pod_mounts(c);
        ck_assert_msg(streq(in_pod, kube_body), "%s: the pod mounts\n%s, the plan\n%s", w->name, in_pod, kube_body);
        ck_assert_msg(streq(kube_body, local_body), "%s: kube's plan mounts\n%s, the local\n%s", w->name, kube_body,
                      local_body);
        if (podman)
                ck_assert_msg(strstr(in_pod, AISB_PROJECT_DIR "/.git rw\n") && strstr(in_pod, AISB_PROJECT_DIR "/.vscode ro\n"),
                              "%s", in_pod);
        free(kube_body), free(local_body), free(in_pod);

        /* The bridged settings, in a ConfigMap, with the level. */
        char cm_name[128];
        snprintf(cm_name, sizeof cm_name, "%s-harness", pod_name);
        json_object *cm = doc_named(docs, "ConfigMap", cm_name);
        ck_assert_msg(!!cm == bridge, "%s: bridged settings %s", w->name, cm ? "where none apply" : "missing");
        harness_kind kind = harness_of_command(p);
        if (kind == HARNESS_PI || kind == HARNESS_CLAUDE) {
                const char *settings = json_object_get_string(json_object_object_get(get(cm, "data"), "settings.json"));
                ck_assert_ptr_nonnull(settings);
                ck_assert_msg(strstr(settings, kind == HARNESS_PI ? "\"defaultThinkingLevel\":\"high\""
                                                                  : "\"CLAUDE_CODE_EFFORT_LEVEL\":\"high\""),
                              "%s: %s", w->name, settings);
        } else if (kind == HARNESS_CODEX) {
                const char *config = json_object_get_string(json_object_object_get(get(cm, "data"), "config.toml"));
                ck_assert_msg(config && strstr(config, "model_reasoning_effort = \"high\""), "%s: %s", w->name,
                              config ? config : "(none)");
        }
        if (kind == HARNESS_CLAUDE) {
                char *level = pod_env(c, "CLAUDE_CODE_EFFORT_LEVEL");
                ck_assert_str_eq(level, "high");
                free(level);
        }
        check_pods(docs, &o);

        json_object_put(docs);
        run_plan_done(&local);
        plan_facts_done(&lf);
        kube_plan_done(&k);
        free(text);
        aisb_policy_free(p);
}
END_TEST

int main(void)
{
        /* The harness's host configuration the bridge reads: none, in a home of this run's. */
        char home[] = "/tmp/aisb-kube-home.XXXXXX";
        if (!mkdtemp(home))
                return EXIT_FAILURE;
        setenv("HOME", home, 1);
        static const char *const harness_dirs[] = { "PI_CODING_AGENT_DIR", "CLAUDE_CONFIG_DIR", "CODEX_HOME" };
        for (size_t i = 0; i < ELEMENTSOF(harness_dirs); i++)
                unsetenv(harness_dirs[i]);
        Suite *s = suite_create("kube");
        TCase *tc = suite_add_tests(s, "manifests", NULL, NULL, test_options_defaults, test_allow, test_none,
                                    test_project, test_sandbox, test_podman, test_netfilter, test_review, test_refused,
                                    test_names);
        tcase_add_loop_test(tc, test_renders_plan, 0, 2 * ELEMENTSOF(rows));
        tcase_set_timeout(tc, 60);
        int failed = unit_run(s) != EXIT_SUCCESS;
        rmdir(home);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
