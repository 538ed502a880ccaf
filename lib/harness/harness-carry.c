/* SPDX-License-Identifier: MIT */
/*
 * The carry-lists (harness-carry.h): which keys of a harness's host files are settings that
 * cross into the sandbox. A list of what a harness documents converges; a list of what
 * secrets look like does not (a secret of unknown format under an innocent name passed every
 * one). Pure: json-c values in, json-c values out.
 */
#include <string.h>

#include "harness-carry.h"

/* pi 0.73.1: its Settings interface (dist/core/settings-manager.d.ts:57-94, docs/settings.md),
 * the documented members of its tables, and the two names it still migrates (queueMode,
 * websockets: migrateSettings). */
static const char *const pi_carry[] = {
        "lastChangelogVersion", "defaultProvider", "defaultModel", "defaultThinkingLevel", "transport",
        "steeringMode", "followUpMode", "theme", "hideThinkingBlock", "shellPath", "quietStartup",
        "shellCommandPrefix", "npmCommand", "collapseChangelog", "enableInstallTelemetry", "packages", "extensions",
        "skills", "prompts", "themes", "enableSkillCommands", "enabledModels", "doubleEscapeAction",
        "treeFilterMode", "editorPaddingX", "autocompleteMaxVisible", "showHardwareCursor", "sessionDir",
        "compaction.enabled", "compaction.reserveTokens", "compaction.keepRecentTokens", "branchSummary.reserveTokens",
        "branchSummary.skipPrompt", "retry.enabled", "retry.maxRetries", "retry.baseDelayMs", "retry.maxDelayMs",
        "retry.provider.timeoutMs", "retry.provider.maxRetries", "retry.provider.maxRetryDelayMs",
        "terminal.showImages", "terminal.imageWidthCells", "terminal.clearOnShrink", "terminal.showTerminalProgress",
        "images.autoResize", "images.blockImages", "thinkingBudgets.minimal", "thinkingBudgets.low",
        "thinkingBudgets.medium", "thinkingBudgets.high", "markdown.codeBlockIndent", "warnings.anthropicExtraUsage",
        "queueMode", "websockets", NULL,
};

/* pi 0.73.1's models.json schema (dist/core/model-registry.js: ProviderConfigSchema,
 * ModelDefinitionSchema, ModelOverrideSchema). apiKey and headers are carried to be rewritten
 * into variables (pi_rewrite_models), never as literals. */
static const char *const pi_models_carry[] = {
        "providers.*.name", "providers.*.baseUrl", "providers.*.apiKey", "providers.*.api", "providers.*.headers",
        "providers.*.compat", "providers.*.authHeader", "providers.*.models.*.id", "providers.*.models.*.name",
        "providers.*.models.*.api", "providers.*.models.*.baseUrl", "providers.*.models.*.reasoning",
        "providers.*.models.*.thinkingLevelMap", "providers.*.models.*.input", "providers.*.models.*.cost",
        "providers.*.models.*.contextWindow", "providers.*.models.*.maxTokens", "providers.*.models.*.headers",
        "providers.*.models.*.compat", "providers.*.modelOverrides.*.name", "providers.*.modelOverrides.*.reasoning",
        "providers.*.modelOverrides.*.thinkingLevelMap", "providers.*.modelOverrides.*.input",
        "providers.*.modelOverrides.*.cost", "providers.*.modelOverrides.*.contextWindow",
        "providers.*.modelOverrides.*.maxTokens", "providers.*.modelOverrides.*.headers",
        "providers.*.modelOverrides.*.compat", NULL,
};

/* claude 2.1.332: its settings schema (the one in its binary, as code.claude.com/docs/en/settings
 * documents it), without the commands that print a credential (apiKeyHelper, awsAuthRefresh,
 * awsCredentialExport, gcpAuthRefresh, proxyAuthHelper, otelHeadersHelper, xaaIdp), the keys
 * only managed settings honour, and the host's launchers (processWrapper, sshHostCommands).
 * env: by the variables claude documents as settings (models, providers and their URLs and
 * regions, levels, limits, switches), not its keys and tokens, not its proxy and CA variables
 * (the run sets its own), not the paths into the host's files, not telemetry's exporters
 * (OTEL_*: they send the session to a collector of the host's). */
