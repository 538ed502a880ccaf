/* SPDX-License-Identifier: MIT */
/*
 * pi's backend (harness-backend.h): ~/.pi/agent's settings.json merged per key with the
 * level as policy, models.json with every literal key and header value turned into a variable
 * the run must pass (pi-config.h has the pure rules), auth.json never; pi's keys held at the
 * gate by where its providers are.
 */
#include "harness-backend.h"
#include "harness-config.h"
#include "harness.h"
#include "pi-config.h"

/* The keys of pi's settings that make it run a command or load code or instructions
 * (research of its docs and source, docs/bridges.md): the host's, whatever the sandbox's say,
 * so that no run's agent adds one for every later run. */
static const char *const pi_host_keys[] = {
        "packages", "extensions", "skills", "prompts", "themes", "npmCommand", "shellPath", "shellCommandPrefix",
        "sessionDir", NULL,
};

/* pi's level, and its thinkingBudgets (tokens per level) as the host has them: a budget is
 * the level's size, so the sandbox's could shrink the level policy sets. */
static int pi_policy(json_object *merged, json_object *host, const aisb_policy *p, aisb_error **err)
{
        int r = harness_pin_keys(merged, host, pi_host_keys, err);
        if (r < 0 || streq(p->thinking, "host"))
                return r;
        if (harness_pin_key(merged, host, NULL, "thinkingBudgets") < 0)
                return error_oom(err);
        return pi_apply_thinking(merged, p->thinking, err);
}

/* models.json: the host's, with every literal key and header value turned into a variable
 * the run must pass; the literal itself never leaves the host. */
static int bridge_models(const bridge_run *run, aisb_error **err)
{
        const aisb_policy *p = run->p;
        _cleanup_free_ char *origin = NULL;
        if (asprintf(&origin, "%s/models.json", run->host_path) < 0)
                return error_oom(err);
        _cleanup_json_ json_object *models = NULL, *rewritten = NULL;
        int r = run->host_dir >= 0 ? bridge_read_json(run->host_dir, "models.json", origin, &models, err) : 0;
        if (r < 0 || !models)
                return r; /* none: the home's reset moved the sandbox's aside (its "!command" keys run) */
        r = bridge_carry_host(run, CARRY_PI_MODELS, models, origin, err);
        if (r < 0)
                return r;
        pi_key *keys = NULL;
        size_t n_keys = 0;
        r = pi_rewrite_models(models, &rewritten, &keys, &n_keys, err);
        /* A key may come from a --secret too: the sandbox then holds its placeholder, and the
         * gate puts the value into pi's requests to the provider. */
        _cleanup_free_ env_entry *vars = calloc(p->n_env + p->n_secrets + 1, sizeof *vars);
        if (r >= 0 && !vars)
                r = error_oom(err);
        for (size_t i = 0; vars && i < p->n_env; i++)
                vars[i] = p->env[i];
        for (size_t i = 0; vars && i < p->n_secrets; i++)
                vars[p->n_env + i] = (env_entry) { .name = p->secrets[i].name, .value = p->secrets[i].placeholder };
        if (r >= 0)
                r = pi_keys_check(keys, n_keys, vars, p->n_env + p->n_secrets, err);
        pi_keys_free(keys, n_keys);
        if (r < 0)
                return r;
        return bridge_write_config(run->ctx, run->sandbox_dir, "models.json", &bridge_json, rewritten, err);
}

/* pi's settings name no credential of their own, but one may sit in a value (a package's git
 * URL with a token in it): withheld as claude's and codex's are. */
static int bridge_pi(const bridge_run *run, aisb_error **err)
{
        int r = bridge_settings(run, "settings.json", &bridge_json, CARRY_PI, pi_policy, err);
        return r < 0 ? r : bridge_models(run, err);
}

