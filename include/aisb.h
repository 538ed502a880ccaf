/* SPDX-License-Identifier: MIT */
/*
 * libaisb: run a command inside a rootless podman sandbox, driven over podman's REST API.
 *
 * Conventions, for every function below:
 *  - Calls that can fail return 0 on success or a negative errno-style value, and then set
 *    *err (when err is not NULL) to a new aisb_error the caller frees with aisb_error_free().
 *    On success *err is left untouched. Messages say what to do about the failure.
 *  - Handles are opaque; every *_free() accepts NULL.
 *  - Strings returned through ret_ parameters are owned by the caller (free()).
 *  - The library never prints and never exits; it reports through the error contract and
 *    the callbacks the caller installs.
 *  - A callback with more than one datum to pass takes one struct the library fills and the
 *    caller's pointer, fn(const aisb_X *x, void *userdata); the struct is valid during the
 *    call only, and fields may be added at its end. What happens while the library works (its messages, a
 *    build's output, a run's steps, its egress) comes as events, through one callback
 *    (aisb_ctx_set_event_fn); a handler ignores the kinds of event it does not know.
 *  - A yes/no choice of a call is a named bit of its unsigned flags (aisb_kube_push's
 *    tls_verify aside, for now); a bit the call does not know is refused with -EINVAL.
 *  - Thread safety: a handle must not be used from two threads at once; distinct handles
 *    are independent. The one exception is aisb_ctx_cancel(), which any thread (or a signal
 *    handler) may call while another uses the context.
 */
#ifndef AISB_H
#define AISB_H

#include <stddef.h>

/* AISB_VERSION_MAJOR, _MINOR, _MICRO, AISB_VERSION_STRING and AISB_CHECK_VERSION(major,
 * minor, micro): the version of these headers, for #if (aisb_version() is the library's). */
#include "aisb-version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define AISB_PUBLIC __attribute__((visibility("default")))
#else
#define AISB_PUBLIC
#endif

/* ---- errors ---- */

typedef struct aisb_error aisb_error;

/* The negative errno-style code of the failure (e.g. -EINVAL for bad input). */
AISB_PUBLIC int aisb_error_code(const aisb_error *error);
/* One line, no trailing newline. Valid until aisb_error_free(). */
AISB_PUBLIC const char *aisb_error_message(const aisb_error *error);
AISB_PUBLIC void aisb_error_free(aisb_error *error);

/* ---- policy: everything that decides what a sandbox is ---- */

typedef struct aisb_policy aisb_policy;

/*
 * A policy with the defaults of every key (see aisb_policy_key_at(): net = allow, the default
 * base image and caps, the harness pi) and nothing from the process: no project, no
 * environment variable, no current directory. A policy with no project is a scratch sandbox,
 * as no-cwd = true makes one: nothing is mounted at /project, the command starts in
 * /home/sandbox, and the home is the volume that scratch sandboxes share (aisb-home-scratch).
 * aisb_policy_apply_environment() or the "project" key give it one.
 */
AISB_PUBLIC int aisb_policy_new(aisb_policy **ret_policy, aisb_error **err);
AISB_PUBLIC void aisb_policy_free(aisb_policy *policy);

/*
 * What aisb(1) takes from its process, applied to policy in one call, as if each were a key
 * set now (what it applies replaces what was set before: call it first, then the config file
 * and the caller's own keys, so that those win):
 *  - project: the current directory (-EPERM when a mount's source is inside it, as the
 *    "project" key refuses; the errno of getcwd() when it cannot be read);
 *  - home-volume: $AISB_HOME_VOLUME, when set and not empty;
 *  - thinking: $AISB_THINKING, when set and not empty (-EINVAL when it names no level);
 *  - entrypoint: $AISB_ENTRYPOINT, when set and not empty, read with secure_getenv(): a
 *    set-user-ID or set-group-ID program ignores it;
 *  - the variables a sandbox inherits without being named: TERM, LANG, LC_ALL, LC_CTYPE and
 *    TZ, those that are set.
 * Nothing else in the library reads these. A failure other than -ENOMEM changes nothing.
 */
AISB_PUBLIC int aisb_policy_apply_environment(aisb_policy *policy, aisb_error **err);

/*
 * Set one key, named as the CLI flag without its dashes (aisb_policy_key_at() lists them;
 * aisb(1) and docs/config.md describe them): "memory", "cpus", "base-image", "install",
 * "env", ... Repeatable keys (AISB_POLICY_KEY_REPEATABLE: "env", "mount", "install", ...)
 * append. A boolean's value may be NULL, for true. Values are checked here: -EINVAL with a
 * message naming the key on bad input, -ENOKEY for an unknown key; a set that fails leaves
 * the policy unchanged. For "env" a bare NAME is read from the caller's environment at this
 * point; an unset NAME is an error.
 */
AISB_PUBLIC int aisb_policy_set(aisb_policy *policy, const char *key, const char *value,
                                aisb_error **err);

enum {
        AISB_CONFIG_OPTIONAL = 1 << 0, /* a missing file is not an error: nothing is read */
};
/* Read "key = value" lines from path. flags: AISB_CONFIG_OPTIONAL or 0; -EINVAL for a bit
 * it does not know. */
AISB_PUBLIC int aisb_policy_load_config(aisb_policy *policy, const char *path, unsigned flags,
                                        aisb_error **err);

/* The command run in the sandbox; argv is NULL-terminated and copied. NULL or an empty argv
 * restores the default (the harness, "pi"). */
AISB_PUBLIC int aisb_policy_set_command(aisb_policy *policy, const char *const *argv,
                                        aisb_error **err);

/* Arguments for the harness (pi, or the "harness" key's choice): the command becomes the
 * harness followed by argv. Ignored once a command is set. */