static const char *const claude_carry[] = {
        "$schema", "model", "fallbackModel", "availableModels", "availableModelsMatch", "deniedModels",
        "modelOverrides", "modelPicker", "modelPricing", "modelSettings", "advisorModel", "effortLevel",
        "maxEffortLevel", "alwaysThinkingEnabled", "ultracode", "fastMode", "fastModePerSessionOptIn",
        "autoCompactWindow", "autoCompactEnabled", "precomputeCompactionEnabled", "idleCompaction",
        "promptCacheTtl", "subagentPromptCacheTtl", "permissions", "hooks", "disableAllHooks", "allowedHttpHookUrls",
        "httpHookAllowedEnvVars", "statusLine", "subagentStatusLine", "fileSuggestion", "outputStyle", "agent",
        "plansDirectory", "autoMemoryEnabled", "autoMemoryDirectory", "autoDreamEnabled", "claudeMdExcludes",
        "enableAllProjectMcpServers", "enabledMcpjsonServers", "disabledMcpjsonServers", "disableClaudeAiConnectors",
        "enabledPlugins", "extraKnownMarketplaces", "skillOverrides", "disableBundledSkills",
        "disableSkillShellExecution", "skillListingMaxDescChars", "skillListingBudgetFraction", "syncClaudeAiSkills",
        "syncClaudeAiPlugins", "sandbox", "worktree", "attribution", "attributionProject", "includeCoAuthoredBy",
        "includeGitInstructions", "respectGitignore", "cleanupPeriodDays", "language", "theme", "tui", "viewMode",
        "editorMode", "vimInsertModeRemaps", "verbose", "voice", "spinnerTipsEnabled", "spinnerVerbs",
        "spinnerTipsOverride", "syntaxHighlightingDisabled", "maxProseWidth", "spellcheck", "terminalTitleFromRename",
        "prefersReducedMotion", "timeFormat", "timeZone", "showThinkingSummaries", "showTurnDuration",
        "showMessageTimestamps", "showClearContextOnPlanAccept", "terminalProgressBarEnabled", "todoFeatureEnabled",
        "autoScrollEnabled", "wheelScrollAccelerationEnabled", "fileCheckpointingEnabled", "promptSuggestionEnabled",
        "emojiCompletionEnabled", "awaySummaryEnabled", "askUserQuestionTimeout", "dialogExpiry", "modelProposedGoals",
        "companyAnnouncements", "prUrlTemplate", "footerLinksRegexes", "preferredNotifChannel", "defaultShell",
        "bashEditDiffEnabled", "bashOutputMaxChars", "respondToBashCommands", "disableAgentView",
        "disableRemoteControl", "disableWorkflows", "disableArtifact", "enableArtifact", "enableWorkflows",
        "workflowKeywordTriggerEnabled", "workflowSizeGuideline", "disableAutoMode", "skipDangerousModePermissionPrompt",
        "skipWebFetchPreflight", "feedbackSurveyRate", "teammateMode", "switchModelsOnFlag", "autoContinueAtUsageLimit",
        "remoteControlAtStartup", "isolatePeerMachines", "daemonColdStart", "crossSessionInbound", "autoUploadSessions",
        "inputNeededNotifEnabled", "agentPushNotifEnabled", "autoUpdatesChannel", "minimumVersion", "forceLoginMethod",
        "forceLoginOrgUUID",
        "env.ANTHROPIC_BASE_URL", "env.ANTHROPIC_BEDROCK_BASE_URL", "env.ANTHROPIC_BEDROCK_MANTLE_BASE_URL",
        "env.ANTHROPIC_VERTEX_BASE_URL", "env.ANTHROPIC_FOUNDRY_BASE_URL", "env.ANTHROPIC_AWS_BASE_URL",
        "env.ANTHROPIC_FOUNDRY_RESOURCE", "env.ANTHROPIC_VERTEX_PROJECT_ID", "env.ANTHROPIC_AWS_WORKSPACE_ID",
        "env.ANTHROPIC_WORKSPACE_ID", "env.ANTHROPIC_BEDROCK_SERVICE_TIER", "env.ANTHROPIC_BETAS", "env.ANTHROPIC_MODEL",
        "env.ANTHROPIC_SMALL_FAST_MODEL", "env.ANTHROPIC_SMALL_FAST_MODEL_AWS_REGION", "env.ANTHROPIC_DEFAULT_*",
        "env.ANTHROPIC_CUSTOM_MODEL_OPTION*", "env.CLAUDE_CODE_SUBAGENT_MODEL", "env.AWS_REGION", "env.CLOUD_ML_REGION",
        "env.VERTEX_REGION_*", "env.CLAUDE_CODE_USE_*", "env.CLAUDE_CODE_EFFORT_LEVEL", "env.CLAUDE_CODE_SUBAGENT_EFFORT",
        "env.MAX_THINKING_TOKENS", "env.CLAUDE_CODE_EXTRA_BODY", "env.CLAUDE_CODE_MAX_OUTPUT_TOKENS",
        "env.CLAUDE_CODE_MAX_CONTEXT_TOKENS", "env.CLAUDE_CODE_AUTO_COMPACT_WINDOW", "env.CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
        "env.CLAUDE_CODE_FILE_READ_MAX_OUTPUT_TOKENS", "env.MAX_MCP_OUTPUT_TOKENS", "env.CLAUDE_CODE_ALWAYS_ENABLE_EFFORT",
        "env.CLAUDE_CODE_DISABLE_*", "env.CLAUDE_CODE_ENABLE_*", "env.DISABLE_*", "env.ENABLE_PROMPT_CACHING_1H",
        "env.FORCE_PROMPT_CACHING_5M", "env.ENABLE_TOOL_SEARCH", "env.DO_NOT_TRACK", "env.API_TIMEOUT_MS",
        "env.API_FORCE_IDLE_TIMEOUT", "env.BASH_DEFAULT_TIMEOUT_MS", "env.BASH_MAX_TIMEOUT_MS", "env.BASH_MAX_OUTPUT_LENGTH",
        "env.CLAUDE_CODE_MAX_RETRIES", "env.CLAUDE_CODE_MAX_TOOL_USE_CONCURRENCY", "env.CLAUDE_CODE_MAX_TURNS",
        "env.MCP_TIMEOUT", "env.MCP_TOOL_TIMEOUT", "env.CLAUDE_STREAM_IDLE_TIMEOUT_MS", "env.TASK_MAX_OUTPUT_LENGTH",
        "env.SLASH_COMMAND_TOOL_CHAR_BUDGET", "env.CLAUDE_CODE_GLOB_*", "env.USE_BUILTIN_RIPGREP",
        "env.CLAUDE_CODE_NO_FLICKER", "env.CLAUDE_CODE_ACCESSIBILITY", "env.CLAUDE_CODE_SCROLL_SPEED",
        "env.CLAUDE_CODE_TMUX_TRUECOLOR", "env.CLAUDE_CODE_FORCE_SYNC_OUTPUT", "env.CLAUDE_CODE_SYNTAX_HIGHLIGHT",
        "env.CLAUDE_CODE_HIDE_CWD", "env.CLAUDE_AX_SCREEN_READER", "env.CLAUDE_CODE_SIMPLE",
        "env.CLAUDE_CODE_SIMPLE_SYSTEM_PROMPT", "env.CLAUDE_CODE_ATTRIBUTION_HEADER",
        "env.CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS", "env.CLAUDE_CODE_FORK_SUBAGENT",
        "env.CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR", "env.CLAUDE_CODE_RETRY_WATCHDOG",
        "env.CLAUDE_CODE_RESUME_INTERRUPTED_TURN", "env.CLAUDE_CODE_SKIP_PROMPT_HISTORY", NULL,
};

