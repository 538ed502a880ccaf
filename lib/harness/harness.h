/* SPDX-License-Identifier: MIT */
/*
 * The harness feels like the user's own: its host configuration bridged into the sandbox's
 * home before a run (each harness's backend says how, harness-backend.h), and the agents
 * directory every run mounts read-only.
 */
#pragma once

#include <stdbool.h>

#include "harness-backend.h"
#include "service.h"
#include "policy.h"
#include "project.h"

/* The backend of the harness a run's command is (harness-backend.h), or NULL: none. */
const harness_ops *harness_backend(const aisb_policy *p);
harness_kind harness_of_command(const aisb_policy *p);

/* What every sandbox's environment holds so that a harness does not reach out on its own as
 * it starts: pi's update check and install telemetry (PI_SKIP_VERSION_CHECK, PI_TELEMETRY),
 * claude's autoupdater and telemetry (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC).
 * The gate would refuse those requests anyway, on every run, and the summary's refusals would
 * then be the harness's rather than the agent's. A { name, value } list ending in NULLs; a
 * variable the policy sets itself (--env, --secret) wins. */
extern const struct harness_env {
        const char *name, *value;
        harness_kind harness; /* whose it is */
} harness_quiet_env[];
#define HARNESS_QUIET_MAX 3

/* Refuse a reasoning level the run's harness does not have (-EINVAL, naming its levels):
 * pi's are off, minimal, low, medium, high, xhigh; claude's low, medium, high, xhigh, max
 * (its effort levels). "host" and other commands take any. */
int harness_thinking_check(const aisb_policy *p, aisb_error **err);
/* The variable that carries the level to the run's harness (claude: CLAUDE_CODE_EFFORT_LEVEL),
 * or NULL: none, the level is "host", or the policy sets that variable itself. pi's level goes
 * into its bridged settings instead. */
const char *harness_thinking_env(const aisb_policy *p);

typedef struct harness_bridge {
        char *seed_dir;   /* ephemeral home: the bridged files, in the run directory */
        char *agents_dir; /* mounted read-only at ~/.agents, or NULL */
} harness_bridge;
void harness_bridge_done(harness_bridge *b);
/* Whether this policy's command is a harness whose bridge is not declined (no-harness-config;
 * for pi no-pi-config too). */
bool harness_bridge_applies(const aisb_policy *p);
/* The harness's configuration directory in the sandbox (~/.pi/agent, ~/.claude, ~/.codex), or
 * NULL when the command is none. */
const char *harness_sandbox_dir(const aisb_policy *p);

/* The host's directories a run mounts read-only for its harness: claude's commands/, agents/
 * and skills/ (those that exist, in $CLAUDE_CONFIG_DIR or ~/.claude), at ~/.claude/NAME. */
#define HARNESS_MOUNTS_MAX 3
typedef struct harness_mount {
        char *source;
        const char *destination;
} harness_mount;
int harness_mounts(const aisb_policy *p, harness_mount ret[static HARNESS_MOUNTS_MAX], size_t *ret_n);
void harness_mounts_done(harness_mount *m, size_t n);
/* The directory a run mounts at ~/.agents (aisb_policy_agents_dir): NULL in *ret for none,
 * with why in why (may be NULL). -ENOMEM. */
int harness_agents_dir(const aisb_policy *p, char **ret, const char **why);
/* The harness's part of a plan's facts, asked of its backend once (plan_gather). */
typedef struct harness_facts {
        bool bridges;             /* harness_bridge_applies */
        const char *thinking_env; /* harness_thinking_env; static */
        const char *sandbox_dir;  /* harness_sandbox_dir; static */
        char *agents_dir;         /* harness_agents_dir: mounted read-only at ~/.agents; NULL: none */
        harness_mount mounts[HARNESS_MOUNTS_MAX]; /* harness_mounts */
        size_t n_mounts;
        const struct harness_env *quiet[HARNESS_QUIET_MAX]; /* those the policy does not set itself */
        size_t n_quiet;
} harness_facts;
/* check: the level checked first (harness_thinking_check, its -EINVAL); mounts: the agents
 * directory and the read-only mounts looked for too. -ENOMEM. */
int harness_gather(const aisb_policy *p, bool check, bool mounts, harness_facts *ret, aisb_error **err);
void harness_facts_done(harness_facts *f);
/* Bridge the harness's configuration into the sandbox's home (the home volume, or for an ephemeral
 * home the run directory's seed), and warn once when the agents directory changed and holds
 * what looks like a credential. Nothing is written in a dry run. */
int harness_bridge_prepare(aisb_ctx *ctx, const aisb_policy *p, run_dir *rd, harness_bridge *ret,
                           aisb_error **err);
/* What the bridge would do, as "bridge-...=" lines for aisb inspect: names and types, never
 * a value. */
int harness_describe(const aisb_policy *p, buffer *b);
/* The files the bridge writes for a fresh home (an ephemeral home's seed: the host's settings
 * with policy on top, nothing of an earlier run's), into the empty directory dir: what aisb
 * kube gives a pod, whose home is new each start. Nothing when the bridge does not apply. */
int harness_bridge_fresh(aisb_ctx *ctx, const aisb_policy *p, int dir, aisb_error **err);