AISB_PUBLIC int aisb_policy_set_harness_args(aisb_policy *policy, const char *const *argv,
                                             aisb_error **err);

/* The effective policy as "key=value" lines (environment values are never included): the
 * image tag ("image="), then each key in the order of aisb_policy_key_at() (the keys of the
 * allowlist with net = allow only; each allowlist entry with where it came from, and the
 * gate that serves them, "gate="), then the command ("command="). */
AISB_PUBLIC int aisb_policy_format(const aisb_policy *policy, char **ret_text, aisb_error **err);

/* The Containerfile this policy builds. */
AISB_PUBLIC int aisb_policy_containerfile(const aisb_policy *policy, char **ret_text,
                                          aisb_error **err);

/* The egress ruleset the sandbox's entrypoint installs for this policy, in nft syntax. */
AISB_PUBLIC int aisb_policy_ruleset(const aisb_policy *policy, char **ret_text, aisb_error **err);

/* The entrypoint's plan for this policy: its steps, the capabilities it starts with and
 * drops, the seccomp denials. */
AISB_PUBLIC int aisb_policy_entrypoint_plan(const aisb_policy *policy, char **ret_text,
                                            aisb_error **err);

/* ---- policy keys: what aisb_policy_set() takes, described ---- */

/*
 * One key of the policy. The library owns these (static data, valid for the life of the
 * process); the caller never allocates one. Fields may be added at the end. The one table
 * they come from drives aisb_policy_set(), aisb_policy_get(), aisb_policy_format(), the
 * config file, and aisb(1)'s options, --help, man page and completions.
 */
typedef struct aisb_policy_key {
        const char *name;        /* "memory": the config file's key, aisb(1)'s --memory */
        const char *placeholder; /* what the value is, for help: "SIZE", "NAME:IP"; "BOOL" */
        const char *help;        /* one line, without the default and "(repeatable)" */
        /* The key's value in a policy from aisb_policy_new(), exactly as aisb_policy_get()
         * gives it ("4g"); NULL when it has none, is false, or is derived from other keys
         * (home-volume, no-cwd: the help says how). */
        const char *default_text;
        unsigned flags; /* AISB_POLICY_KEY_* */
} aisb_policy_key;

enum {
        AISB_POLICY_KEY_BOOLEAN = 1 << 0,     /* true/false, yes/no, on/off, 1/0; no value: true */
        AISB_POLICY_KEY_REPEATABLE = 1 << 1,  /* each set adds one more value */
        AISB_POLICY_KEY_IMAGE = 1 << 2,       /* decides the image, and so its tag */
        AISB_POLICY_KEY_CONFIG_ONLY = 1 << 3, /* aisb(1) takes it in the config file only */
};

/* The keys, in the order aisb(1)'s --help and aisb_policy_format() list them. */
AISB_PUBLIC size_t aisb_policy_key_count(void);
/* NULL when index >= aisb_policy_key_count(). */
AISB_PUBLIC const aisb_policy_key *aisb_policy_key_at(size_t index);
/* NULL when no key has this name. */
AISB_PUBLIC const aisb_policy_key *aisb_policy_key_find(const char *name);

/*
 * A key's value, as aisb_policy_set() takes it ("4g", "true", "/dev/kvm", a mount's source
 * resolved); *ret_value is NULL when the key has none (an unset proxy, an empty
 * list, no project). A repeatable key gives its values one a line. "env" gives names, never a
 * value, and nothing is read from the environment. -ENOKEY for an unknown key.
 */
AISB_PUBLIC int aisb_policy_get(const aisb_policy *policy, const char *key, char **ret_value,
                                aisb_error **err);
/* The same as a NULL-terminated array, one string a value (a path may hold a newline):
 * free() each string, then the array. */
AISB_PUBLIC int aisb_policy_get_values(const aisb_policy *policy, const char *key,
                                       char ***ret_values, aisb_error **err);

/* ---- context: one connection to the podman service ---- */

typedef struct aisb_ctx aisb_ctx;

AISB_PUBLIC int aisb_ctx_new(aisb_ctx **ret_ctx, aisb_error **err);
AISB_PUBLIC void aisb_ctx_free(aisb_ctx *ctx);

/* Use this API socket instead of discovering one. No transient service is started then.
 * Connecting refuses it (-EPERM) unless the user or root owns it and every directory above
 * it, and no one else can write those directories (a root-owned sticky one like /tmp
 * aside): everything sent there, secret values included, goes to whoever put it there. */
AISB_PUBLIC int aisb_ctx_set_socket(aisb_ctx *ctx, const char *path, aisb_error **err);

/* Dry run: aisb_run and aisb_image_ensure make their plan as a run would, from what is known
 * without the service, and pass each request of it to fn as text (method, path, body with
 * secret values redacted; an image as if it had to be built, the gate's port, the run
 * directory's copies and the name's random part as stand-ins) instead of sending it.
 * Nothing is connected, started or written. Other calls on the context are not affected. */
typedef void (*aisb_request_fn)(const char *text, void *userdata);
AISB_PUBLIC void aisb_ctx_set_dry_run(aisb_ctx *ctx, aisb_request_fn fn, void *userdata);

/* Find the API socket (CONTAINER_HOST, $XDG_RUNTIME_DIR, /run/user/UID, podman 4.x's /tmp
 * fallback), start a transient "podman system service" when none answers, and check the
 * version (podman >= 4.3). Called implicitly by the calls below. A found socket that another
 * user could have put there is skipped with a warning (an AISB_EVENT_LOG event);
 * CONTAINER_HOST naming one is refused (-EPERM), and so is starting a service in another
 * user's directory. */
AISB_PUBLIC int aisb_ctx_connect(aisb_ctx *ctx, aisb_error **err);