/* codex 0.171.0: its config's schema (codex-rs/core/config.schema.json, the one codex makes
 * from its ConfigToml, and the field names its 0.171.0 binary holds; developers.openai.com/
 * codex/config-reference), without a provider's experimental_bearer_token (a token) or auth (a
 * host command that prints one), an MCP server's env and shell_environment_policy.set (each a
 * table of variables of any name, the values themselves: name one with bridge-carry), and
 * what codex says not to use (experimental_realtime_*, debug, desktop). */
static const char *const codex_carry[] = {
        "model", "review_model", "model_provider", "model_context_window", "model_auto_compact_token_limit",
        "model_auto_compact_token_limit_scope", "model_post_turn_compact_threshold_percent", "model_reasoning_effort",
        "plan_mode_reasoning_effort", "model_reasoning_summary", "model_supports_reasoning_summaries", "model_verbosity",
        "model_catalog_json", "personality", "service_tier", "oss_provider", "openai_base_url", "chatgpt_base_url",
        "approval_policy", "approvals_reviewer", "auto_review", "sandbox_mode", "sandbox_workspace_write",
        "default_permissions", "permissions", "allow_login_shell", "notify", "hooks", "instructions",
        "developer_instructions", "compact_prompt", "experimental_compact_prompt_file", "model_instructions_file",
        "include_apps_instructions", "include_collaboration_mode_instructions", "include_environment_context",
        "include_permissions_instructions", "project_doc_max_bytes", "project_doc_fallback_filenames",
        "project_root_markers", "projects.*.trust_level", "features", "tools", "tui", "web_search", "history",
        "file_opener", "hide_agent_reasoning", "show_raw_agent_reasoning", "disable_paste_burst",
        "check_for_update_on_startup", "analytics", "feedback", "notice", "tool_output_token_limit",
        "background_terminal_max_timeout", "thread_unload_delay_secs", "suppress_unstable_features_warning",
        "experimental_use_unified_exec_tool", "skills", "plugins", "marketplaces", "apps", "agents", "memories",
        "goals", "code_mode", "tool_suggest", "js_repl_node_path", "sqlite_home", "log_dir", "windows",
        "ghost_snapshot", "cli_auth_credentials_store", "forced_login_method", "forced_chatgpt_workspace_id",
        "mcp_oauth_credentials_store", "mcp_oauth_callback_port", "mcp_oauth_callback_url",
        "mcp_optional_startup_grace_ms", "shell_environment_policy.inherit", "shell_environment_policy.exclude",
        "shell_environment_policy.include_only", "shell_environment_policy.ignore_default_excludes",
        "shell_environment_policy.experimental_use_profile",
        "model_providers.*.name", "model_providers.*.base_url", "model_providers.*.env_key",
        "model_providers.*.env_key_instructions", "model_providers.*.wire_api", "model_providers.*.query_params",
        "model_providers.*.http_headers", "model_providers.*.env_http_headers", "model_providers.*.request_max_retries",
        "model_providers.*.stream_max_retries", "model_providers.*.stream_idle_timeout_ms",
        "model_providers.*.websocket_connect_timeout_ms", "model_providers.*.requires_openai_auth",
        "model_providers.*.supports_websockets", "model_providers.*.aws",
        "mcp_servers.*.command", "mcp_servers.*.args", "mcp_servers.*.cwd", "mcp_servers.*.url",
        "mcp_servers.*.enabled", "mcp_servers.*.required", "mcp_servers.*.enabled_tools",
        "mcp_servers.*.disabled_tools", "mcp_servers.*.tools", "mcp_servers.*.default_tools_approval_mode",
        "mcp_servers.*.startup_timeout_sec", "mcp_servers.*.startup_timeout_ms", "mcp_servers.*.tool_timeout_sec",
        "mcp_servers.*.supports_parallel_tool_calls", "mcp_servers.*.bearer_token_env_var", "mcp_servers.*.env_vars",
        "mcp_servers.*.env_http_headers", "mcp_servers.*.http_headers", "mcp_servers.*.scopes", "mcp_servers.*.oauth",
        "mcp_servers.*.oauth_resource", "mcp_servers.*.environment_id", "mcp_servers.*.name",
        "profile", "profiles.*.model", "profiles.*.model_provider", "profiles.*.model_reasoning_effort",
        "profiles.*.plan_mode_reasoning_effort", "profiles.*.model_reasoning_summary", "profiles.*.model_verbosity",
        "profiles.*.model_catalog_json", "profiles.*.model_instructions_file", "profiles.*.approval_policy",
        "profiles.*.approvals_reviewer", "profiles.*.sandbox_mode", "profiles.*.service_tier", "profiles.*.personality",
        "profiles.*.oss_provider", "profiles.*.chatgpt_base_url", "profiles.*.web_search", "profiles.*.features",
        "profiles.*.tools", "profiles.*.tui", "profiles.*.analytics", "profiles.*.windows",
        "profiles.*.include_apps_instructions", "profiles.*.include_collaboration_mode_instructions",
        "profiles.*.include_environment_context", "profiles.*.include_permissions_instructions",
        "profiles.*.experimental_compact_prompt_file", "profiles.*.experimental_use_unified_exec_tool", NULL,
};

