/* SPDX-License-Identifier: MIT */
/*
 * Where a policy's values come from besides a caller's aisb_policy_set(): the user's config
 * file (key = value lines, the keys of the table), the process's environment (read here
 * alone, by aisb_policy_apply_environment()), another policy's image keys for aisb's own
 * sandboxes; and the allowlist a run merges from the flags, the project's settings and the
 * user's file.
 */
#include <ctype.h>

#include "hostaddr.h"
#include "policy-keys.h"
#include "userdirs.h"

int aisb_policy_load_config(aisb_policy *p, const char *path, unsigned flags, aisb_error **err)
{
        if (flags & ~(unsigned) AISB_CONFIG_OPTIONAL)
                return aisb_error_set(err, -EINVAL, "aisb_policy_load_config: unknown flags 0x%x", flags);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f) {
                if (errno == ENOENT && (flags & AISB_CONFIG_OPTIONAL))
                        return 0;
                return aisb_error_set(err, -errno, "cannot open config %s: %s", path, strerror(errno));
        }
        _cleanup_free_ char *line = NULL;
        size_t allocated = 0;
        unsigned line_no = 0;
        ssize_t n;
        while ((n = getline(&line, &allocated, f)) >= 0) {
                line_no++;
                if ((size_t) n != strlen(line))
                        return aisb_error_set(err, -EINVAL, "%s:%u: NUL byte in line", path, line_no);
                char *s = line + strspn(line, " \t");
                char *e = s + strlen(s);
                while (e > s && isspace((unsigned char) e[-1]))
                        *--e = 0;
                if (!*s || *s == '#')
                        continue;
                char *eq = strchr(s, '=');
                if (!eq)
                        return aisb_error_set(err, -EINVAL, "%s:%u: expected key = value", path, line_no);
                char *k_end = eq;
                while (k_end > s && isspace((unsigned char) k_end[-1]))
                        k_end--;
                *k_end = 0;
                char *v = eq + 1 + strspn(eq + 1, " \t");
                /* env values do not belong in a config file: names only. */
                if (streq(s, "env") && strchr(v, '='))
                        return aisb_error_set(err, -EINVAL,
                                              "%s:%u: env takes a NAME here; put values in an env-file (mode 0600)",
                                              path, line_no);
                int r = aisb_policy_set(p, s, v, err);
                if (r < 0)
                        return aisb_error_wrap(err, r, "%s:%u", path, line_no);
        }
        if (ferror(f))
                return aisb_error_set(err, -EIO, "cannot read config %s", path);
        return 0;
}

int aisb_policy_apply_environment(aisb_policy *p, aisb_error **err)
{
        if (!p)
                return aisb_error_set(err, -EINVAL, "no policy given");
        /* What can be refused is checked before anything changes. */
        const char *thinking = getenv("AISB_THINKING");
        if (thinking && *thinking && !policy_thinking_level_known(thinking))
                return aisb_error_set(err, -EINVAL, "AISB_THINKING: '%s' is not a level (use one of: %s)",
                                      thinking, POLICY_THINKING_LEVELS);
        char *cwd = getcwd(NULL, 0);
        if (!cwd) {
                int r = -errno;
                return aisb_error_set(err, r, "cannot read the current directory: %s", strerror(-r));
        }
        int r = policy_set_project(p, cwd, true, err);
        if (r < 0)
                return r;

        const char *home_volume = getenv("AISB_HOME_VOLUME");
        if (home_volume && *home_volume) {
                if (policy_set_string(&p->home_volume, home_volume) < 0)
                        return error_oom(err);
                p->home_volume_chosen = true;
        }
        if (thinking && *thinking && policy_set_string(&p->thinking, thinking) < 0)
                return error_oom(err);
        /* The host path of a program copied into every image and run first in every sandbox:
         * a set-user-ID or set-group-ID aisb must not take it from whoever started it. This is
         * the one place the variable is read. */
        const char *entrypoint = secure_getenv("AISB_ENTRYPOINT");
        if (entrypoint && *entrypoint && policy_set_string(&p->entrypoint, entrypoint) < 0)
                return error_oom(err);
        return policy_env_inherit(p, NULL) < 0 ? error_oom(err) : 0;
}