/* Each key models.json needs, named with how the run gives it: names only, never a value. */
static int describe_models(const aisb_policy *p, json_object *models, buffer *b)
{
        _cleanup_json_ json_object *rewritten = NULL;
        pi_key *keys = NULL;
        size_t n_keys = 0;
        _cleanup_error_ aisb_error *refused = NULL;
        if (pi_rewrite_models(models, &rewritten, &keys, &n_keys, &refused) < 0)
                /* What a run would refuse with (names and types, never a value). */
                return buffer_printf(b, "bridge-models=refused: %s\n", aisb_error_message(refused));
        int r = 0;
        for (size_t i = 0; i < n_keys; i++) {
                const char *how = "missing: add --env";
                for (size_t k = 0; k < p->n_env; k++)
                        if (streq(p->env[k].name, keys[i].variable) && p->env[k].value[0])
                                how = "passed";
                for (size_t k = 0; k < p->n_secrets; k++)
                        if (streq(p->secrets[k].name, keys[i].variable))
                                how = "held by the gate";
                r = r < 0 ? r : buffer_printf(b, "bridge-key=%s for ", keys[i].variable);
                r = r < 0 ? r : pi_key_describe(&keys[i], b);
                r = r < 0 ? r : buffer_printf(b, " (%s)\n", how);
        }
        pi_keys_free(keys, n_keys);
        return r;
}

static int describe_pi(const harness_ops *ops, const aisb_policy *p, int dir, buffer *b)
{
        (void) ops;
        _cleanup_json_ json_object *settings = NULL, *models = NULL;
        _cleanup_(buffer_free) buffer said = {};
        if (dir >= 0)
                (void) bridge_read_json(dir, "settings.json", "settings.json", &settings, NULL);
        int r = harness_describe_carry(p, CARRY_PI, settings, "settings.json", &said);
        r = r < 0 ? r : harness_describe_keys(b, "settings", settings);
        r = r < 0 || !said.size ? r : buffer_printf(b, "%.*s", (int) said.size, said.data);
        r = r < 0 ? r : buffer_printf(b, "bridge-thinking=%s\n", p->thinking);
        if (dir >= 0)
                (void) bridge_read_json(dir, "models.json", "models.json", &models, NULL);
        r = r < 0 || !models ? r : harness_describe_carry(p, CARRY_PI_MODELS, models, "models.json", b);
        if (models)
                r = r < 0 ? r : describe_models(p, models, b);
        else
                r = r < 0 ? r : buffer_printf(b, "bridge-models=none on the host\n");
        return r < 0 ? r : buffer_printf(b, "bridge-auth=never copied\n");
}

/* pi's auth.json: an api_key entry whose key is "!command" pi runs at its start (its
 * resolve-config-value, 0.73.1), before any request. The number of entries taken out. */
static int pi_auth_commands(json_object *o)
{
        int n = 0;
        json_object_object_foreach(o, name, entry) {
                json_object *key;
                if (json_object_is_type(entry, json_type_object) && json_object_object_get_ex(entry, "key", &key) &&
                    json_object_is_type(key, json_type_string) && json_object_get_string(key)[0] == '!') {
                        json_object_object_del(o, name);
                        n++;
                }
        }
        return n;
}

/* How pi sends a provider's key, by the provider's "api", and where pi's built-in providers
 * are and which variable holds their key (pi-ai's env-api-keys.ts and models.generated.ts). */
static const struct {
        const char *api, *header, *scheme;
} pi_apis[] = {
        { "anthropic-messages", "x-api-key", NULL },
        { "google-generative-ai", "x-goog-api-key", NULL },
        { "openai-completions", "Authorization", "Bearer" },
        { "openai-responses", "Authorization", "Bearer" },
        { "mistral-conversations", "Authorization", "Bearer" },
};
static const struct {
        const char *provider, *variable, *url, *api;
} pi_builtins[] = {
        { "anthropic", "ANTHROPIC_API_KEY", "https://api.anthropic.com", "anthropic-messages" },
        { "openai", "OPENAI_API_KEY", "https://api.openai.com/v1", "openai-responses" },
        { "google", "GEMINI_API_KEY", "https://generativelanguage.googleapis.com/v1beta", "google-generative-ai" },
        { "mistral", "MISTRAL_API_KEY", "https://api.mistral.ai", "mistral-conversations" },
        { "openrouter", "OPENROUTER_API_KEY", "https://openrouter.ai/api/v1", "openai-completions" },
        { "groq", "GROQ_API_KEY", "https://api.groq.com/openai/v1", "openai-completions" },
        { "xai", "XAI_API_KEY", "https://api.x.ai/v1", "openai-completions" },
        { "deepseek", "DEEPSEEK_API_KEY", "https://api.deepseek.com", "openai-completions" },
        { "cerebras", "CEREBRAS_API_KEY", "https://api.cerebras.ai/v1", "openai-completions" },
};

/* How pi sends a key over api, or NULL: an api of no single header. */
static const typeof(pi_apis[0]) *pi_api(const char *api)
{
        for (size_t a = 0; api && a < ELEMENTSOF(pi_apis); a++)
                if (streq(api, pi_apis[a].api))
                        return &pi_apis[a];
        return NULL;
}

