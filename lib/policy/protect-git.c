/* SPDX-License-Identifier: MIT */
/*
 * What the host's git reads (protect-git.h): found and read the way the rest of protected
 * paths reads the agent's tree, through directory descriptors without following a link,
 * regular files only and bounded, never by running git.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "protect-git.h"
#include "fileio.h"
#include "tree-walk.h"

/* Each "key = value" of a git config file's text (changed in place), with its section's name
 * (what the brackets hold up to a space or a quote: "core", "include", "includeIf"), to fn.
 * Only what a plain file says: continuation lines and an include's own content are not. */
typedef void (*config_fn)(const char *section, const char *key, const char *value, void *userdata);

static void config_scan(char *text, config_fn fn, void *userdata)
{
        char section[64] = "";
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                while (isspace((unsigned char) *line))
                        line++;
                if (*line == '[') {
                        size_t n = strcspn(line + 1, "] \t\"");
                        snprintf(section, sizeof section, "%.*s", (int) (n < 63 ? n : 63), line + 1);
                        line += 1 + strcspn(line + 1, "]");
                        if (*line == ']')
                                line++;
                        while (isspace((unsigned char) *line))
                                line++;
                }
                size_t k = strcspn(line, " \t=");
                if (k == 0)
                        continue;
                char *v = line + k;
                while (*v == ' ' || *v == '\t')
                        v++;
                if (*v != '=')
                        continue;
                line[k] = 0;
                v++;
                while (*v == ' ' || *v == '\t')
                        v++;
                bool quoted = *v == '"';
                if (quoted)
                        v++;
                size_t n = strcspn(v, quoted ? "\"" : "#;\r");
                while (!quoted && n && isspace((unsigned char) v[n - 1]))
                        n--;
                v[n] = 0;
                fn(section, line, v, userdata);
        }
}

static void on_include(const char *section, const char *key, const char *value, void *userdata)
{
        if ((strcasecmp(section, "include") == 0 || strcasecmp(section, "includeif") == 0) &&
            strcasecmp(key, "path") == 0 && *value)
                (void) strv_push(userdata, value);
}

void git_config_includes(char *text, char ***paths)
{
        config_scan(text, on_include, paths);
}

/* Every core.hooksPath a git config file sets, and those of the files it includes (read in
 * place, three deep), each as an absolute host path: relative ones from top (the work
 * tree's top; NULL: none known), "~/" from HOME. Which one wins depends on git's order; all
 * of them are protected. path: the file on the host (read without following a link at its
 * end, regular files only, bounded). */
typedef struct hooks_scan {
        char ***found;
        const char *top, *dir;
        unsigned depth;
} hooks_scan;

static void scan_hooks_file(const char *path, const char *top, char ***found, unsigned depth);

static void on_hooks_entry(const char *section, const char *key, const char *value, void *userdata)
{
        hooks_scan *h = userdata;
        const char *home = getenv("HOME");
        bool has_home = home && home[0] == '/';
        if (strcasecmp(section, "core") == 0 && strcasecmp(key, "hookspath") == 0 && *value) {
                _cleanup_free_ char *abs = strncmp(value, "~/", 2) == 0 ? (has_home ? path_join(home, value + 2) : NULL)
                                           : value[0] == '/' || h->top ? path_resolve(h->top ? h->top : "/", value)
                                                                      : NULL;
                if (abs)
                        (void) strv_push(h->found, abs);
        } else if ((strcasecmp(section, "include") == 0 || strcasecmp(section, "includeif") == 0) &&
                   strcasecmp(key, "path") == 0 && *value) {
                _cleanup_free_ char *abs = strncmp(value, "~/", 2) == 0 ? (has_home ? path_join(home, value + 2) : NULL)
                                                                        : path_resolve(h->dir, value);
                if (abs)
                        scan_hooks_file(abs, h->top, h->found, h->depth + 1);
        }
}

static void scan_hooks_file(const char *path, const char *top, char ***found, unsigned depth)
{
        if (depth > 3)
                return;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        _cleanup_free_ char *text = NULL, *dir = strdup(path);
        size_t size;
        if (fd < 0 || !dir || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
            read_full_fd(fd, PROTECT_READ_MAX, &text, &size) < 0)
                return;
        char *slash = strrchr(dir, '/');
        if (slash)
                slash[slash == dir ? 1 : 0] = 0;
        hooks_scan h = { .found = found, .top = top, .dir = dir, .depth = depth };
        config_scan(text, on_hooks_entry, &h);
}