/* After a successful connect: the service's version ("4.3.1") and socket path. */
AISB_PUBLIC const char *aisb_ctx_podman_version(const aisb_ctx *ctx);
AISB_PUBLIC const char *aisb_ctx_socket_path(const aisb_ctx *ctx);

/* How long one request to the service may take before it counts as hung and fails with
 * -ETIMEDOUT (default 90 000 ms; 0: no limit). Builds and imports are not bounded as a whole,
 * only by 30 minutes without a byte; a run's command runs as long as it runs. */
AISB_PUBLIC void aisb_ctx_set_timeout(aisb_ctx *ctx, unsigned long milliseconds);

/*
 * Stop the operation in progress on ctx (aisb_run, aisb_image_ensure, a gate's start, ...),
 * or the next one when none is: it returns -ECANCELED, and whatever it created is removed
 * first (a run's sandbox, a half-started gate). Safe from any thread and from a signal
 * handler: it sets a flag and writes an eventfd, nothing else. The request being sent when
 * the stop is seen is cut short, except those that clean up.
 */
AISB_PUBLIC void aisb_ctx_cancel(aisb_ctx *ctx);

/* ---- events: what happens, typed ---- */

/*
 * Everything the library has to say while it works comes through one callback
 * (aisb_ctx_set_event_fn) as an event of one of these kinds. Kinds may be added: a handler
 * ignores the kinds it does not know.
 */
typedef enum aisb_event_type {
        AISB_EVENT_LOG = 1,          /* level, text: a warning, progress or debug detail */
        AISB_EVENT_BUILD_OUTPUT = 2, /* level, text: one line of an image build's output */
        AISB_EVENT_STEP = 3,         /* step (and its name as text): a run's step begins */
        AISB_EVENT_EGRESS = 4,       /* egress: what a run sent through its gate */
        AISB_EVENT_ASK = 5,          /* question: a name no entry lists is held; aisb_ask_reply */
} aisb_event_type;

typedef enum aisb_log_level {
        AISB_LOG_DEBUG = 0,
        AISB_LOG_INFO = 1,
        AISB_LOG_WARNING = 2,
} aisb_log_level;

typedef enum aisb_step {
        AISB_STEP_IMAGE = 1,
        AISB_STEP_VOLUME,
        AISB_STEP_NETWORK,
        AISB_STEP_GATE,
        AISB_STEP_BRIDGE,
        AISB_STEP_CREATE,
        AISB_STEP_START,
        AISB_STEP_STREAM,
        AISB_STEP_REMOVE,
} aisb_step;

/* A run's egress summary. Fields may be added at the end. */
typedef struct aisb_egress {
        unsigned long allowed;
        unsigned long denied; /* refused by the gate */
        unsigned long failed; /* let through, but did not complete */
        const char *const *denied_names; /* NULL-terminated, at most 8 each */
        const char *const *failed_names;
        /* "METHOD URL" of refused requests the gate saw whole: plain HTTP, and the HTTPS of
         * hosts it intercepts (rules, secrets). NULL-terminated, at most 8. */
        const char *const *denied_requests;
} aisb_egress;

/* What the user says to a question. */
typedef enum aisb_answer {
        AISB_ANSWER_DENY = 0,    /* refuse it (the sandbox reads the gate's page) */
        AISB_ANSWER_RUN = 1,     /* allow it for the rest of this run */
        AISB_ANSWER_PROJECT = 2, /* allow it, and add it to the project's .ai-sandbox/allow */
        AISB_ANSWER_USER = 3,    /* allow it, and add it to the user's allowlist */
} aisb_answer;

/*
 * A request for a name no allowlist entry lists, held by the run's own gate (the policy's
 * key ask) until it is answered: through aisb_ask_reply, through aisb_question_answer from
 * another process of the user's, or with a refusal after the key ask-timeout. The name is not
 * resolved before it is allowed, and then passes the address checks of any listed name. One
 * question per name and port; the answer holds for the rest of the run. Fields may be added
 * at the end; strings are valid during the callback only.
 */
typedef struct aisb_question {
        const char *run;       /* the run that asks: its sandbox's name */
        unsigned long id;      /* the question, within its run */
        const char *name;      /* lower-case letters, digits, '.', '-', '_' */
        unsigned port;
        const char *method;    /* CONNECT for a tunnel (HTTPS), else the request's */
        const char *path;      /* a plain request's URL path as the gate saw it (URL-encoded,
                                * at most 200 bytes), "" for a tunnel; the sandbox chose it */
        unsigned waiting;      /* requests held on it */
        unsigned seconds_left; /* until it is refused */
        /* The sandbox's terminal shows its alternate screen (CSI ?1049h, ?1047h or ?47h):
         * a caller that draws over it asks for a redraw (AISB_ASK_REDRAW). */
        int alternate_screen;
} aisb_question;

/*
 * One event. The library fills it, and it is valid during the callback only. Fields may be
 * added at the end; a field a kind does not use is zero (NULL).
 */
typedef struct aisb_event {
        aisb_event_type type;
        /* LOG: how much the message matters (a caller shows warnings, and progress unless
         * asked to be quiet). BUILD_OUTPUT: AISB_LOG_INFO for the lines that mark progress (a
         * step begins, a step's layer comes from the cache, the image is committed),
         * AISB_LOG_DEBUG for the output of the steps' commands; the level goes by the line's
         * text alone, so a step's command can print a line that reads as progress: use it
         * to choose what to show, never to decide anything. AISB_LOG_INFO for the others. */
        aisb_log_level level;
        /* LOG: the message; BUILD_OUTPUT: the line, as the service streams it; STEP: the
         * step's name. One line, no newline; never a secret's value. */
        const char *text;
        const aisb_egress *egress; /* EGRESS */
        aisb_step step;            /* STEP */
        const aisb_question *question; /* ASK */
} aisb_event;

