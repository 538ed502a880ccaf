/* SPDX-License-Identifier: MIT */
/*
 * A run's decisions as one value (plan.h): the facts gathered, then the plan built from the
 * policy and the facts alone, then rendered by whoever needs to see it.
 */
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "createpatch.h"
#include "gate-squid.h"
#include "harness.h"
#include "jsonutil.h"
#include "plan.h"
#include "podman.h"

#define REDACTED "<redacted>"

void plan_facts_done(plan_facts *f)
{
        free(f->image);
        free(f->policy_hash);
        image_facts_done(&f->built);
        free(f->name);
        project_settings_done(&f->settings);
        free(f->settings_copy);
        harness_facts_done(&f->harness);
        protect_plan_done(&f->protect);
        network_inputs_done(&f->net);
        *f = (plan_facts) {};
}

/* The environment held secret values (--env) and the gate's key: wiped before it goes. */
static void strv_free_erase(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                explicit_bzero(v[i], strlen(v[i]));
        strv_free(v);
}

/* What plan_render makes, freed (the secret values wiped). */
static void plan_rendered_done(run_plan *plan)
{
        sandbox_network_done(&plan->net);
        strv_free_erase(plan->env);
        strv_free(plan->env_shown);
        strv_free(plan->entrypoint);
        if (plan->body)
                json_wipe_strings(plan->body);
        json_object_put(plan->body);
        json_object_put(plan->shown);
        strv_free(plan->patched);
        free(plan->patch_warning);
        plan->patch_warning = NULL;
        plan->net = (sandbox_network) {};
        plan->env = plan->env_shown = plan->entrypoint = plan->patched = NULL;
        plan->body = plan->shown = NULL;
}

void run_plan_done(run_plan *plan)
{
        free(plan->image);
        free(plan->name);
        free(plan->policy_hash);
        json_object_put(plan->volume_labels);
        plan_rendered_done(plan);
        *plan = (run_plan) {};
}

/* A name of the project's and a random part: two runs of one project are two sandboxes. A
 * description shows where the random part goes. */
static int sandbox_name(const aisb_policy *p, bool random_part, char **ret)
{
        char base[33], tail[16] = "XXXXXXXX";
        project_short_name(p->project, base, sizeof base);
        if (random_part) {
                uint32_t random = 0;
                if (getrandom(&random, sizeof random, 0) != sizeof random)
                        random = (uint32_t) getpid() ^ (uint32_t) time(NULL);
                snprintf(tail, sizeof tail, "%08x", random);
        }
        return asprintf(ret, "aisb-%s-%s", base, tail) < 0 ? -ENOMEM : 0;
}

/* What the project directory is: the working directory itself when the project is it (not
 * what its path leads to by now: a sandbox may have swapped a directory on that path), else
 * what the path set for it leads to. */
static void project_identity(const aisb_policy *p, plan_facts *f)
{
        struct stat st;
        if (!p->project || stat(p->project_is_cwd ? "." : p->project, &st) < 0)
                return;
        f->have_project_id = true;
        f->project_dev = (unsigned long long) st.st_dev;
        f->project_ino = (unsigned long long) st.st_ino;
}

/* What a run's effects will add, as stand-ins, so that a description shows the plan a run
 * applies: the gate's key when the gate is the run's own (it holds secrets), its CA when it
 * intercepts TLS (the sandbox's trust is then the gate's), the bridge's files of an
 * ephemeral home. */
static void describe_run_effects(const aisb_policy *p, const plan_gather_options *o, plan_facts *f)
{
        if (plan_needs_gate(p, f)) {
                gate_request req = plan_gate_request(p, f);
                f->gate_hash = "(the gate's)";
                if (req.n_secrets || req.ask)
                        f->gate_key = REDACTED;
                if (gate_squid_intercepts(req.list, req.n_secrets))
                        f->gate_ca = "(the gate's CA certificate, in the run's directory)";
        }
        if (!o->network_only && p->ephemeral_home && f->harness.bridges)
                f->seed_dir = "(the harness's bridged configuration, in the run's directory)";
        if (f->reviews) {
                f->review_upper = "(the run's review layer)/upper";
                f->review_work = "(the run's review layer)/work";
        }
}

bool plan_asks(const aisb_policy *p, bool terminal)
{
        return p->ask == ASK_TTY || (p->ask == ASK_AUTO && terminal);
}

