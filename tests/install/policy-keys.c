/* SPDX-License-Identifier: MIT */
/*
 * policy-keys: print libaisb's table of policy keys, one key a line, through the public API
 * only (aisb_policy_key_count(), aisb_policy_key_at()), for tests/install/drift.py, which
 * checks that aisb's --help, the man page, the completions and docs/config.md say what the
 * table says. Fields, separated by tabs:
 *   NAME  PLACEHOLDER  FLAGS  DEFAULT  HELP
 * FLAGS is a comma-separated list of boolean, repeatable, image, config-only (or "-");
 * DEFAULT is empty when the key has none.
 */
#include <stdio.h>
#include <string.h>

#include <aisb.h>

int main(void)
{
        static const struct {
                unsigned flag;
                const char *name;
        } flag_names[] = {
                { AISB_POLICY_KEY_BOOLEAN, "boolean" },
                { AISB_POLICY_KEY_REPEATABLE, "repeatable" },
                { AISB_POLICY_KEY_IMAGE, "image" },
                { AISB_POLICY_KEY_CONFIG_ONLY, "config-only" },
        };
        size_t n = aisb_policy_key_count();
        if (n == 0 || aisb_policy_key_at(n) != NULL) {
                fprintf(stderr, "policy-keys: the table has %zu keys, or does not end there\n", n);
                return 1;
        }
        for (size_t i = 0; i < n; i++) {
                const aisb_policy_key *k = aisb_policy_key_at(i);
                const char *fields[] = { k->name, k->placeholder, k->help, k->default_text };
                for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
                        if (fields[f] && strpbrk(fields[f], "\t\n")) {
                                fprintf(stderr, "policy-keys: %s holds a tab or a newline\n", k->name);
                                return 1;
                        }
                char flags[128] = "";
                for (size_t f = 0; f < sizeof flag_names / sizeof flag_names[0]; f++)
                        if (k->flags & flag_names[f].flag) {
                                if (flags[0])
                                        strcat(flags, ",");
                                strcat(flags, flag_names[f].name);
                        }
                printf("%s\t%s\t%s\t%s\t%s\n", k->name, k->placeholder, flags[0] ? flags : "-",
                       k->default_text ? k->default_text : "", k->help);
        }
        return 0;
}
