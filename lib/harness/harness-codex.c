/* SPDX-License-Identifier: MIT */
/*
 * codex's backend (harness-backend.h): config.toml, and the profile file a command names,
 * merged per key without credentials with policy on top (codex_config_apply_policy); AGENTS.md
 * copied; never auth.json. Its key is held at the gate for its provider's base_url.
 */
#include "harness-backend.h"
#include "harness-config.h"
#include "harness.h"

/* The keys of codex's config that make it run a command or load code or instructions
 * (docs/bridges.md): the host's, whatever the sandbox's say. */
static const char *const codex_host_keys[] = {
        "mcp_servers", "notify", "hooks", "model_provider", "model_providers", "openai_base_url", "chatgpt_base_url",
        "profile", "profiles", "otel", "shell_environment_policy", "instructions", "developer_instructions",
        "model_instructions_file", "experimental_compact_prompt_file", "project_doc_fallback_filenames",
        "project_root_markers", "skills", "plugins", "marketplaces", "js_repl_node_path", "allow_login_shell",
        "sqlite_home", "log_dir", NULL,
};

static int codex_policy(json_object *merged, json_object *host, const aisb_policy *p, aisb_error **err)
{
        int r = harness_pin_keys(merged, host, codex_host_keys, err);
        return r < 0 ? r : codex_config_apply_policy(merged, p->thinking, err);
}

/* The profile a codex command names (--profile NAME, -p NAME, -pNAME, --profile=NAME), whose
 * file (0.171: NAME.config.toml beside config.toml) it reads, into *ret (NULL: none named).
 * -EINVAL for a name that is no plain file name: aisb could not police what codex reads. */
static int codex_profile_file(const aisb_policy *p, char **ret, aisb_error **err)
{
        const char *const *cmd = policy_command(p);
        const char *name = NULL;
        *ret = NULL;
        for (size_t i = 1; cmd[0] && cmd[i]; i++) {
                if ((streq(cmd[i], "--profile") || streq(cmd[i], "-p")) && cmd[i + 1])
                        name = cmd[++i];
                else if (startswith(cmd[i], "--profile="))
                        name = cmd[i] + strlen("--profile=");
                else if (startswith(cmd[i], "-p") && cmd[i][2] != '-')
                        name = cmd[i] + 2;
                else if (streq(cmd[i], "--"))
                        break;
        }
        if (!name)
                return 0;
        if (!*name || strlen(name) > 128 || name[0] == '.' ||
            strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != strlen(name))
                return aisb_error_set(err, -EINVAL,
                                      "codex --profile '%.128s': not a name aisb can bridge (letters, digits, '.', '_', '-')",
                                      name);
        return asprintf(ret, "%s.config.toml", name) < 0 ? error_oom(err) : 0;
}

/* config.toml, and so the profile file the command names: the host's merged, or the sandbox's
 * own with policy on top, so that no profile of the agent's making lowers a later run. */
static int bridge_codex(const bridge_run *run, aisb_error **err)
{
        _cleanup_free_ char *profile = NULL;
        int r = codex_profile_file(run->p, &profile, err);
        if (r >= 0)
                r = bridge_settings(run, "config.toml", &bridge_toml, CARRY_CODEX, codex_policy, err);
        if (r >= 0 && profile)
                r = bridge_settings(run, profile, &bridge_toml, CARRY_CODEX, codex_policy, err);
        return r < 0 ? r : bridge_copy_from_host(run->ctx, run->host_dir, run->host_path, "AGENTS.md", run->sandbox_dir,
                                                 err);
}

/* codex's provider (model_provider, its built-in "openai" unless set) and its env_key. */
static int hold_codex_keys(aisb_policy *p, json_object *config, char ***held, aisb_error **err)
{
        const char *id = harness_json_string(config, "model_provider", NULL);
        json_object *providers = NULL, *provider = NULL;
        if (id && json_object_object_get_ex(config, "model_providers", &providers))
                (void) json_object_object_get_ex(providers, id, &provider);
        const char *variable = "OPENAI_API_KEY", *url = "https://api.openai.com/v1";
        if (id && !provider && !streq(id, "openai"))
                return 0; /* another of codex's own (a local model): no key of ours */
        if (provider) {
                variable = harness_json_string(provider, "env_key", NULL);
                url = harness_json_string(provider, "base_url", NULL);
        }
        return variable && url ? harness_hold_secret(p, variable, NULL, url, "Authorization", "Bearer", held, err) : 0;
}

const harness_ops harness_codex = {
        .kind = HARNESS_CODEX, .name = "codex",
        .dir_env = "CODEX_HOME", .home_dir = ".codex", .sandbox_dir = AISB_SANDBOX_HOME "/.codex",
        .seed = "codex-config", .base = "codex",
        .level_valid = codex_thinking_level_valid, .levels = codex_thinking_levels, .level_bridged = true,
        .whole_file = "AGENTS.md", .settings = "config.toml", .syntax = &bridge_toml, .carry = CARRY_CODEX,
        .bridge = bridge_codex, .describe = harness_describe_settings, .hold_keys = hold_codex_keys,
        .level_where = "model_reasoning_effort", .auth_file = "auth.json",
        .policy_said = "sandbox_mode danger-full-access, check_for_update_on_startup false",
};