bool plan_reviews(const aisb_policy *p)
{
        return p->review && p->project && !p->project_read_only;
}

/* Before anything is built or started for a project that is not what it seems, or with a
 * patch this sandbox could rewrite. */
static int plan_check(const aisb_policy *p, aisb_error **err)
{
        if (p->review && !p->project)
                return aisb_error_set(err, -EINVAL, "--review keeps the agent's changes to the project for review: "
                                                    "it needs one (drop --no-cwd or --review)");
        /* What root writes in the layer belongs to a subordinate id, not the user: nothing to
         * apply. */
        if (p->review && p->keep_root)
                return aisb_error_set(err, -EINVAL, "--review with --insecure-keep-root: what root writes in the "
                                                    "layer is not yours to apply; drop one of them");
        if (p->project && !p->project_read_only) {
                int k = project_check_home(p->project, err);
                if (k >= 0)
                        k = project_check_reached(p->project, err);
                if (k < 0)
                        return k;
        }
        if (!p->create_patch_path)
                return 0;
        /* Wherever the keys were set from: never a patch this sandbox could rewrite. */
        _cleanup_free_ const char **writable = calloc(p->n_mounts + 2, sizeof *writable);
        if (!writable)
                return error_oom(err);
        size_t n = 0;
        if (p->project && !p->project_read_only)
                writable[n++] = p->project;
        for (size_t i = 0; i < p->n_mounts; i++)
                if (!p->mounts[i].read_only)
                        writable[n++] = p->mounts[i].source;
        return create_patch_check_place(p->create_patch_path, writable, err);
}

int plan_gather(const aisb_policy *p, const plan_gather_options *o, plan_facts *ret, aisb_error **err)
{
        _cleanup_(plan_facts_done) plan_facts f = { .podman_major = o->podman_major, .uid = (unsigned) getuid(),
                                                    .gid = (unsigned) getgid(), .pid = (long) getpid(),
                                                    .terminal = o->terminal, .reviews = plan_reviews(p),
                                                    .net_name = policy_net_name(p->net), .command = policy_command(p) };
        bool run = o->purpose == PLAN_RUN;
        /* The harness's part, decided the same way for every view (harness.c); a run's checks
         * begin with its level. */
        int r = harness_gather(p, o->purpose != PLAN_DESCRIBE, !o->network_only, &f.harness, err);
        if (r < 0)
                return r;
        if (o->purpose != PLAN_DESCRIBE) {
                r = plan_check(p, err);
                if (r >= 0)
                        r = image_gather_run(p, &f.built, err);
                if (r < 0)
                        return r;
                f.image = strdup(f.built.tag);
        } else
                f.image = strdup(o->image ? o->image : "(the policy's image)");
        if (!f.image || sandbox_name(p, run, &f.name) < 0)
                return error_oom(err);
        bool project_rw = p->project && !p->project_read_only;
        /* The project's settings, read once without trusting the project: the allowlist comes
         * from this snapshot, and the sandbox sees a read-only copy of it. */
        if (project_rw) {
                /* A review run's mount point for the copy is made in its layer, not the project. */
                r = project_settings_read(p->project, run && !f.reviews, &f.settings, err);
                if (r >= 0 && run)
                        r = run_dir_write_settings(o->run_dir, "ai-sandbox", &f.settings, &f.settings_copy, err);
                else if (r >= 0 && !(f.settings_copy = strdup("(the run's copy of " PROJECT_SETTINGS_DIR ")")))
                        r = error_oom(err);
                if (r < 0)
                        return r;
        }
        if (project_rw && p->protect && p->protect[0] && !o->network_only) {
                r = protect_plan_make(p->project, p->project_is_cwd, (const char *const *) p->protect, f.uid,
                                      &f.protect, err);
                if (r < 0)
                        return r;
        }
        r = network_gather(p, network_backend_for(p, f.podman_major), &f.settings, &f.net, err);
        if (r < 0)
                return r;
        /* Over the same snapshot the allowlist came from: the labels and the session log name
         * the policy that was enforced. */
        r = policy_hash(p, f.image, &f.settings, &f.policy_hash);
        if (r < 0)
                return r == -ENOMEM ? error_oom(err) : aisb_error_set(err, r, "cannot hash the policy: %s", strerror(-r));
        project_identity(p, &f);
        if (!run)
                describe_run_effects(p, o, &f);
        *ret = f;
        f = (plan_facts) {};
        return 0;
}

