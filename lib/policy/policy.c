/* SPDX-License-Identifier: MIT */
/*
 * The policy as a value: making and freeing one, the harness it runs, the command, and the
 * names and lists its keys share. What each key checks and how it is set lives in
 * policy-keys.c (one table drives setting, getting, the text and the help); where values
 * come from besides a caller's set, in policy-config.c; the policy's text and hash, in
 * policy-format.c. A new policy reads nothing of the process: aisb_policy_apply_environment()
 * (policy-config.c) is the one place that does.
 */
#include "digest.h"
#include "policy.h"

/* The harnesses aisb installs into the image, each an npm package pinned so that the
 * image's content tag means something. */
static const struct {
        const char *name;
        const char *package;
} harness_packages[] = {
        { "pi", "@mariozechner/pi-coding-agent@0.73.1" },
        { "codex", "@openai/codex@0.171.0" },
        { "claude", "@anthropic-ai/claude-code@2.1.332" },
};

const char *policy_harness_package(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(harness_packages); i++)
                if (streq(harness_packages[i].name, name))
                        return harness_packages[i].package;
        return NULL;
}

void project_short_name(const char *project, char *buf, size_t size)
{
        size_t n = 0;
        if (!project) {
                snprintf(buf, size, "scratch");
                return;
        }
        const char *slash = strrchr(project, '/');
        const char *b = slash && slash[1] ? slash + 1 : "root";
        for (; *b && n + 1 < size; b++)
                if ((*b >= 'a' && *b <= 'z') || (*b >= '0' && *b <= '9') || *b == '-' || *b == '_')
                        buf[n++] = *b;
                else if (*b >= 'A' && *b <= 'Z')
                        buf[n++] = (char) (*b - 'A' + 'a');
        buf[n] = 0;
        if (n == 0)
                snprintf(buf, size, "project");
}

/* The default home: one volume per project, named from its path, so that what one project's
 * agent plants in its home (~/.bashrc, ~/.gitconfig, ~/.npmrc) never runs in another
 * project's sandbox. Scratch sandboxes (no project) share one of their own. */
int policy_derive_home_volume(aisb_policy *p)
{
        if (p->home_volume_chosen)
                return 0;
        char base[33];
        _cleanup_free_ char *hash = NULL;
        char *name = NULL;
        if (p->project) {
                project_short_name(p->project, base, sizeof base);
                if (sha256_hex(p->project, strlen(p->project), 12, &hash) < 0 ||
                    asprintf(&name, AISB_HOME_VOLUME_PREFIX "%s-%s", base, hash) < 0)
                        return -ENOMEM;
        } else if (!(name = strdup(AISB_HOME_VOLUME_PREFIX "scratch")))
                return -ENOMEM;
        free(p->home_volume);
        p->home_volume = name;
        return 0;
}

int policy_set_string(char **field, const char *value)
{
        char *copy = strdup(value);
        if (!copy)
                return -ENOMEM;
        free(*field);
        *field = copy;
        return 0;
}

void aisb_policy_free(aisb_policy *p)
{
        if (!p)
                return;
        for (size_t i = 0; i < p->n_ca_certs; i++) {
                free(p->ca_certs[i].path);
                free(p->ca_certs[i].pem);
        }
        env_entries_free(p->env, p->n_env);
        for (size_t i = 0; i < p->n_mounts; i++) {
                free(p->mounts[i].source);
                free(p->mounts[i].destination);
        }
        allowlist_done(&p->allow);
        for (size_t i = 0; i < p->n_secrets; i++)
                gate_secret_done(&p->secrets[i]);
        json_object_put(p->create_patch);
        char **strings[] = { &p->project, &p->base_image, &p->home_volume, &p->harness, &p->entrypoint,
                             &p->create_patch_path, &p->proxy, &p->user_allowlist, &p->thinking, &p->agents_dir };
        for (size_t i = 0; i < ELEMENTSOF(strings); i++)
                free(*strings[i]);
        char ***lists[] = { &p->install, &p->protect, &p->env_files, &p->command, &p->harness_args,
                            &p->harness_command, &p->add_hosts, &p->devices, &p->bridge_carry };
        for (size_t i = 0; i < ELEMENTSOF(lists); i++)
                strv_free(*lists[i]);
        free(p->ca_certs);
        free(p->mounts);
        free(p->secrets);
        free(p);
}

/* Every harness's reasoning levels together, and "host"; a run checks its own harness's
 * (harness_thinking_check). */
static const char *const thinking_levels[] = { "off", "none", "minimal", "low", "medium", "high", "xhigh", "max", "host" };

bool policy_thinking_level_known(const char *level)
{
        for (size_t i = 0; level && i < ELEMENTSOF(thinking_levels); i++)
                if (streq(level, thinking_levels[i]))
                        return true;
        return false;
}

/* *field replaced by a copy of argv, NULL for none or an empty one; -ENOMEM leaves it. */
static int replace_argv(char ***field, const char *const *argv)
{
        char **copy = NULL;
        if (argv && argv[0] && !(copy = strv_copy(argv)))
                return -ENOMEM;
        strv_free(*field);
        *field = copy;
        return 0;
}

int aisb_policy_set_command(aisb_policy *p, const char *const *argv, aisb_error **err)
{
        return replace_argv(&p->command, argv) < 0 ? error_oom(err) : 0;
}

int policy_rebuild_harness_command(aisb_policy *p)
{
        _cleanup_strv_free_ char **v = NULL;
        int r = strv_push(&v, p->harness);
        for (size_t i = 0; r >= 0 && p->harness_args && p->harness_args[i]; i++)
                r = strv_push(&v, p->harness_args[i]);
        if (r < 0)
                return r;
        strv_free(p->harness_command);
        p->harness_command = steal_pointer(&v);
        return 0;
}

int aisb_policy_set_harness_args(aisb_policy *p, const char *const *argv, aisb_error **err)
{
        if (replace_argv(&p->harness_args, argv) < 0 || policy_rebuild_harness_command(p) < 0)
                return error_oom(err);
        return 0;
}

const char *const *policy_command(const aisb_policy *p)
{
        static const char *const bash[] = { "bash", NULL };
        if (p->shell)
                return bash;
        if (p->command)
                return (const char *const *) p->command;
        return (const char *const *) p->harness_command;
}