/* A pi key, unless the gate cannot hold it (it stays the run's to pass: pi_keys_check names it). */
static int hold_pi(aisb_policy *p, const char *variable, const char *value, const char *url, const char *header,
                   const char *scheme, char ***held, aisb_error **err)
{
        _cleanup_error_ aisb_error *e = NULL;
        int r = harness_hold_secret(p, variable, value, url, header, scheme, held, &e);
        if (r == -EINVAL)
                return 0;
        return r < 0 ? aisb_error_set(err, r, "%s", aisb_error_message(e)) : 0;
}

/* pi: each provider of the host's models.json whose apiKey or header value is a variable set
 * here or a literal, at its baseUrl's host (the built-in provider's when it names one), in the
 * header its api sends; then the variables of pi's built-in providers set here. A "!command"
 * key stays the run's to pass. */
static int hold_pi_keys(aisb_policy *p, json_object *models, char ***held, aisb_error **err)
{
        _cleanup_json_ json_object *rewritten = NULL;
        pi_key *keys = NULL;
        size_t n_keys = 0;
        json_object *providers = NULL;
        if (!models || !json_object_object_get_ex(models, "providers", &providers) ||
            pi_rewrite_models(models, &rewritten, &keys, &n_keys, NULL) < 0)
                n_keys = 0;
        int r = 0;
        for (size_t i = 0; r >= 0 && i < n_keys; i++) {
                const pi_key *k = &keys[i];
                json_object *provider = NULL, *field = NULL;
                if (k->source == PIBRIDGE_KEY_COMMAND ||
                    (k->field != PIBRIDGE_FIELD_API_KEY && k->field != PIBRIDGE_FIELD_HEADER) ||
                    !json_object_object_get_ex(providers, k->provider, &provider))
                        continue;
                const char *url = harness_json_string(provider, "baseUrl", NULL), *api = harness_json_string(provider, "api", NULL);
                for (size_t b = 0; b < ELEMENTSOF(pi_builtins); b++)
                        if (streq(k->provider, pi_builtins[b].provider)) {
                                url = url ? url : pi_builtins[b].url;
                                api = api ? api : pi_builtins[b].api;
                        }
                const char *value = NULL;
                if (k->source == PIBRIDGE_KEY_LITERAL) {
                        (void) (k->field == PIBRIDGE_FIELD_API_KEY ? json_object_object_get_ex(provider, "apiKey", &field)
                                                                   : json_object_object_get_ex(provider, "headers", &field) &&
                                                                             json_object_object_get_ex(field, k->header, &field));
                        value = json_object_get_string(field);
                }
                if (k->field == PIBRIDGE_FIELD_HEADER) {
                        r = hold_pi(p, k->variable, value, url, k->header, NULL, held, err);
                        continue;
                }
                const typeof(pi_apis[0]) *how = pi_api(api);
                if (how)
                        r = hold_pi(p, k->variable, value, url, how->header, how->scheme, held, err);
        }
        pi_keys_free(keys, n_keys);
        for (size_t b = 0; r >= 0 && b < ELEMENTSOF(pi_builtins); b++) {
                const typeof(pi_apis[0]) *how = pi_api(pi_builtins[b].api);
                r = hold_pi(p, pi_builtins[b].variable, NULL, pi_builtins[b].url, how->header, how->scheme, held, err);
        }
        return r;
}

static bool pi_declined(const aisb_policy *p)
{
        return p->no_pi_config;
}

const harness_ops harness_pi = {
        .kind = HARNESS_PI, .name = "pi",
        .dir_env = "PI_CODING_AGENT_DIR", .home_dir = ".pi/agent", .sandbox_dir = AISB_SANDBOX_HOME "/.pi/agent",
        .seed = "pi-agent", .base = "pi", .declined = pi_declined,
        .level_valid = pi_thinking_level_valid, .levels = pi_thinking_levels, .level_bridged = true,
        .whole_file = "models.json", .settings = "models.json", .syntax = &bridge_json, .carry = CARRY_PI,
        .state = &(const home_state) { ".pi/agent", "auth.json", "~/.pi/agent/auth.json",
                                       "keys that are commands pi runs at its start", pi_auth_commands },
        .bridge = bridge_pi, .describe = describe_pi, .hold_keys = hold_pi_keys,
};