bool plan_needs_gate(const aisb_policy *p, const plan_facts *f)
{
        return network_needs_gate(p, &f->net);
}

gate_request plan_gate_request(const aisb_policy *p, const plan_facts *f)
{
        return (gate_request) { .list = &f->net.list, .add_hosts = (const char *const *) p->add_hosts,
                                .secrets = p->secrets, .n_secrets = p->n_secrets,
                                .ask = plan_asks(p, f->terminal),
                                .idle_stop_s = p->gate_idle_stop_s, .image = f->built.gate };
}

static int push_env(char ***env, const char *name, const char *value)
{
        _cleanup_free_ char *kv = NULL;
        if (asprintf(&kv, "%s=%s", name, value) < 0)
                return -ENOMEM;
        return strv_push(env, kv);
}

int plan_proxy_env(const allowlist *l, const char *url, bool has_key, char ***env)
{
        static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy" };
        int r = 0;
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(names); i++)
                r = push_env(env, names[i], url);
        /* Address entries are reached directly, not through the proxy. */
        _cleanup_(buffer_free) buffer no_proxy = {};
        r = r < 0 ? r : buffer_printf(&no_proxy, "localhost,127.0.0.1,::1");
        for (size_t i = 0; r >= 0 && i < l->n; i++)
                if (l->entries[i].kind == ALLOW_ADDRESS)
                        r = buffer_printf(&no_proxy, ",%s", l->entries[i].host);
        r = r < 0 ? r : push_env(env, "NO_PROXY", no_proxy.data);
        r = r < 0 ? r : push_env(env, "no_proxy", no_proxy.data);
        /* git asks libcurl for any proxy authentication, which waits for a challenge the gate
         * does not send: basic, sent at once, as the other clients do. */
        if (r >= 0 && has_key)
                r = push_env(env, "GIT_HTTP_PROXY_AUTHMETHOD", "basic");
        /* Node ignores the proxy variables unless told (pi, codex and claude run on it), and
         * then warns on every start that the agent doing it is experimental: the command's
         * output stays the command's. A NODE_OPTIONS of the user's (--env) replaces this. */
        r = r < 0 ? r : push_env(env, "NODE_USE_ENV_PROXY", "1");
        return r < 0 ? r : push_env(env, "NODE_OPTIONS", "--disable-warning=UNDICI-EHPA");
}

static int push_expect(char ***v, const char *path, unsigned long long dev, unsigned long long ino)
{
        _cleanup_free_ char *arg = NULL;
        if (asprintf(&arg, "%s:%llu:%llu", path, dev, ino) < 0)
                return -ENOMEM;
        return strv_push(v, arg);
}

static int push_pair(char ***v, const char *option, const char *value)
{
        int r = strv_push(v, option);
        return r < 0 ? r : strv_push(v, value);
}

int plan_entrypoint_argv(const entrypoint_spec *s, char ***ret)
{
        _cleanup_strv_free_ char **v = NULL;
        char uid[32], gid[32];
        snprintf(uid, sizeof uid, "%u", s->uid);
        snprintf(gid, sizeof gid, "%u", s->gid);
        int r = strv_push(&v, AISB_ENTRYPOINT_IN_IMAGE);
        if (r >= 0 && s->keep_root)
                r = strv_push(&v, "--keep-root");
        else if (r >= 0 && !s->no_ids) {
                r = push_pair(&v, "--uid", uid);
                r = r < 0 ? r : push_pair(&v, "--gid", gid);
        }
        /* --ruleset-only follows the mode (--net MODE), the destinations after it. */
        for (size_t i = 0; r >= 0 && s->net_args && s->net_args[i]; i++) {
                r = strv_push(&v, s->net_args[i]);
                if (r >= 0 && i == 1 && s->ruleset_only)
                        r = strv_push(&v, "--ruleset-only");
        }
        if (r >= 0 && s->allow_unenforced)
                r = strv_push(&v, "--allow-unenforced");
        for (size_t i = 0; r >= 0 && s->expect && s->expect[i]; i++)
                r = push_pair(&v, "--expect-mount", s->expect[i]);
        for (size_t i = 0; r >= 0 && s->expect_file && s->expect_file[i]; i++)
                r = push_pair(&v, "--expect-file", s->expect_file[i]);
        if (r >= 0 && s->ca_bundle)
                r = push_pair(&v, "--ca-bundle", AISB_GATE_CA_IN_SANDBOX);
        if (r >= 0 && s->seed_dest) {
                _cleanup_free_ char *seed = NULL;
                r = asprintf(&seed, AISB_SEED_IN_SANDBOX ":%s", s->seed_dest) < 0 ? -ENOMEM : 0;
                r = r < 0 ? r : push_pair(&v, "--seed", seed);
        }
        if (r >= 0 && !s->ruleset_only)
                r = strv_push(&v, "--");
        if (r < 0)
                return r;
        *ret = steal_pointer(&v);
        return 0;
}