static const struct {
        const char *name;
        const char *const *list;
} carry_files[] = {
        [CARRY_PI] = { "pi", pi_carry },
        [CARRY_PI_MODELS] = { "pi-models", pi_models_carry },
        [CARRY_CLAUDE] = { "claude", claude_carry },
        [CARRY_CODEX] = { "codex", codex_carry },
};

const char *carry_file_name(carry_file f)
{
        return carry_files[f].name;
}

/* The path of entry for f ("NAME:PATH"), or NULL: another file's. */
static const char *entry_path(carry_file f, const char *entry)
{
        size_t n = strlen(carry_files[f].name);
        return strncmp(entry, carry_files[f].name, n) == 0 && entry[n] == ':' ? entry + n + 1 : NULL;
}

int carry_entry_check(const char *value, aisb_error **err)
{
        const char *path = NULL;
        for (size_t f = 0; !path && f < ELEMENTSOF(carry_files); f++)
                path = entry_path((carry_file) f, value);
        bool ok = path && *path && strlen(path) <= 512;
        for (const char *c = path; ok && *c; c++)
                ok = (unsigned char) *c > ' ' && *c != 0x7f && (*c != '.' || (c > path && c[-1] != '.' && c[1])) &&
                     (*c != '*' || !c[1] || c[1] == '.');
        if (!ok)
                return aisb_error_set(err, -EINVAL,
                                      "bridge-carry: '%s' is not HARNESS:KEY (HARNESS pi, pi-models, claude or codex; "
                                      "KEY a key path such as env.MY_VAR or model_providers.*.base_url)",
                                      value);
        return 0;
}