/* Called on the thread of the operation, with data valid during the call only. Return 0, or
 * nonzero to stop the operation as aisb_ctx_cancel() would (a build ends at once). Without
 * a callback the library's messages are dropped. */
typedef int (*aisb_event_fn)(const aisb_event *event, void *userdata);
AISB_PUBLIC void aisb_ctx_set_event_fn(aisb_ctx *ctx, aisb_event_fn fn, void *userdata);

/* ---- image ---- */

/* The image tag this policy runs, "localhost/aisb:<content hash>". Computed locally. */
AISB_PUBLIC int aisb_image_tag(const aisb_policy *policy, char **ret_tag, aisb_error **err);

/* Make sure the image exists: reuse it when its tag exists, build it otherwise (and the
 * bootstrap base first, for "bootstrap:debian:SUITE"). For a policy whose runs go through
 * aisb's gate (allow mode without a proxy or no-gate), when the image must be built and the
 * gate's image is missing too, that one is built at the same time (on a thread and a
 * connection of its own; its output is not passed to the event callback) and waited for; if it
 * failed there, the run's gate step builds it again. *ret_built (may be NULL) says whether a
 * build ran. */
AISB_PUBLIC int aisb_image_ensure(aisb_ctx *ctx, const aisb_policy *policy, char **ret_tag,
                                  int *ret_built, aisb_error **err);

/* ---- run ---- */

typedef struct aisb_io aisb_io;

enum {
        AISB_STREAM_STDOUT = 1,
        AISB_STREAM_STDERR = 2,
};

/* Some output of the sandbox (valid during the callback only). Fields may be added at the
 * end. */
typedef struct aisb_output {
        int stream; /* AISB_STREAM_STDOUT or AISB_STREAM_STDERR */
        const void *data;
        size_t size;
} aisb_output;
/* Output from the sandbox. Return 0, or a negative errno to abort the run. */
typedef int (*aisb_output_fn)(const aisb_output *output, void *userdata);

enum aisb_control {
        AISB_CONTROL_NONE = 0,   /* nothing to do */
        AISB_CONTROL_RESIZE = 1, /* the terminal changed size: rows and cols are set */
        AISB_CONTROL_STOP = 2,   /* stop and remove the sandbox now */
};
/* What the control callback is asked and answers. Fields may be added at the end. */
typedef struct aisb_control_request {
        int fd; /* the control fd, readable */
        /* For AISB_CONTROL_RESIZE, the callback sets the terminal's new size here. */
        unsigned short rows, cols;
} aisb_control_request;
/* Called when the control fd is readable; the callback must consume what made it so, and
 * returns one of enum aisb_control. */
typedef int (*aisb_control_fn)(aisb_control_request *request, void *userdata);

/* Defaults: stdin 0, stdout 1, stderr 2, no terminal, no control fd, no output filter. */
AISB_PUBLIC int aisb_io_new(aisb_io **ret_io, aisb_error **err);
AISB_PUBLIC void aisb_io_free(aisb_io *io);
/* in_fd -1: the command's stdin is at EOF from the start. */
AISB_PUBLIC void aisb_io_set_stdin(aisb_io *io, int in_fd);
/* Replace writing to fds 1 and 2 with fn. fn gets what the output filter let pass, when one
 * is set (aisb_io_set_output_filter). */
AISB_PUBLIC void aisb_io_set_output_fn(aisb_io *io, aisb_output_fn fn, void *userdata);
/*
 * Take the terminal's control strings out of these streams' output before it is written, or
 * before it is passed to the output callback: streams is a bitwise OR of AISB_STREAM_STDOUT
 * and AISB_STREAM_STDERR, or 0 (the default) for none. Set it for each stream that reaches a
 * terminal, where these strings let the command set the window title, write the clipboard or
 * have the terminal type the clipboard into its stdin (OSC 52), send files, or talk past tmux
 * to the terminal behind it. Removed whole: OSC (ESC ]), DCS (ESC P), SOS (ESC X), PM (ESC ^),
 * APC (ESC _), screen's and tmux's title (ESC k), and the UTF-8 forms of the C1 introducers
 * (U+0090, U+0098, U+009D, U+009E, U+009F); every OSC, hyperlinks (OSC 8) too, whose text
 * stays. Everything else passes byte for byte, CSI and SGR included. In terminal mode the
 * sandbox's terminal is the AISB_STREAM_STDOUT stream. A stream without its bit set is not
 * looked at.
 */
AISB_PUBLIC void aisb_io_set_output_filter(aisb_io *io, unsigned streams);
/* Terminal mode: the sandbox gets a pty of rows x cols; the caller owns raw mode. */
AISB_PUBLIC void aisb_io_set_terminal(aisb_io *io, unsigned short rows, unsigned short cols);
AISB_PUBLIC void aisb_io_set_control(aisb_io *io, int fd, aisb_control_fn fn, void *userdata);

/*
 * Build or reuse the image, create the sandbox, attach, start, stream until the command
 * ends, and remove the sandbox. *ret_exit_code is the command's exit status. When the
 * control callback asks to stop, the sandbox is removed and -ECANCELED returned. Before the
 * sandbox exists the control fd is polled too (between steps, during each request to the
 * service, while the gate starts), so a stop then ends the run at once with -ECANCELED; a
 * resize read meanwhile is applied when the sandbox starts. When the output can no longer
 * be written because its reader went away (`aisb run ... | head`), the sandbox is removed
 * and -EPIPE returned. Nothing of the run is left behind, on success or failure.
 */
AISB_PUBLIC int aisb_run(aisb_ctx *ctx, const aisb_policy *policy, aisb_io *io,
                         int *ret_exit_code, aisb_error **err);