/* Every variable the sandbox gets, and what may be shown of each: nothing of the host's
 * environment except what the policy holds. */
/* A variable the sandbox gets, and what is shown of it. */
static int push_env_both(run_plan *plan, const char *name, const char *value, const char *shown)
{
        int r = push_env(&plan->env, name, value);
        return r < 0 ? r : push_env(&plan->env_shown, name, shown);
}

static int plan_env(const aisb_policy *p, const plan_facts *f, run_plan *plan)
{
        int r = push_env(&plan->env, "HOME", AISB_SANDBOX_HOME);
        if (r >= 0 && plan->net.proxy_host) {
                const sandbox_network *n = &plan->net;
                _cleanup_free_ char *url = NULL, *shown = NULL;
                if (n->proxy_key ? asprintf(&url, "http://" GATE_CLIENT_USER ":%s@%s:%u", n->proxy_key, n->proxy_host,
                                            n->proxy_port) < 0 ||
                                           asprintf(&shown, "http://" GATE_CLIENT_USER ":" REDACTED "@%s:%u",
                                                    n->proxy_host, n->proxy_port) < 0
                                 : asprintf(&url, "http://%s:%u", n->proxy_host, n->proxy_port) < 0 ||
                                           !(shown = strdup(url)))
                        return -ENOMEM;
                r = plan_proxy_env(&f->net.list, url, n->proxy_key, &plan->env);
                r = r < 0 ? r : plan_proxy_env(&f->net.list, shown, n->proxy_key, &plan->env_shown);
                explicit_bzero(url, strlen(url));
        }
        if (r >= 0)
                r = push_env(&plan->env_shown, "HOME", AISB_SANDBOX_HOME);
        for (size_t i = 0; r >= 0 && i < f->harness.n_quiet; i++)
                r = push_env_both(plan, f->harness.quiet[i]->name, f->harness.quiet[i]->value, f->harness.quiet[i]->value);
        /* The reasoning level, for a harness that takes it from its environment. */
        const char *thinking = f->harness.thinking_env;
        if (r >= 0 && thinking)
                r = push_env_both(plan, thinking, p->thinking, p->thinking);
        /* The gate's CA trusted by the usual clients, for this run. */
        for (size_t i = 0; r >= 0 && f->gate_ca && entrypoint_trust_env[i]; i++)
                r = push_env_both(plan, entrypoint_trust_env[i], AISB_CA_BUNDLE_IN_SANDBOX, AISB_CA_BUNDLE_IN_SANDBOX);
        /* A secret is the gate's: the sandbox holds its placeholder. */
        for (size_t i = 0; r >= 0 && i < p->n_secrets; i++)
                r = push_env_both(plan, p->secrets[i].name, p->secrets[i].placeholder, p->secrets[i].placeholder);
        for (size_t i = 0; r >= 0 && i < p->n_env; i++)
                r = push_env_both(plan, p->env[i].name, p->env[i].value, REDACTED);
        return r;
}

/* The entrypoint's argv: the network's arguments, and every bind mount the host named by a
 * path someone else might swap meanwhile, to be found as it was. */
