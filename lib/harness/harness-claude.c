/* SPDX-License-Identifier: MIT */
/*
 * claude's backend (harness-backend.h): settings.json's carried keys merged per key without
 * credentials, with the run's environment and level written into its "env"; CLAUDE.md
 * copied; commands/, agents/ and skills/ mounted read-only; never .credentials.json. Its key
 * is held at the gate for where ANTHROPIC_BASE_URL sends it.
 */
#include <assert.h>

#include "harness-backend.h"
#include "harness-config.h"
#include "harness.h"

/* The keys of claude's settings that make it run a command or load code or instructions
 * (docs/bridges.md): the host's, whatever the sandbox's say. env whole: claude copies it over
 * its environment (BASH_ENV, NODE_OPTIONS, PATH, ...); the run's own variables are written
 * into it after (claude_policy). */
static const char *const claude_host_keys[] = {
        "env", "hooks", "statusLine", "subagentStatusLine", "fileSuggestion", "apiKeyHelper", "awsAuthRefresh",
        "awsCredentialExport", "gcpAuthRefresh", "otelHeadersHelper", "proxyAuthHelper", "processWrapper",
        "enabledPlugins", "extraKnownMarketplaces", "outputStyle", "agent", "additionalDirectories",
        "autoMemoryDirectory", "plansDirectory", "claudeMdExcludes", "enableAllProjectMcpServers",
        "enabledMcpjsonServers", "disableAllHooks", "disableSkillShellExecution", NULL,
};

/* claude's environment as the run sets it (its quiet variables, its level), into its settings. */
static int claude_policy(json_object *merged, json_object *host, const aisb_policy *p, aisb_error **err)
{
        int r = harness_pin_keys(merged, host, claude_host_keys, err);
        if (r < 0)
                return r;
        const char *env[2 * 16 + 1] = {};
        size_t n = 0;
        for (const struct harness_env *q = harness_quiet_env; q->name; q++)
                if (q->harness == HARNESS_CLAUDE) {
                        env[n++] = q->name;
                        env[n++] = harness_run_env(p, q->name, q->value);
                }
        bool level = !streq(p->thinking, "host");
        const char *effort = harness_run_env(p, "CLAUDE_CODE_EFFORT_LEVEL", level ? p->thinking : NULL);
        if (effort) {
                env[n++] = "CLAUDE_CODE_EFFORT_LEVEL";
                env[n++] = effort;
        }
        for (const char *const *v = claude_level_variables; *v; v++) {
                const char *value = harness_run_env(p, *v, NULL);
                if (value) {
                        env[n++] = *v;
                        env[n++] = value;
                }
        }
        assert(n < ELEMENTSOF(env));
        return claude_settings_apply_policy(merged, host, env, level || policy_env_named(p, "CLAUDE_CODE_EFFORT_LEVEL"),
                                            err);
}

static int bridge_claude(const bridge_run *run, aisb_error **err)
{
        int r = bridge_settings(run, "settings.json", &bridge_json, CARRY_CLAUDE, claude_policy, err);
        return r < 0 ? r : bridge_copy_from_host(run->ctx, run->host_dir, run->host_path, "CLAUDE.md", run->sandbox_dir,
                                                 err);
}

/* ~/.claude.json: the MCP servers claude starts (spawns) at its start, the user's and each
 * project's. */
static int claude_state_servers(json_object *o)
{
        int n = json_object_object_get_ex(o, "mcpServers", NULL) ? 1 : 0;
        json_object_object_del(o, "mcpServers");
        json_object *projects;
        if (json_object_object_get_ex(o, "projects", &projects) && json_object_is_type(projects, json_type_object)) {
                json_object_object_foreach(projects, name, project) {
                        (void) name;
                        if (json_object_is_type(project, json_type_object) &&
                            json_object_object_get_ex(project, "mcpServers", NULL)) {
                                json_object_object_del(project, "mcpServers");
                                n++;
                        }
                }
        }
        return n;
}

/* Where claude goes: the run's ANTHROPIC_BASE_URL, else the bridged settings'. */
static int hold_claude_keys(aisb_policy *p, json_object *settings, char ***held, aisb_error **err)
{
        const char *url = harness_run_env(p, "ANTHROPIC_BASE_URL", NULL);
        if (!url)
                url = harness_json_string(settings, "env", "ANTHROPIC_BASE_URL");
        if (!url)
                url = "https://api.anthropic.com";
        int r = harness_hold_secret(p, "ANTHROPIC_API_KEY", NULL, url, "x-api-key", NULL, held, err);
        return r < 0 ? r : harness_hold_secret(p, "ANTHROPIC_AUTH_TOKEN", NULL, url, "Authorization", "Bearer", held, err);
}

/* claude's effort levels (claude --help: --effort). */
static const char *const claude_levels[] = { "low", "medium", "high", "xhigh", "max", "host", NULL };

static bool claude_level_valid(const char *level)
{
        return strv_contains(claude_levels, level);
}

static const char *claude_level_names(void)
{
        return "low, medium, high, xhigh, max, host";
}

/* claude's directories of markdown it reads (slash commands, subagents, skills): the host's,
 * read-only, as ~/.agents is. */
static const read_only_dir claude_read_only[] = {
        { "commands", AISB_SANDBOX_HOME "/.claude/commands" },
        { "agents", AISB_SANDBOX_HOME "/.claude/agents" },
        { "skills", AISB_SANDBOX_HOME "/.claude/skills" },
        {},
};

const harness_ops harness_claude = {
        .kind = HARNESS_CLAUDE, .name = "claude",
        .dir_env = "CLAUDE_CONFIG_DIR", .home_dir = ".claude", .sandbox_dir = AISB_SANDBOX_HOME "/.claude",
        .seed = "claude-config", .base = "claude",
        .level_valid = claude_level_valid, .levels = claude_level_names, .level_env = "CLAUDE_CODE_EFFORT_LEVEL",
        .whole_file = "CLAUDE.md", .settings = "settings.json", .syntax = &bridge_json, .carry = CARRY_CLAUDE,
        .read_only = claude_read_only,
        .state = &(const home_state) { "", ".claude.json", "~/.claude.json", "MCP servers claude starts",
                                       claude_state_servers },
        .bridge = bridge_claude, .describe = harness_describe_settings, .hold_keys = hold_claude_keys,
        .level_where = "CLAUDE_CODE_EFFORT_LEVEL", .auth_file = ".credentials.json",
};
