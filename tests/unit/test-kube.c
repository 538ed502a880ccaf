/* SPDX-License-Identifier: MIT */
/* aisb kube: each shape against its golden file (image tags aside, which hash the
 * entrypoint binary), every pod spec against the "restricted" Pod Security Standard, the
 * refusals, no value of a variable in the output, names a cluster takes. */
#include <check.h>
#include <fcntl.h>
#include <regex.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "internal.h"
#include "kube.h"
#include "unit.h"
#include "fileio.h"

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
        ck_assert(mkdir("/tmp/aisb-kube-golden", 0755) == 0 || errno == EEXIST);
        ck_assert(mkdir(GOLDEN_PROJECT, 0755) == 0 || errno == EEXIST);
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

static void expect_golden(const char *text, const char *name)
{
        char *got = untagged(text), *want = golden(name);
        squeeze_empty(got);
        squeeze_empty(want);
        if (!streq(got, want)) {
                char path[] = "/tmp/aisb-kube-got.XXXXXX";
                int fd = mkstemp(path);
                if (fd >= 0) {
                        (void) write_all(fd, got, strlen(got));
                        close(fd);
                }
                ck_abort_msg("%s differs; what was made is in %s", name, path);
        }
        free(got);
        free(want);
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
        char *text = manifests(p, &o);
        ck_assert_ptr_null(strstr(text, "value-never-printed"));
        expect_golden(text, "allow.json");
        json_object *docs = documents(text);
        check_all_pods(docs);
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
        char *text = manifests(p, &o);
        expect_golden(text, "none.json");
        json_object *docs = documents(text);
        check_all_pods(docs);
        /* No gate, nothing out. */
        ck_assert_uint_eq(json_object_array_length(docs), 2);
        json_object *np = json_object_array_get_idx(docs, 0);
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
        char *text = manifests(p, &o);
        expect_golden(text, "project.json");
        json_object *docs = documents(text);
        check_all_pods(docs);
        json_object_put(docs);
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
        char *pod_text = manifests(p, &pod_o), *text = manifests(p, &sandbox_o);
        expect_golden(text, "sandbox.json");
        json_object *pods = documents(pod_text), *docs = documents(text);
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
        char *text = manifests(p, &o);
        expect_golden(text, "podman.json");
        json_object *docs = documents(text);
        podman_target = true;
        check_all_pods(docs);
        podman_target = false;
        ck_assert_uint_eq(json_object_array_length(docs), 3); /* ConfigMap, Deployment, Pod */
        json_object *pod = json_object_array_get_idx(docs, 2);
        ck_assert_str_eq(json_object_get_string(get(pod, "kind")), "Pod");
        ck_assert_str_eq(json_object_get_string(get(json_object_array_get_idx(get(pod, "spec.volumes"), 0), "hostPath.path")),
                         dir);
        ck_assert_ptr_null(get(json_object_array_get_idx(get(pod, "spec.containers"), 0), "resources"));
        json_object_put(docs);
        free(text);
        o.parts = KUBE_PART_GATE;
        text = manifests(p, &o);
        docs = documents(text);
        ck_assert_uint_eq(json_object_array_length(docs), 2);
        json_object_put(docs);
        free(text);
        o.parts = KUBE_PART_SANDBOX;
        text = manifests(p, &o);
        docs = documents(text);
        ck_assert_uint_eq(json_object_array_length(docs), 1);
        json_object_put(docs);
        free(text);
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
        char *text = manifests(p, &o);
        expect_golden(text, "netfilter.json");
        json_object *docs = documents(text);
        netfilter_variant = true;
        check_all_pods(docs);
        netfilter_variant = false;
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
        char dir[] = "/tmp/aisb-kube.XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        static const char *const names[] = { "__Weird__Name--", "-", "a.b.c", "UPPER", "x_y_z_", "0123456789abcdefghijklmnopqrstuvwxyz0123456789" };
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

int main(void)
{
        Suite *s = suite_create("kube");
        TCase *tc = tcase_create("manifests");
        tcase_add_test(tc, test_options_defaults);
        tcase_add_test(tc, test_allow);
        tcase_add_test(tc, test_none);
        tcase_add_test(tc, test_project);
        tcase_add_test(tc, test_sandbox);
        tcase_add_test(tc, test_podman);
        tcase_add_test(tc, test_netfilter);
        tcase_add_test(tc, test_review);
        tcase_add_test(tc, test_refused);
        tcase_add_test(tc, test_names);
        suite_add_tcase(s, tc);
        int failed = unit_run(s) != EXIT_SUCCESS;
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