static int plan_entrypoint(const aisb_policy *p, const plan_facts *f, run_plan *plan)
{
        _cleanup_strv_free_ char **expect = NULL;
        int r = 0;
        /* A review run's /project is the overlay, whose root is the layer's: the project is
         * checked on the host, and nothing reaches it from the sandbox. */
        const bool review = f->reviews;
        if (f->have_project_id && p->project && !review)
                r = push_expect(&expect, AISB_PROJECT_DIR, f->project_dev, f->project_ino);
        /* A review run's: a file at the project's top, by its inode and change time (the overlay
         * shows a file's own, on a device of the overlay's): a directory swapped in for the
         * project while podman mounted it does not hold it. */
        _cleanup_strv_free_ char **expect_file = NULL;
        if (review && f->review_anchor) {
                _cleanup_free_ char *arg = NULL;
                if (asprintf(&arg, "%s:%llu:%lld", f->review_anchor, f->review_anchor_ino, f->review_anchor_ctime_ns) < 0)
                        return -ENOMEM;
                r = r < 0 ? r : strv_push(&expect_file, arg);
        }
        for (size_t i = 0; r >= 0 && i < p->n_mounts; i++)
                r = push_expect(&expect, p->mounts[i].destination, p->mounts[i].dev, p->mounts[i].ino);
        for (size_t i = 0; r >= 0 && i < f->protect.n_mounts; i++)
                if (!review || f->protect.mounts[i].read_only)
                        r = push_expect(&expect, f->protect.mounts[i].destination, f->protect.mounts[i].dev,
                                f->protect.mounts[i].ino);
        if (r < 0)
                return r;
        entrypoint_spec s = { .keep_root = p->keep_root, .uid = f->uid, .gid = f->gid,
                              .net_args = (const char *const *) plan->net.entrypoint_args,
                              .allow_unenforced = p->allow_unenforced, .expect = (const char *const *) expect,
                              .expect_file = (const char *const *) expect_file, .ca_bundle = f->gate_ca,
                              .seed_dest = f->seed_dir ? f->harness.sandbox_dir : NULL };
        return plan_entrypoint_argv(&s, &plan->entrypoint);
}

/* --unsafe-create-patch, applied to the request and to what is shown of it, whose
 * environment values stay redacted. */
static int plan_create_patch(const aisb_policy *p, run_plan *plan, aisb_error **err)
{
        int r = create_patch_apply(plan->body, p->create_patch, &plan->patched);
        _cleanup_strv_free_ char **ignored = NULL;
        r = r < 0 ? r : create_patch_apply(plan->shown, p->create_patch, &ignored);
        r = r < 0 ? r : create_patch_warning(plan->patched, &plan->patch_warning);
        json_object *env;
        if (r >= 0 && json_object_object_get_ex(plan->shown, "env", &env) && json_object_is_type(env, json_type_object)) {
                json_object_object_foreach(env, key, value) {
                        (void) value;
                        if (r >= 0)
                                r = json_add_string(env, key, REDACTED);
                }
        }
        if (r == -ENOMEM)
                return error_oom(err);
        return r < 0 ? aisb_error_set(err, r, "--unsafe-create-patch: %s", strerror(-r)) : 0;
}

/* The home volume's labels (for aisb clean and ps); NULL when out of memory. */
static json_object *volume_labels(const aisb_policy *p)
{
        /* Its label tells "aisb clean" it from the user's own volumes; which project it
         * belongs to, for ps and clean (empty: shared or scratch). */
        json_object *labels = json_object_new_object();
        int r = json_add_string(labels, AISB_LABEL_PREFIX "managed", "true");
        r = r < 0 ? r : json_add_string(labels, AISB_LABEL_PREFIX "home", "true");
        r = r < 0 ? r : json_add_string(labels, AISB_LABEL_PREFIX "project",
                                        p->home_volume_chosen || !p->project ? "" : p->project);
        if (r < 0) {
                json_object_put(labels);
                return NULL;
        }
        return labels;
}

const plan_step_info plan_steps[_PLAN_STEP_MAX] = {
        [PLAN_STEP_IMAGE] = { "image", "the image, built from its context when its tag is missing" },
        [PLAN_STEP_VOLUME] = { "volume", "the home volume, created with aisb's labels when missing" },
        [PLAN_STEP_NETWORK] = { "network", "the sandbox's network: its mode and backend" },
        [PLAN_STEP_GATE] = { "gate", "the gate serves the run: its port, key and CA", 0, PLAN_SLOT_GATE },
        [PLAN_STEP_BRIDGE] = { "bridge", "the home's reset, and the harness's configuration bridged into it",
                               0, PLAN_SLOT_SEED },
        [PLAN_STEP_KEEP] = { "keep", "the run's review layer, or its record for aisb undo", 0, PLAN_SLOT_LAYER },
        [PLAN_STEP_PROTECT] = { "protect", "the protected paths said; after the run, what appeared there moved aside" },
        [PLAN_STEP_CREATE] = { "create", "the create body rendered from the slots, and sent; the sandbox removed at the end",
                               PLAN_SLOT_GATE | PLAN_SLOT_SEED | PLAN_SLOT_LAYER, PLAN_SLOT_SANDBOX },
        [PLAN_STEP_ATTACH] = { "attach", "the sandbox's streams, before it starts", PLAN_SLOT_SANDBOX, PLAN_SLOT_STREAM },
        [PLAN_STEP_START] = { "start", "the sandbox started, sized to the terminal", PLAN_SLOT_SANDBOX },
        [PLAN_STEP_STREAM] = { "stream", "the terminal or the streams, to the end", PLAN_SLOT_STREAM },
        [PLAN_STEP_WAIT] = { "wait", "the command's exit code", PLAN_SLOT_SANDBOX },
};