/* ---- asking about a name no entry lists ---- */

enum {
        /* The caller drew over the sandbox's terminal: the sandbox is made to redraw (its
         * terminal is resized, and back), whether the answer is taken or not. */
        AISB_ASK_REDRAW = 1 << 0,
};
/* Answer a question of the run in progress on ctx (AISB_EVENT_ASK): from the event callback
 * or from another callback of the run, on its thread. While the event callback runs, the
 * run's output and input wait: a caller may ask on the terminal then. -ENOENT when the
 * question is no longer waiting. */
AISB_PUBLIC int aisb_ask_reply(aisb_ctx *ctx, unsigned long id, aisb_answer answer, unsigned flags,
                               aisb_error **err);
/* From the event callback of question id: wait until fd (the caller's input) is readable,
 * while the run goes on serving what does not need the sandbox's streams: answers from
 * aisb_question_answer, the question's timeout, and the control fd (a resize is applied
 * afterwards; a stop is taken). 1: fd is readable (or hung up); 0: the question no longer
 * waits (answered from elsewhere, or refused as its time ran out): do not reply; -ECANCELED:
 * the run is stopping (the question is refused as it ends); another negative errno on
 * failure. */
AISB_PUBLIC int aisb_ask_wait(aisb_ctx *ctx, unsigned long id, int fd);
/* The questions waiting in every run of this user, asked of each run through its socket
 * (which only the user can open). fn's nonzero return stops the walk and is returned. */
typedef int (*aisb_question_fn)(const aisb_question *question, void *userdata);
AISB_PUBLIC int aisb_questions(aisb_question_fn fn, void *userdata, aisb_error **err);
/* Answer question id of run (aisb_question.run) from another process. -ENOENT when it no
 * longer waits, -ECONNREFUSED (or another errno) when the run is gone. */
AISB_PUBLIC int aisb_question_answer(const char *run, unsigned long id, aisb_answer answer, aisb_error **err);

/* ---- the gate: the egress proxy of --net allow, one per allowlist ---- */

/* Start this policy's gate unless it runs already; its container name and port. */
AISB_PUBLIC int aisb_gate_up(aisb_ctx *ctx, const aisb_policy *policy, char **ret_name,
                             unsigned *ret_port, aisb_error **err);
/* Remove this policy's gate (a run that needs it starts it again). */
AISB_PUBLIC int aisb_gate_down(aisb_ctx *ctx, const aisb_policy *policy, aisb_error **err);
/* One gate of this user (strings valid during the callback only). Fields may be added at
 * the end. */
typedef struct aisb_gate_entry {
        const char *name;        /* its container's */
        const char *policy_hash; /* the hash of the allowlist it serves */
        unsigned port;
        int answering;           /* running and accepting on its port */
} aisb_gate_entry;
/* Every gate of this user: fn once per gate. */
typedef void (*aisb_gate_fn)(const aisb_gate_entry *gate, void *userdata);
AISB_PUBLIC int aisb_gate_list(aisb_ctx *ctx, aisb_gate_fn fn, void *userdata, aisb_error **err);
/* Where this policy's gate writes its access log (one line per request). */
AISB_PUBLIC int aisb_gate_log_path(const aisb_policy *policy, char **ret_path, aisb_error **err);

/* ---- what is running, what is left over, what ran ---- */

/* One sandbox, gate or home volume of this user, a review run's layer or a project's undo
 * records (strings valid during the callback only). Fields may be added at the end. */
typedef struct aisb_list_entry {
        const char *name;    /* a layer's: its run's; undo records': undo-DIR-HASH */
        const char *kind;    /* "sandbox", "gate", "volume" (a home volume aisb made), "layer" or "undo" */
        const char *project; /* the project directory (may be NULL or "" for a sandbox or volume) */
        const char *net;     /* "allow", "none", "full"; "host" for gates */
        const char *policy;  /* policy hash (sandboxes) or allowlist hash (gates) */
        const char *image;
        /* podman's: "running", "exited", ...; volumes: "in-use", "unused"; layers: "running",
         * "ended"; undo records: "N runs" */
        const char *state;
        long long created;   /* Unix time */
        int orphaned;        /* a sandbox whose aisb process is gone */
        /* Gates: the running sandboxes it serves, and the seconds since its last request (or
         * its start); -1 for anything else, or when not known. */
        int users;
        long long idle_seconds;
        long long size;      /* layers and undo records: bytes on disk; -1 for anything else */
} aisb_list_entry;
typedef void (*aisb_list_fn)(const aisb_list_entry *entry, void *userdata);
AISB_PUBLIC int aisb_list(aisb_ctx *ctx, aisb_list_fn fn, void *userdata, aisb_error **err);

enum {
        AISB_CLEAN_ALL = 1 << 0,     /* also running gates and every aisb image */
        AISB_CLEAN_VOLUMES = 1 << 1, /* also aisb-* volumes no container uses */
        AISB_CLEAN_DRY_RUN = 1 << 2, /* report, remove nothing */
        AISB_CLEAN_LAYERS = 1 << 3,  /* also review layers of ended runs (changes not applied are lost) and undo records */
};
/* Remove stopped and orphaned sandboxes, stopped gates and runs' own gates whose run is gone
 * (a killed aisb's: they hold its secrets), unused aisb images except keep_image (the one the
 * next run needs; NULL for none), and with AISB_CLEAN_VOLUMES aisb-* volumes, narrowed by
 * volume_glob when not NULL. A gate's state directory goes with it, and any whose gate is
 * gone (no run holding it), its configuration zeroed first. fn is told each thing removed
 * (valid during the callback only; fields may be added at the end). Never touches anything
 * outside aisb's namespace. flags: AISB_CLEAN_*; -EINVAL for a bit it does not know. */
