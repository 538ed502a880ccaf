/* SPDX-License-Identifier: MIT */
/*
 * A run's decisions as one value. plan_gather() reads what a run depends on from the world
 * (the project's settings, once; the protected paths; the allowlist files, host addresses
 * and the names --no-gate pins; the project directory's identity; the agents directory; a
 * fresh name), with its
 * effects (a run's directory and its copy of the settings) only when asked for a run.
 * plan_build() is pure: from the policy and those facts it makes the network, the
 * environment (values, and what may be shown of them), the entrypoint's argv and the create
 * body, and the run's steps; the same inputs give the same bytes. The run applies the
 * steps (run.c), and every view of a run renders the plan: the dry run's steps, inspect and
 * its JSON, the printed ruleset and entrypoint plan, and aisb kube's pod (kube-pod.c, with a
 * pod's facts).
 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>

#include "container.h"
#include "security.h"
#include "harness.h"
#include "gate.h"
#include "image.h"
#include "network.h"
#include "project.h"
#include "protect.h"

/* What a plan needs from the world. Owned by the facts unless marked "borrowed". */
typedef struct plan_facts {
        unsigned podman_major;   /* 0: not known (planned as podman 4) */
        unsigned uid, gid;       /* the user, as the sandbox's files are theirs */
        long pid;                /* the run's process, for the sandbox's label */
        char *image;             /* the image's tag (its context's digest) */
        char *policy_hash;       /* over the policy's text with that tag and the settings' snapshot */
        image_facts built;       /* a run's (a dry run's too): the image's context, key and tag */
        char *name;              /* the sandbox's name */
        project_settings settings;
        char *settings_copy;     /* the run's copy of .ai-sandbox; a stand-in in a description */
        protect_plan protect;
        network_inputs net;
        bool have_project_id;
        unsigned long long project_dev, project_ino;
        /* Set once a gate serves the run (a description has the placeholder port). */
        unsigned gate_port;
        const char *gate_key, *gate_hash, *gate_ca; /* borrowed */
        harness_facts harness;   /* the harness's part: bridged, its variable, mounts */
        const char *seed_dir;    /* borrowed: the bridge's (an ephemeral home's harness files) */
        /* Borrowed: a review run's layer (review.h), once the run made it (a description has
         * stand-ins). */
        const char *review_upper, *review_work;
        /* Borrowed: a file at the project's top the entrypoint checks (review.h). */
        const char *review_anchor;
        unsigned long long review_anchor_ino;
        long long review_anchor_ctime_ns;
        bool terminal;
        /* What the policy means through the modules that read it, asked once here so that
         * building and every step read it from the plan (the harness's is above). */
        bool reviews;                /* plan_reviews */
        const char *net_name;        /* policy_net_name; static */
        const char *const *command;  /* policy_command; borrowed from the policy */
} plan_facts;
void plan_facts_done(plan_facts *f);

typedef enum plan_purpose {
        PLAN_DESCRIBE, /* nothing written, names and copies shown as stand-ins */
        PLAN_DRY_RUN,  /* as a description, after a run's checks and with its image's facts */
        PLAN_RUN,      /* the same, with a run's directory and its copy of the settings made */
} plan_purpose;

typedef struct plan_gather_options {
        plan_purpose purpose;
        unsigned podman_major; /* the connected service's major version; 0: not known */
        run_dir *run_dir;      /* PLAN_RUN: where the copy of the settings goes */
        const char *image;     /* PLAN_DESCRIBE: the image's tag (image.c); NULL: a stand-in */
        /* Only what the network and the entrypoint's ruleset need (--print-ruleset): the
         * protected paths and the agents directory are not looked for. */
        bool network_only;
        bool terminal;         /* the sandbox gets a terminal */
} plan_gather_options;
/* The harness's part first (harness_gather). For a run (PLAN_DRY_RUN, PLAN_RUN), the checks
 * no run goes past: the reasoning level, a project that is not what it seems
 * (project_check_home, project_check_reached) or a create patch in a place the sandbox could
 * rewrite; then the image's facts (image_gather). */
int plan_gather(const aisb_policy *p, const plan_gather_options *o, plan_facts *ret, aisb_error **err);
/* Whether the policy with these facts goes through a gate (the run starts it, and sets the
 * facts' gate fields before building). */
bool plan_needs_gate(const aisb_policy *p, const plan_facts *f);
/* Whether a run of the policy keeps the agent's writes in a review layer (the key review, with
 * a project of its own). */
/* Whether a run asks about names no entry lists (the key ask; auto: on a terminal). */
bool plan_asks(const aisb_policy *p, bool terminal);
bool plan_reviews(const aisb_policy *p);
/* What the run asks of its gate; list borrowed from f. */
gate_request plan_gate_request(const aisb_policy *p, const plan_facts *f);

/* The run as an ordered list of steps (bubblewrap's op list; the entrypoint's parse, then
 * apply). Each reads slots that steps before it fill (the facts' gate, seed and layer fields)
 * and fills its own; the run applies them in order (run.c) and, on any way out, ends the
 * finished ones in reverse; every view (the dry run's requests, inspect --json) renders this
 * list. The create step renders the create body from the plan with the slots filled
 * (plan_render): the same function a description uses with stand-ins. */