/* The steps the policy's run applies, in order. The ends run in reverse: the sandbox is
 * removed before the protected paths are swept, then the layer or record is ended, then the
 * gate reports and is given back. */
static void plan_steps_make(const aisb_policy *p, run_plan *plan)
{
        bool project_rw = p->project && !p->project_read_only;
        plan->steps[plan->n_steps++] = PLAN_STEP_IMAGE;
        if (plan->home_volume)
                plan->steps[plan->n_steps++] = PLAN_STEP_VOLUME;
        plan->steps[plan->n_steps++] = PLAN_STEP_NETWORK;
        if (plan->needs_gate)
                plan->steps[plan->n_steps++] = PLAN_STEP_GATE;
        plan->steps[plan->n_steps++] = PLAN_STEP_BRIDGE;
        if (project_rw)
                plan->steps[plan->n_steps++] = PLAN_STEP_KEEP;
        if (project_rw && p->protect && p->protect[0])
                plan->steps[plan->n_steps++] = PLAN_STEP_PROTECT;
        for (plan_step s = PLAN_STEP_CREATE; s <= PLAN_STEP_WAIT; s++)
                plan->steps[plan->n_steps++] = s;
}

int plan_render(const aisb_policy *p, const plan_facts *f, run_plan *plan, aisb_error **err)
{
        plan_rendered_done(plan);
        /* The network with the gate's port: the real one once it serves the run, else where
         * a description shows it. */
        network_inputs in = f->net;
        in.gate_port = plan->needs_gate && !f->gate_port ? NETWORK_PLACEHOLDER_GATE_PORT : f->gate_port;
        in.gate_key = f->gate_key;
        int r = network_plan(p, network_backend_for(p, f->podman_major), &in, &plan->net, err);
        if (r < 0)
                return r;
        if (plan_env(p, f, plan) < 0 || plan_entrypoint(p, f, plan) < 0)
                return error_oom(err);
        run_mounts rm = { .settings_copy = f->settings_copy, .seed_dir = f->seed_dir, .agents_dir = f->harness.agents_dir,
                          .harness = f->harness.mounts, .n_harness = f->harness.n_mounts, .gate_ca = f->gate_ca, .protect = &f->protect,
                          .review_upper = f->reviews ? f->review_upper : NULL,
                          .review_work = f->reviews ? f->review_work : NULL };
        container_spec spec = { .policy = p, .net = &plan->net, .env = (const char *const *) plan->env,
                                .entrypoint = (const char *const *) plan->entrypoint, .mounts = &rm,
                                .image = plan->image, .name = plan->name, .gate_hash = f->gate_hash,
                                .policy_hash = plan->policy_hash, .command = f->command,
                                .net_name = f->net_name, .pid = f->pid,
                                .terminal = f->terminal };
        r = container_create_body(&spec, &plan->body);
        spec.env = (const char *const *) plan->env_shown;
        r = r < 0 ? r : container_create_body(&spec, &plan->shown);
        if (r < 0)
                return r == -ENOMEM ? error_oom(err)
                                    : aisb_error_set(err, r, "cannot build the create request: %s", strerror(-r));
        return p->create_patch ? plan_create_patch(p, plan, err) : 0;
}

int plan_build(const aisb_policy *p, const plan_facts *f, run_plan *ret, aisb_error **err)
{
        _cleanup_(run_plan_done) run_plan plan = {};
        plan.image = strdup(f->image);
        plan.name = strdup(f->name);
        plan.policy_hash = strdup(f->policy_hash);
        if (!p->ephemeral_home) {
                plan.home_volume = p->home_volume;
                plan.volume_labels = volume_labels(p);
        }
        if (!plan.image || !plan.name || !plan.policy_hash || (plan.home_volume && !plan.volume_labels))
                return error_oom(err);
        plan.needs_gate = plan_needs_gate(p, f);
        plan_steps_make(p, &plan);
        int r = plan_render(p, f, &plan, err);
        if (r < 0)
                return r;
        *ret = plan;
        plan = (run_plan) {};
        return 0;
}