/* Whether the n bytes of seg, a key of a path, name key: it, "*", or a beginning of it. */
static bool segment_names(const char *seg, size_t n, const char *key)
{
        if (n > 0 && seg[n - 1] == '*')
                return strncmp(key, seg, n - 1) == 0;
        return strlen(key) == n && memcmp(key, seg, n) == 0;
}

/* Keep of v (an object or an array: its elements are named by "*" only) what paths, each the
 * rest of a carry path below v, name. The number of keys left out, or -ENOMEM. */
static int carry(json_object *v, const char *const *paths, size_t n, buffer *path, buffer *held)
{
        bool array = json_object_is_type(v, json_type_array);
        _cleanup_free_ const char **below = calloc(n + 1, sizeof *below);
        _cleanup_strv_free_ char **doomed = NULL;
        if (!below)
                return -ENOMEM;
        int count = 0;
        /* An object's members in order; an array's elements from its end, so that an element's
         * removal moves none still to come. */
        size_t i = array ? json_object_array_length(v) : 0;
        for (struct lh_entry *e = array ? NULL : json_object_get_object(v)->head; array ? i-- > 0 : e != NULL;
             e = e ? e->next : NULL) {
                const char *key = array ? "*" : lh_entry_k(e);
                json_object *value = array ? json_object_array_get_idx(v, i) : (json_object *) lh_entry_v(e);
                size_t m = 0;
                bool whole = false;
                for (size_t k = 0; k < n; k++) {
                        const char *dot = strchr(paths[k], '.');
                        size_t len = dot ? (size_t) (dot - paths[k]) : strlen(paths[k]);
                        if (array ? len != 1 || paths[k][0] != '*' : !segment_names(paths[k], len, key))
                                continue;
                        if (dot)
                                below[m++] = dot + 1;
                        else
                                whole = true;
                }
                if (whole)
                        continue;
                size_t mark = path->size;
                int r = array ? buffer_printf(path, "[%zu]", i) : buffer_printf(path, "%s%s", mark ? "." : "", key);
                if (r >= 0 && m > 0 && (json_object_is_type(value, json_type_object) ||
                                        json_object_is_type(value, json_type_array)))
                        r = carry(value, below, m, path, held);
                else if (r >= 0) {
                        r = held ? buffer_printf(held, "%.*s, ", (int) path->size, path->data) : 0;
                        if (r >= 0)
                                r = array ? (json_object_array_del_idx(v, i, 1) < 0 ? -ENOMEM : 1)
                                          : (strv_push(&doomed, key) < 0 ? -ENOMEM : 1);
                }
                path->size = mark;
                if (r < 0)
                        return r;
                count += r;
        }
        for (size_t d = 0; doomed && doomed[d]; d++)
                json_object_object_del(v, doomed[d]);
        return count;
}

int harness_carry(json_object *o, carry_file f, const char *const *extra, buffer *held)
{
        if (!json_object_is_type(o, json_type_object))
                return 0;
        size_t n = strv_length(carry_files[f].list), n_extra = extra ? strv_length(extra) : 0;
        _cleanup_free_ const char **paths = calloc(n + n_extra + 1, sizeof *paths);
        if (!paths)
                return -ENOMEM;
        memcpy(paths, carry_files[f].list, n * sizeof *paths);
        for (size_t i = 0; i < n_extra; i++)
                if (entry_path(f, extra[i]))
                        paths[n++] = entry_path(f, extra[i]);
        _cleanup_(buffer_free) buffer path = {};
        return carry(o, paths, n, &path, held);
}

int carry_named_paths(carry_file f, const char *const *extra, char ***ret)
{
        *ret = NULL;
        for (size_t i = 0; extra && extra[i]; i++) {
                const char *p = entry_path(f, extra[i]);
                if (p && !strchr(p, '*') && strv_push(ret, p) < 0) {
                        strv_free(*ret);
                        *ret = NULL;
                        return -ENOMEM;
                }
        }
        return 0;
}