int policy_new_for_image(const aisb_policy *src, aisb_policy **ret, aisb_error **err)
{
        aisb_policy *p = NULL;
        int r = aisb_policy_new(&p, err);
        if (r < 0)
                return r;
        r = aisb_policy_set(p, "base-image", src->base_image, err);
        for (size_t i = 0; r >= 0 && src->install && src->install[i]; i++)
                r = aisb_policy_set(p, "install", src->install[i], err);
        for (size_t i = 0; r >= 0 && i < src->n_ca_certs; i++)
                r = aisb_policy_set(p, "ca-cert", src->ca_certs[i].path, err);
        if (r >= 0)
                r = aisb_policy_set(p, "harness", src->harness, err);
        if (r >= 0)
                r = aisb_policy_set(p, "node-source", src->node_source_npm ? "npm" : "official", err);
        /* As it is: a missing entrypoint is the run's error to report, not this copy's. */
        if (r >= 0 && policy_set_string(&p->entrypoint, src->entrypoint) < 0)
                r = error_oom(err);
        /* The variables every sandbox inherits (the terminal, the locale), as the source got
         * them from aisb_policy_apply_environment(); none of the values it was given. */
        if (r >= 0 && policy_env_inherit(p, src) < 0)
                r = error_oom(err);
        if (r < 0) {
                aisb_policy_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

static char *user_allowlist_path(const aisb_policy *p)
{
        if (p->user_allowlist)
                return *p->user_allowlist ? strdup(p->user_allowlist) : NULL;
        return user_config_path("allow");
}

int policy_allowlist(const aisb_policy *p, const project_settings *settings, allowlist *ret,
                     aisb_error **err)
{
        _cleanup_(allowlist_done) allowlist l = {};
        int r = 0;
        for (size_t i = 0; r >= 0 && i < p->allow.n; i++)
                r = allowlist_append_copy(&l, &p->allow.entries[i]) < 0 ? error_oom(err) : 0;
        /* A secret's hosts are allowed by it. */
        for (size_t i = 0; r >= 0 && i < p->n_secrets; i++) {
                _cleanup_free_ char *origin = NULL;
                if (asprintf(&origin, "--secret %s", p->secrets[i].name) < 0)
                        r = error_oom(err);
                for (size_t h = 0; r >= 0 && p->secrets[i].hosts[h]; h++)
                        r = allowlist_add(&l, p->secrets[i].hosts[h], origin, err);
        }
        /* The project's file first, then the user's: the first origin of a duplicate is the
         * one reported. The project's comes from the run's snapshot of .ai-sandbox (read
         * without following links), or is read the same way here. It may name domains
         * only: whoever wrote the repository (or the agent, for the next run) wrote it, and an
         * address becomes a direct rule that nothing checks, where a name still meets the gate. */
        if (r >= 0 && p->project) {
                project_settings own = {};
                if (!settings) {
                        r = project_settings_read(p->project, false, &own, err);
                        settings = &own;
                }
                const project_file *f = r >= 0 ? project_settings_find(settings, "allow") : NULL;
                _cleanup_free_ char *origin = NULL;
                if (f && asprintf(&origin, "%s/" PROJECT_SETTINGS_DIR "/allow", p->project) < 0)
                        r = error_oom(err);
                else if (f && memchr(f->data, 0, f->size))
                        r = aisb_error_set(err, -EINVAL, "%s: a NUL byte: not a text file", origin);
                else if (f)
                        r = allowlist_parse_text(&l, f->data, f->size, origin,
                                                 ALLOWLIST_FILE_DOMAINS_ONLY, err);
                project_settings_done(&own);
        }
        _cleanup_free_ char *user = user_allowlist_path(p);
        if (r >= 0 && user)
                r = allowlist_load_file(&l, user, ALLOWLIST_FILE_OPTIONAL, err);
        /* After the merge: the flag may come after the entries it concerns. */
        if (r >= 0)
                r = allowlist_check_host_ranges(&l, p->insecure_allow_host_ranges, err);
        if (r >= 0 && allowlist_count_addresses(&l) > 0 && !p->insecure_allow_host_ranges) {
                _cleanup_strv_free_ char **own = NULL;
                if (host_own_addresses(&own) < 0)
                        r = error_oom(err);
                else
                        r = allowlist_check_host_addresses(&l, (const char *const *) own, false, err);
        }
        if (r < 0)
                return r;
        *ret = l;
        l = (allowlist) {};
        return 0;
}