char **git_hooks_paths(const char *gitdir, const char *top)
{
        char **found = NULL;
        const char *home = getenv("HOME"), *xdg = getenv("XDG_CONFIG_HOME");
        _cleanup_free_ char *local = path_join(gitdir, "config"), *worktree = path_join(gitdir, "config.worktree");
        _cleanup_free_ char *xdg_file = xdg && xdg[0] == '/' ? path_join(xdg, "git/config")
                                        : home && home[0] == '/' ? path_join(home, ".config/git/config") : NULL;
        _cleanup_free_ char *home_file = home && home[0] == '/' ? path_join(home, ".gitconfig") : NULL;
        const char *files[] = { local, worktree, home_file, xdg_file, "/etc/gitconfig" };
        for (size_t i = 0; i < ELEMENTSOF(files); i++)
                if (files[i])
                        scan_hooks_file(files[i], top, &found, 0);
        return found;
}

bool git_hooks_installed(const char *dir)
{
        _cleanup_close_ int fd = dir ? open_absolute_dir(dir) : -1;
        _cleanup_strv_free_ char **names = NULL;
        if (fd < 0 || tree_dir_names(fd, &names) < 0)
                return false;
        for (size_t i = 0; names[i]; i++) {
                size_t n = strlen(names[i]);
                if (n < 7 || !streq(names[i] + n - 7, ".sample"))
                        return true;
        }
        return false;
}

typedef struct git_walk {
        git_entry_fn fn;
        void *userdata;
        size_t dirs; /* the root is one */
        bool cut;
} git_walk;

/* What git takes for a git directory: HEAD (a file or a link), and objects and refs (of any
 * kind: links too), or a commondir that names them elsewhere. */
static bool looks_like_gitdir(int dir)
{
        static const char *const names[] = { "HEAD", "objects", "refs", "commondir" };
        static const unsigned bits[] = { 1, 2, 4, 6 };
        unsigned looks = 0;
        struct stat st;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (fstatat(dir, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0)
                        looks |= bits[i];
        return looks == 7;
}

static int git_walk_entry(const tree_entry *e, void *userdata)
{
        git_walk *w = userdata;
        if (streq(e->name, ".git")) /* never entered; the project's own is its plan's */
                return e->depth > 1 ? w->fn(e->dir, e->name, e->path, w->userdata) : 0;
        if (e->type != DT_DIR || e->self < 0)
                return 0;
        if (e->depth > PROTECT_WALK_MAX_DEPTH || ++w->dirs > PROTECT_WALK_MAX_DIRS) {
                w->cut = true;
                return TREE_SKIP;
        }
        /* Itself, and then what is below it: once the sweep has moved what makes it a git
         * directory it is an ordinary one, and a repository made inside it would be the host's
         * git's to run (its .git is met by the listing, as anywhere). */
        return looks_like_gitdir(e->self) ? w->fn(e->dir, e->name, e->path, w->userdata) : 0;
}

int git_dirs_walk(int root, bool give_access, git_entry_fn fn, void *userdata, bool *ret_cut)
{
        static const char *const closed[] = { ".git", NULL };
        const tree_walk_options o = {
                .flags = give_access ? TREE_WALK_GIVE_ACCESS : 0, .max_entries = PROTECT_WALK_MAX_ENTRIES,
                /* One level more than the directories looked at: the deepest one's names are read. */
                .max_depth = PROTECT_WALK_MAX_DEPTH + 1, .max_path = (PROTECT_WALK_MAX_DEPTH + 2) * 256,
                .closed = closed,
        };
        git_walk w = { .fn = fn, .userdata = userdata, .dirs = 1 };
        int r = tree_walk_with(root, &o, git_walk_entry, &w);
        *ret_cut = w.cut || r == -E2BIG;
        return r == -E2BIG ? 0 : r;
}

static int count_replace(char *line, void *userdata)
{
        *(long *) userdata += strstr(line, " refs/replace/") != NULL;
        return 0;
}

long git_packed_replace_refs(int root, const char *gitdir_rel)
{
        _cleanup_free_ char *rel = path_join(gitdir_rel, "packed-refs");
        const char *base;
        _cleanup_close_ int parent = rel ? tree_open_parent(root, rel, &base) : -1;
        _cleanup_close_ int fd = parent >= 0 ? openat(parent, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
        struct stat st;
        long n = 0;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
            read_lines(fd, 256ULL << 20, 4096, count_replace, &n) < 0)
                return -1;
        return n;
}

char *git_repository_above(const char *path)
{
        _cleanup_free_ char *d = strdup(path);
        while (d && strcmp(d, "/") != 0) {
                char *slash = strrchr(d, '/');
                if (!slash)
                        break;
                slash[slash == d ? 1 : 0] = 0;
                _cleanup_free_ char *git = path_join(d, ".git");
                struct stat st;
                if (git && lstat(git, &st) == 0)
                        return strdup(d);
        }
        return NULL;
}
