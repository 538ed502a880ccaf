/* SPDX-License-Identifier: MIT */
/*
 * The policy as text: a key=value line for each key the policy shows (the table's order),
 * the image tag first and the command last. inspect prints it and its hash names the
 * policy, so whatever changes what a run does changes a line: every allowlist entry with its
 * origin and the gate's configuration, the create patch by what it says.
 */
#include "digest.h"
#include "policy-keys.h"

/* Every entry a run allows, with where it came from (flags, the user's file, the project's),
 * and the gate that serves them. */
int policy_format_allow(const aisb_policy *p, const policy_key *k, const project_settings *settings, buffer *b,
                        aisb_error **err)
{
        allowlist merged = {};
        aisb_error *e = NULL;
        if (policy_allowlist(p, settings, &merged, &e) < 0) {
                if (err && !*err)
                        *err = e;
                else
                        aisb_error_free(e);
                return -EINVAL;
        }
        int r = 0;
        _cleanup_free_ char *gate = NULL;
        if (!p->no_gate && !p->proxy && allowlist_count_domains(&merged) > 0 &&
            gate_squid_hash(&merged, (const char *const *) p->add_hosts, &gate) >= 0)
                r = buffer_printf(b, "gate=%s\n", gate);
        for (size_t i = 0; r >= 0 && i < merged.n; i++) {
                _cleanup_free_ char *text = NULL;
                r = allowlist_entry_text(&merged.entries[i], &text);
                if (r >= 0)
                        r = buffer_printf(b, "allow=%s # %s\n", text, merged.entries[i].origin);
        }
        allowlist_done(&merged);
        return r;
}

/* The policy's hash covers what the patch says, not only where it lives. */
int policy_format_create_patch(const aisb_policy *p, const policy_key *k,
                               _unused_ const project_settings *settings, buffer *b, aisb_error **err)
{
        if (!p->create_patch)
                return 0;
        _cleanup_free_ char *patch_hash = NULL;
        const char *text = json_object_to_json_string_ext(p->create_patch, JSON_C_TO_STRING_PLAIN);
        if (!text || sha256_hex(text, strlen(text), 16, &patch_hash) < 0)
                return -ENOMEM;
        return buffer_printf(b, "unsafe-create-patch=%s (sha256 %s)\n", p->create_patch_path, patch_hash);
}

static int format_settings(const aisb_policy *p, const char *tag, const project_settings *settings, char **ret_text,
                           aisb_error **err)
{
        _cleanup_(buffer_free) buffer b = {};
        int r = buffer_printf(&b, "image=%s\n", tag);
        for (size_t i = 0; r >= 0 && i < policy_keys_n; i++) {
                const policy_key *k = &policy_keys[i];
                if (k->shown && !k->shown(p))
                        continue;
                if (k->format) {
                        r = k->format(p, k, settings, &b, err);
                        continue;
                }
                _cleanup_strv_free_ char **values = NULL;
                r = k->get(p, k, &values);
                for (size_t j = 0; r >= 0 && values && values[j]; j++)
                        r = buffer_printf(&b, "%s=%s\n", k->pub.name, values[j]);
        }
        const char *const *cmd = policy_command(p);
        if (r >= 0)
                r = buffer_printf(&b, "command=");
        for (size_t i = 0; r >= 0 && cmd[i]; i++)
                r = buffer_printf(&b, "%s%s", i ? " " : "", cmd[i]);
        if (r >= 0)
                r = buffer_printf(&b, "\n");
        if (r < 0)
                return r == -ENOMEM ? error_oom(err) : r;
        *ret_text = buffer_steal(&b);
        return 0;
}

int policy_hash(const aisb_policy *p, const char *image, const project_settings *settings, char **ret_hex)
{
        _cleanup_free_ char *text = NULL;
        int r = format_settings(p, image, settings, &text, NULL);
        if (r < 0)
                return r;
        return sha256_hex(text, strlen(text), 16, ret_hex);
}

int policy_format(const aisb_policy *p, const char *tag, char **ret_text, aisb_error **err)
{
        return format_settings(p, tag, NULL, ret_text, err);
}