typedef struct aisb_clean_entry {
        const char *kind; /* "sandbox", "gate", "gate-state", "image", "volume", "layer" or "undo" */
        const char *name; /* a gate-state's: its directory */
} aisb_clean_entry;
typedef void (*aisb_clean_fn)(const aisb_clean_entry *removed, void *userdata);
AISB_PUBLIC int aisb_clean(aisb_ctx *ctx, unsigned flags, const char *volume_glob,
                           const char *keep_image, aisb_clean_fn fn, void *userdata,
                           aisb_error **err);

/* The session log: one JSON object a line per run (time, run, project, policy, image, net,
 * exit, env names, egress), never a value. */
AISB_PUBLIC int aisb_session_log_path(char **ret_path, aisb_error **err);
/* The egress record beside it: one JSON object a line per decision of a run's gate (time in
 * ms, run, name, port, method, url, status, decision, by, asked, answered_by, bytes_out,
 * bytes_in, shared_gate), written when the run ends. */
AISB_PUBLIC int aisb_egress_log_path(char **ret_path, aisb_error **err);

/* ---- learn, then lock: allowlist lines from what a run was refused ---- */

typedef void (*aisb_allow_fn)(const char *line, void *userdata);
/*
 * The allowlist lines that would have let the last run of this policy's project (the session
 * log's last record of it) through, names only: a name the gate refused ("example.com",
 * "host:8080"), or,
 * where the gate saw the refused request whole (plain HTTP, or a host it intercepts), that
 * request ("api.example.com GET /v1/models"). Each line is one the allowlist takes. fn gets
 * each; *ret_time (may be NULL) the run's time. Returns the number of lines (0 when the run was
 * refused nothing, or there is no run).
 */
AISB_PUBLIC int aisb_allow_proposals(const aisb_policy *policy, aisb_allow_fn fn, void *userdata,
                                     long long *ret_time, aisb_error **err);
/*
 * What aisb_allow_proposals leaves out: each address (IP literal, "ADDRESS[:PORT]") the gate
 * refused in that run, to fn. An address is never proposed: as an allowlist entry it would be
 * a rule straight to it in the sandbox's ruleset, past the gate, which refuses every address.
 * *ret_shared (may be NULL) tells whether that run's gate was shared (it had no --secret):
 * a shared gate serves every local client, so what it refused during the run may be another
 * local user's request or another run's; a run's own gate refuses and logs nothing of a
 * client without its key. Returns the number of addresses (0 also when there is no run).
 */
AISB_PUBLIC int aisb_allow_refused_addresses(const aisb_policy *policy, aisb_allow_fn fn, void *userdata,
                                             int *ret_shared, aisb_error **err);
enum {
        /* The project's .ai-sandbox/allow (names only, as its reader takes them) instead of
         * the user's allowlist. */
        AISB_ALLOWLIST_PROJECT = 1 << 0,
};
/* Append lines (NULL-terminated) to the user's allowlist, or with AISB_ALLOWLIST_PROJECT to
 * the project's, each checked first: nothing is written when one is refused. -EINVAL for a
 * flag it does not know. */
AISB_PUBLIC int aisb_allowlist_append(const aisb_policy *policy, unsigned flags, const char *const *lines,
                                      aisb_error **err);

/* ---- review and undo: the agent's changes kept apart, and a way back ---- */

/*
 * One change a review run's layer makes to its project (aisb_review_diff), or one path that
 * applying it or undoing a run acts on (strings valid during the callback only). Fields may be
 * added at the end. path is below the project and may hold any byte a file name can (a
 * newline, an escape sequence): print it with care.
 */
typedef struct aisb_change {
        const char *path;
        const char *change;  /* "added", "modified", "deleted", "replaced" (another type), "mode" */
        char type;           /* what is there after it: 'f' file, 'd' directory, 'l' link, 'o' other; 0 deleted */
        unsigned mode;       /* the permission bits it gets (never setuid, setgid or sticky) */
        int mode_stripped;   /* the agent's had setuid, setgid or sticky */
        unsigned long long size;
        const char *target;  /* a link's, as text (never followed) */
        /* Why it is never carried over ("a FIFO", "the project's path to it goes through a
         * link", ...), or NULL. */
        const char *refused;
        /* A protected path (the key protect, a git directory, a repository's hooks): applied
         * only when a path that apply is given names it. */
        int protected_path;
        const char *patch;   /* with AISB_REVIEW_PATCH, a text file's unified diff; else NULL */
        const char *patch_note; /* with AISB_REVIEW_PATCH, why there is no patch ("binary", ...) */
        /* apply and undo, what they did: "applied", "restored", "removed", "would apply",
         * "would restore", "would remove", "skipped", "conflict", "refused", "failed"; NULL in
         * a diff. reason says why for any but the first six. */
        const char *action;
        const char *reason;
} aisb_change;
typedef int (*aisb_change_fn)(const aisb_change *change, void *userdata);

enum {
        AISB_REVIEW_PATCH = 1 << 0, /* aisb_review_diff: each text file's unified diff too */
};
enum {
        AISB_APPLY_FORCE = 1 << 0,   /* also what the user changed since the run began (apply) or since it ended (undo) */
        AISB_APPLY_DRY_RUN = 1 << 1, /* say what would be done; change nothing */
};

/*
 * A review run (the key review, aisb run --review) of policy's project: run names it (its
 * sandbox's name aisb-DIR-XXXXXXXX, or the part after the last '-'), NULL the newest. Its
 * name in *ret_run when not NULL. fn gets each change, in path order; a nonzero return stops.
 * -ENOENT when the project has no such run. flags: AISB_REVIEW_*.
 */