/* The variable names of NAME=VALUE strings, as a JSON array. */
static json_object *env_names(char *const *env)
{
        json_object *a = json_object_new_array();
        for (size_t i = 0; a && env && env[i]; i++) {
                _cleanup_free_ char *name = strndup(env[i], strcspn(env[i], "="));
                if (!name || json_append_string(a, name) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        }
        return a;
}

int plan_to_json(const run_plan *plan, const plan_facts *f, json_object **ret)
{
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *net = json_object_new_object(), *protect = json_object_new_array();
        int r = json_add_string(o, "image", plan->image);
        r = r < 0 ? r : json_add_string(o, "name", plan->name);
        r = r < 0 ? r : json_add_string(net, "mode", f->net_name);
        r = r < 0 ? r : json_add_string(net, "nsmode", plan->net.nsmode);
        r = r < 0 ? r : json_add_bool(net, "host_loopback", plan->net.host_loopback);
        r = r < 0 ? r : json_add_bool(net, "gate", plan->needs_gate);
        if (r >= 0 && plan->net.proxy_host) {
                json_object *proxy = json_object_new_object();
                r = json_add_string(proxy, "host", plan->net.proxy_host);
                r = r < 0 ? r : json_add_int64(proxy, "port", plan->net.proxy_port);
                r = r < 0 ? r : json_add_bool(proxy, "key", plan->net.proxy_key);
                r = r < 0 ? json_object_put(proxy), r : json_add(net, "proxy", proxy);
        }
        r = r < 0 ? json_object_put(net), r : json_add(o, "network", net);
        for (size_t i = 0; r >= 0 && i < f->protect.n_mounts; i++) {
                json_object *m = json_object_new_object();
                r = json_add_string(m, "path", f->protect.mounts[i].destination);
                r = r < 0 ? r : json_add_bool(m, "read_only", f->protect.mounts[i].read_only);
                r = r < 0 ? json_object_put(m), r : json_append(protect, m);
        }
        r = r < 0 ? json_object_put(protect), r : json_add(o, "protected", protect);
        r = r < 0 ? r : json_add(o, "env", env_names(plan->env_shown));
        r = r < 0 ? r : json_add(o, "entrypoint", json_string_array((const char *const *) plan->entrypoint));
        json_object *steps = json_object_new_array();
        for (size_t i = 0; r >= 0 && i < plan->n_steps; i++) {
                json_object *step = json_object_new_object();
                r = json_add_string(step, "step", plan_steps[plan->steps[i]].name);
                r = r < 0 ? r : json_add_string(step, "what", plan_steps[plan->steps[i]].what);
                r = r < 0 ? json_object_put(step), r : json_append(steps, step);
        }
        r = r < 0 ? json_object_put(steps), r : json_add(o, "steps", steps);
        r = r < 0 ? r : json_add(o, "create", json_object_get(plan->shown));
        if (r < 0)
                return r;
        *ret = steal_pointer(&o);
        return 0;
}


/* ---- each step as the dry run shows it: its requests, or a comment line ---- */

typedef struct step_view {
        const aisb_policy *p;
        const run_plan *plan;
        const plan_facts *f;
        plan_step step;
} step_view;

/* A comment line asprintf made (printed < 0: none, and text is not ours to free). */
static int push_comment(char ***v, int printed, char *text)
{
        if (printed < 0)
                return -ENOMEM;
        _cleanup_free_ char *t = text;
        return strv_push(v, t);
}

static int show_default(const step_view *s, char ***v)
{
        char *text = NULL;
        int r = asprintf(&text, "# %s: %s\n", plan_steps[s->step].name, plan_steps[s->step].what);
        return push_comment(v, r, text);
}

static int show_image(const step_view *s, char ***v)
{
        _cleanup_strv_free_ char **image = NULL;
        int r = image_requests(&s->f->built, &image);
        for (size_t j = 0; r >= 0 && image[j]; j++)
                r = strv_push(v, image[j]);
        return r;
}

static int show_volume(const step_view *s, char ***v)
{
        _cleanup_json_ json_object *body = json_object_new_object();
        int r = json_add_string(body, "Name", s->plan->home_volume);
        r = r < 0 ? r : json_add(body, "Labels", json_object_get(s->plan->volume_labels));
        r = r < 0 ? r : podman_call_push(v, PODMAN_VOLUME_EXISTS, s->plan->home_volume, NULL);
        return r < 0 ? r : podman_call_push(v, PODMAN_VOLUME_CREATE, NULL,
                                            json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
}

static int show_network(const step_view *s, char ***v)
{
        char *text = NULL;
        const sandbox_network *n = &s->plan->net;
        int r = asprintf(&text, "# network: %s%s%s\n", s->f->net_name, n->backend ? " through " : "",
                         n->backend ? n->nsmode : "");
        return push_comment(v, r, text);
}

static int show_gate(const step_view *s, char ***v)
{
        char *text = NULL;
        int r = asprintf(&text, "# the gate: squid on the host's loopback for this allowlist (%s), its "
                         "port chosen when it starts (%u here)\n",
                         s->p->secrets ? "a gate of this run's own: it holds the secrets" : "shared by runs",
                         NETWORK_PLACEHOLDER_GATE_PORT);
        return push_comment(v, r, text);
}

static int show_bridge(const step_view *s, char ***v)
{
        char *text = NULL;
        int r = asprintf(&text, "# bridge: %s\n",
                         !s->f->harness.bridges ? "the home's reset (no harness configuration bridged)"
                         : s->p->ephemeral_home ? "the harness's configuration, policy on top, into the run's "
                                                  "directory, which the entrypoint copies into the fresh home"
                                                : "the home's reset, and the harness's configuration merged per key "
                                                  "into it, policy on top");
        return push_comment(v, r, text);
}

static int show_keep(const step_view *s, char ***v)
{
        char *text = NULL;
        int r = asprintf(&text, "# keep: %s\n",
                         s->f->reviews ? "the run's review layer, which /project shows over the project"
                                       : "a record of the project for aisb undo");
        return push_comment(v, r, text);
}

static int show_protect(const step_view *s, char ***v)
{
        char *text = NULL;
        size_t n = s->f->protect.n_mounts;
        int r = asprintf(&text, "# protect: %zu path%s read-only in the sandbox; after the run, what "
                         "appeared where git and editors look is moved aside\n",
                         n, n == 1 ? "" : "s");
        return push_comment(v, r, text);
}

static int show_create(const step_view *s, char ***v)
{
        return podman_call_push(v, PODMAN_CONTAINER_CREATE, NULL,
                                json_object_to_json_string_ext(s->plan->shown,
                                                               JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
}

static int show_attach(const step_view *s, char ***v)
{
        return podman_call_push(v, PODMAN_CONTAINER_ATTACH, s->plan->name, "(hijacked: Connection: Upgrade, Upgrade: tcp)");
}

static int show_start(const step_view *s, char ***v)
{
        return podman_call_push(v, PODMAN_CONTAINER_START, s->plan->name, NULL);
}

static int show_wait(const step_view *s, char ***v)
{
        return podman_call_push(v, PODMAN_CONTAINER_WAIT, s->plan->name, NULL);
}

static int (*const step_show[_PLAN_STEP_MAX])(const step_view *s, char ***v) = {
        [PLAN_STEP_IMAGE] = show_image,     [PLAN_STEP_VOLUME] = show_volume, [PLAN_STEP_NETWORK] = show_network,
        [PLAN_STEP_GATE] = show_gate,       [PLAN_STEP_BRIDGE] = show_bridge, [PLAN_STEP_KEEP] = show_keep,
        [PLAN_STEP_PROTECT] = show_protect, [PLAN_STEP_CREATE] = show_create, [PLAN_STEP_ATTACH] = show_attach,
        [PLAN_STEP_START] = show_start,     [PLAN_STEP_STREAM] = show_default, [PLAN_STEP_WAIT] = show_wait,
};

int plan_requests(const aisb_policy *p, const run_plan *plan, const plan_facts *f, char ***ret)
{
        _cleanup_strv_free_ char **v = NULL;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < plan->n_steps; i++)
                r = step_show[plan->steps[i]](&(step_view) { .p = p, .plan = plan, .f = f, .step = plan->steps[i] }, &v);
        /* The create step's end. */
        r = r < 0 ? r : podman_call_push(&v, PODMAN_CONTAINER_REMOVE, plan->name, NULL);
        if (r < 0)
                return r;
        *ret = steal_pointer(&v);
        return 0;
}