typedef enum plan_step {
        PLAN_STEP_IMAGE,   /* the image, built when its tag is missing */
        PLAN_STEP_VOLUME,  /* the home volume, created with aisb's labels when missing */
        PLAN_STEP_NETWORK, /* the sandbox's network, said */
        PLAN_STEP_GATE,    /* the gate serves the run: fills the gate slot (port, key, hash, CA) */
        PLAN_STEP_BRIDGE,  /* the home reset and the harness's configuration: fills the seed slot */
        PLAN_STEP_KEEP,    /* the review layer or the undo record: fills the layer slot */
        PLAN_STEP_PROTECT, /* the protected paths said; swept for what appeared, at the end */
        PLAN_STEP_CREATE,  /* the create body rendered from the slots, and sent */
        PLAN_STEP_ATTACH,  /* before start, so that no output is lost */
        PLAN_STEP_START,
        PLAN_STEP_STREAM,  /* the terminal or the streams, to the end */
        PLAN_STEP_WAIT,    /* the exit code */
        _PLAN_STEP_MAX,
} plan_step;
#define PLAN_STEPS_MAX _PLAN_STEP_MAX
/* The slots: what a step makes that a later one reads. */
enum {
        PLAN_SLOT_GATE = 1 << 0,    /* the gate's port, key, hash and CA */
        PLAN_SLOT_SEED = 1 << 1,    /* the bridged files of an ephemeral home */
        PLAN_SLOT_LAYER = 1 << 2,   /* a review run's layer and its anchor */
        PLAN_SLOT_SANDBOX = 1 << 3, /* the sandbox's id */
        PLAN_SLOT_STREAM = 1 << 4,  /* the attach stream */
};
typedef struct plan_step_info {
        const char *name, *what;
        unsigned reads, makes; /* PLAN_SLOT_* */
} plan_step_info;
extern const plan_step_info plan_steps[_PLAN_STEP_MAX];

/* A value of its own: it holds nothing of the policy it was built from, which each renderer
 * is given beside it. */
typedef struct run_plan {
        char *image, *name, *policy_hash;
        const char *home_volume;    /* borrowed; NULL for an ephemeral home */
        json_object *volume_labels; /* the home volume's, when there is one */
        sandbox_network net;
        bool needs_gate;
        char **env;                 /* NAME=VALUE, every variable the sandbox gets */
        char **env_shown;           /* the same, what a dry run or inspect may show */
        char **entrypoint;          /* the entrypoint's argv, up to and including "--" */
        json_object *body;          /* the create body, secret values and all */
        json_object *shown;         /* the create body as shown (values redacted) */
        char **patched;             /* the fields --unsafe-create-patch changed */
        char *patch_warning;        /* what they give up, said on every run (NULL: none) */
        plan_step steps[PLAN_STEPS_MAX]; /* what the run applies, in order */
        size_t n_steps;
} run_plan;
void run_plan_done(run_plan *plan);

/* Pure. The steps, and the create body rendered from the facts' slots (stand-ins where a
 * step has not filled one yet). -EINVAL with one line for a plan the policy cannot have (an
 * empty allowlist in allow mode, a create patch that does not apply); -ENOMEM. */
int plan_build(const aisb_policy *p, const plan_facts *f, run_plan *ret, aisb_error **err);
/* Pure. The parts of plan that read the slots (the network, the environment, the entrypoint's
 * argv, the create body), rendered again from f once the steps have filled them. */
int plan_render(const aisb_policy *p, const plan_facts *f, run_plan *plan, aisb_error **err);


/* The plan as JSON, for review (aisb inspect --json): never a secret value. */
int plan_to_json(const run_plan *plan, const plan_facts *f, json_object **ret);
/* The plan's steps as the dry run shows them, in order: each step's requests to the service
 * (the image's, the home volume's, the create body as shown, attach, start, wait, and the
 * remove that ends the create step), or a comment line for a step that sends none. */
int plan_requests(const aisb_policy *p, const run_plan *plan, const plan_facts *f, char ***ret);

/* ---- builders every view shares ---- */

/* The proxy variables for a sandbox that reaches the outside through url (NAME=VALUE
 * appended to env): the four proxy variables, git's basic authentication when the url has a
 * key, Node's, and NO_PROXY naming the loopback and the allowlist's address entries, which
 * are reached directly. */
int plan_proxy_env(const allowlist *l, const char *url, bool has_key, char ***env);

/* What the entrypoint is told. */
typedef struct entrypoint_spec {
        bool keep_root;          /* --keep-root, else --uid/--gid */
        bool no_ids;             /* neither (--ruleset-only) */
        unsigned uid, gid;
        const char *const *net_args; /* --net MODE [--allow DEST]... */
        bool allow_unenforced;
        bool ruleset_only;       /* install and verify, then exit: no "--" */
        const char *const *expect; /* PATH:DEV:INO of each mount it checks */
        const char *const *expect_file; /* PATH:INO:CTIME_NS of each file it checks */
        bool ca_bundle;
        const char *seed_dest;   /* where the entrypoint copies the seed (the harness's directory); NULL: none */
} entrypoint_spec;
int plan_entrypoint_argv(const entrypoint_spec *s, char ***ret);