AISB_PUBLIC int aisb_review_diff(const aisb_policy *policy, const char *run, unsigned flags, aisb_change_fn fn,
                                 void *userdata, char **ret_run, aisb_error **err);
/*
 * Carry the run's changes under paths (NULL: all of them; each relative to the project, and
 * each must name a change or a directory holding some) onto the project, one path at a time,
 * each atomically, never following a link (a link in the layer is made as a link; a path
 * through a link in the project is refused), never making a device, FIFO or socket, with
 * setuid, setgid and sticky cleared; a protected path only when a path given names it. A
 * path the user changed (or removed) in the project since the run began is a conflict, left
 * as it is unless AISB_APPLY_FORCE. fn hears of each path. Returns the number of paths not
 * applied (conflicts, refusals, failures; protected paths skipped do not count). -EBUSY while
 * the run goes on. flags: AISB_APPLY_*.
 */
AISB_PUBLIC int aisb_review_apply(const aisb_policy *policy, const char *run, const char *const *paths,
                                  unsigned flags, aisb_change_fn fn, void *userdata, char **ret_run,
                                  aisb_error **err);
/* Remove the run's layer (refused, -EBUSY, while it goes on). What the sandbox's overlay
 * left owned by the user's subordinate ids is removed in the user's rootless podman's user
 * namespace: ctx (may be NULL) starts a service when none runs. */
AISB_PUBLIC int aisb_review_discard(aisb_ctx *ctx, const aisb_policy *policy, const char *run, char **ret_run,
                                    aisb_error **err);
/*
 * Put policy's project back as it was before a plain run (the key undo records one; run as
 * above, NULL the newest not yet undone): what the run changed, made or deleted. A path the
 * user changed since the run ended is a conflict, left as it is unless AISB_APPLY_FORCE. fn
 * hears of each path. Returns the number of paths not put back. -ENOENT when the project has
 * no record of such a run. flags: AISB_APPLY_*.
 */
AISB_PUBLIC int aisb_undo(const aisb_policy *policy, const char *run, unsigned flags, aisb_change_fn fn,
                          void *userdata, char **ret_run, aisb_error **err);

/* ---- aisb doctor ---- */

typedef enum aisb_check_status {
        AISB_CHECK_OK = 0,
        AISB_CHECK_WARN = 1, /* works, but weaker or slower than it should */
        AISB_CHECK_FAIL = 2, /* blocks a run */
} aisb_check_status;
/* One check (strings valid during the callback only). Fields may be added at the end. */
typedef struct aisb_doctor_check {
        const char *name; /* "podman", "gate", ... */
        aisb_check_status status;
        const char *detail; /* what was found */
        const char *fix;    /* what to do; NULL when nothing is needed */
} aisb_doctor_check;
typedef void (*aisb_doctor_fn)(const aisb_doctor_check *check, void *userdata);
enum {
        /* Run real sandboxes too: the ruleset, an allowlisted request through the gate, a
         * refused one. */
        AISB_DOCTOR_DEEP = 1 << 0,
};
/* Check this host for running policy's sandboxes; flags: AISB_DOCTOR_* (-EINVAL for a bit it
 * does not know). Returns the number of failed checks, or a negative errno when the checks
 * themselves could not run. */
AISB_PUBLIC int aisb_doctor(aisb_ctx *ctx, const aisb_policy *policy, unsigned flags,
                            aisb_doctor_fn fn, void *userdata, aisb_error **err);

/* What a run of this policy would be, for review: the policy, the mounts, environment
 * names (never values), the allowlist with where each entry came from, and what would be
 * bridged into the harness. */
AISB_PUBLIC int aisb_policy_inspect(const aisb_policy *policy, char **ret_text, aisb_error **err);
/* The plan a run of this policy would have, as JSON (aisb inspect --json): its image, name,
 * network, protected paths, environment names (never values), the entrypoint's argv and the
 * create request, its environment values redacted. The gate's port is a placeholder, what a
 * run's gate adds (its key, its CA) are stand-ins, the name's random part is XXXXXXXX,
 * nothing is started. DEL and the C1 controls are escaped and a byte that is not UTF-8 is
 * U+FFFD, so the text is JSON and safe to print. */
AISB_PUBLIC int aisb_policy_inspect_json(const aisb_policy *policy, char **ret_text, aisb_error **err);

/* The same sandbox as Kubernetes objects, printed as JSON documents after "---" lines (valid
 * YAML): the gate's ConfigMap, Deployment, Service and NetworkPolicy, the workspace's
 * PersistentVolumeClaim, the sandbox's NetworkPolicy and its Pod (docs/kubernetes.md).
 * options: see aisb_kube_options (NULL: all of its defaults). The pod renders the plan a run
 * of the policy has (its variables, entrypoint argv, mounts, protected paths, the harness's
 * bridged configuration and level); -EOPNOTSUPP, saying why, for what a pod cannot have as the
 * policy says (secrets, rules, host paths, ...). Reads what a run's plan reads and what the
 * image's content tag covers; the same policy on the same machine gives the same text. */
