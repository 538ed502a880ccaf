/* SPDX-License-Identifier: MIT */
#include <sys/stat.h>

#include "userdirs.h"
#include "fileio.h"

/* The XDG variable's directory, or HOME's fallback below it; NULL when neither is absolute. */
static char *user_dir(const char *xdg_variable, const char *home_fallback, const char *sub)
{
        const char *xdg = getenv(xdg_variable);
        const char *home = getenv("HOME");
        char *path = NULL;
        int n;
        if (xdg && xdg[0] == '/')
                n = asprintf(&path, "%s/ai-sandbox%s%s", xdg, sub ? "/" : "", sub ? sub : "");
        else if (home && home[0] == '/')
                n = asprintf(&path, "%s/%s/ai-sandbox%s%s", home, home_fallback, sub ? "/" : "", sub ? sub : "");
        else
                return NULL;
        return n < 0 ? NULL : path;
}

int state_dir(const char *sub, char **ret, aisb_error **err)
{
        const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
        if (!(xdg && xdg[0] == '/') && !(home && home[0] == '/'))
                return aisb_error_set(err, -ENOENT, "neither XDG_STATE_HOME nor HOME is set");
        _cleanup_free_ char *path = user_dir("XDG_STATE_HOME", ".local/state", sub);
        if (!path)
                return error_oom(err);
        int r = mkdir_p(path, 0700);
        if (r < 0)
                return aisb_error_set(err, r, "cannot create %s: %s", path, strerror(-r));
        *ret = steal_pointer(&path);
        return 0;
}

char *state_path(const char *sub)
{
        return user_dir("XDG_STATE_HOME", ".local/state", sub);
}

char *user_config_path(const char *name)
{
        return user_dir("XDG_CONFIG_HOME", ".config", name);
}