enum {
        /* The pod as a Sandbox of kubernetes-sigs/agent-sandbox (agents.x-k8s.io/v1beta1),
         * its podTemplate the same pod spec. */
        AISB_KUBE_AS_SANDBOX = 1 << 0,
        /* For "podman kube play" on this machine rather than a cluster: no Service and no
         * NetworkPolicy (podman has neither; the sandbox is played on an internal network
         * the gate shares), the seccomp annotation podman reads, the project as a hostPath,
         * no resources (docs/kubernetes.md). */
        AISB_KUBE_PODMAN = 1 << 1,
        AISB_KUBE_GATE_ONLY = 1 << 2,    /* only the gate's objects */
        AISB_KUBE_SANDBOX_ONLY = 1 << 3, /* only the workspace's and the sandbox's */
        /* An init container that installs aisb-entrypoint's default-drop ruleset in the pod's
         * network namespace, besides the NetworkPolicy: it runs as root with NET_ADMIN, which
         * a namespace under the "restricted" (or "baseline") standard refuses. */
        AISB_KUBE_NETFILTER_INIT = 1 << 4,
        /* aisb_kube_push(): the registry speaks plain HTTP, or its certificate is not one the
         * host trusts (aisb_policy_kube() ignores it: the objects are the same). */
        AISB_KUBE_TLS_NO_VERIFY = 1 << 5,
};
/* What aisb_policy_kube() and aisb_kube_push() are asked for. Callers zero-initialise it
 * (= {} or memset) and set what they need: members may be added at the end in a later
 * version, and zero is always the default of each. */
typedef struct aisb_kube_options {
        /* Where a cluster pulls the images from, e.g. "registry.example.com/team"; NULL: the
         * local tags, never pulled. aisb_kube_push() needs it. */
        const char *image_repo;
        unsigned long long timeout_s; /* the pod's activeDeadlineSeconds; 0: none */
        unsigned flags;               /* AISB_KUBE_*; unknown bits are -EINVAL */
} aisb_kube_options;
AISB_PUBLIC int aisb_policy_kube(const aisb_policy *policy, const aisb_kube_options *options, char **ret_text,
                                 aisb_error **err);
/* Build (or find) the images aisb_policy_kube() names for options->image_repo, and push each
 * there through the podman service, as REPO/aisb:TAG and, when the policy has a gate,
 * REPO/aisb-gate:TAG: the same content tags. AISB_KUBE_TLS_NO_VERIFY for a registry over
 * plain HTTP or with a certificate the host does not trust. Credentials are podman's own
 * (podman login). */
AISB_PUBLIC int aisb_kube_push(aisb_ctx *ctx, const aisb_policy *policy, const aisb_kube_options *options,
                               aisb_error **err);

/* The directory a run of this policy mounts read-only at /home/sandbox/.agents: the
 * "agents-dir" key's, or ~/.agents. -ENOENT, saying why, when a run mounts none ("no-agents",
 * or the directory does not exist). */
AISB_PUBLIC int aisb_policy_agents_dir(const aisb_policy *policy, char **ret_dir, aisb_error **err);

/* Hold the run's harness's provider keys at the gate: when the policy's command is pi, claude
 * or codex and the policy says not "no-harness-keys", add each key below that is set (in this
 * process's environment, or as a literal in pi's models.json) and that the policy does not pass
 * itself (env, secret) as a secret at the provider's host, as "secret" NAME@HOST/HEADER would:
 * - claude: ANTHROPIC_API_KEY (x-api-key) and ANTHROPIC_AUTH_TOKEN (Authorization: Bearer) at
 *   the host of ANTHROPIC_BASE_URL (passed with env, or in the bridged settings.json's env) or
 *   api.anthropic.com;
 * - codex: its provider's env_key (OPENAI_API_KEY for its built-in provider) at the host of
 *   its base_url or api.openai.com, as Authorization: Bearer;
 * - pi: each models.json provider's apiKey (a variable's name or a literal, held as
 *   AISB_PI_KEY_<PROVIDER>) in the header its "api" sends, and each provider header's value,
 *   at its baseUrl's host; then the variables of pi's built-in providers (ANTHROPIC_API_KEY,
 *   OPENAI_API_KEY, GEMINI_API_KEY, ...) at theirs. A "!command" or a provider of an api not
 *   known here stays the run's to pass.
 * A provider reached over plain HTTP gets nothing, nor a header of a host that a secret of the
 * policy fills already. The names held go into *ret_held (a NULL-terminated list to free with
 * each string, may be NULL; ret_held itself may be NULL). Call it once the command is set. */
AISB_PUBLIC int aisb_policy_hold_harness_keys(aisb_policy *policy, char ***ret_held, aisb_error **err);

/* ---- aisb skill-lint: credentials in what every sandbox can read ---- */

enum {
        AISB_SKILL_LINT_NO_HISTORY = 1 << 0, /* the files only: no sandbox for git's history */
};
/* One finding (strings valid during the callback only). The value itself is never passed
 * on. Fields may be added at the end. */
typedef struct aisb_skill_lint_finding {
        const char *commit; /* NULL for a file as it is now */
        const char *path;   /* relative to the directory */
        unsigned long line;
        const char *kind;   /* "github-token", "private-key", "high-entropy", ... */
        const char *masked; /* the value masked: its first characters at most, and its length */
} aisb_skill_lint_finding;
typedef void (*aisb_skill_lint_fn)(const aisb_skill_lint_finding *finding, void *userdata);
/*
 * Look for credentials in dir: its files (read without following links, regular files only,
 * bounded; what is skipped is said as a warning, an AISB_EVENT_LOG event), and the history
 * reachable from the refs of each git repository in it, read by git inside a sandbox of the
 * policy's image (no network, dir read-only; never git on the host, which would run what a
 * repository's configuration names). When the image is not built, the history is not
 * scanned, and a warning says so. flags: AISB_SKILL_LINT_* (-EINVAL for a bit it does not
 * know). Returns the number of findings; *ret_summary (may be NULL) is one line saying what
 * was read.
 */
AISB_PUBLIC int aisb_skill_lint(aisb_ctx *ctx, const aisb_policy *policy, const char *dir,
                                unsigned flags, aisb_skill_lint_fn fn, void *userdata,
                                char **ret_summary, aisb_error **err);

AISB_PUBLIC const char *aisb_version(void);

#ifdef __cplusplus
}
#endif

#endif
