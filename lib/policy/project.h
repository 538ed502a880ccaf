/* SPDX-License-Identifier: MIT */
/*
 * What the host reads from the project, and where a run keeps its own files.
 *
 * The project directory is the agent's: it may hold symbolic links, FIFOs and devices where
 * files are expected, and a sandbox already running on it may swap them while aisb works.
 * So the project's settings directory (.ai-sandbox) is read once, through directory file
 * descriptors with O_NOFOLLOW|O_NONBLOCK, regular files only, bounded; the run then uses that
 * snapshot, and the sandbox sees a read-only copy of it, never a path podman would resolve
 * again later.
 *
 * A run directory is private to one run (mode 0700, under $XDG_RUNTIME_DIR or /tmp): the
 * snapshot's copy and anything else the run mounts from the host read-only live there, and
 * it is removed with the run.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define PROJECT_SETTINGS_DIR ".ai-sandbox"
/* Bounds of what is read of .ai-sandbox: far above any real use. */
#define PROJECT_SETTINGS_MAX_FILES 64
#define PROJECT_SETTINGS_MAX_FILE (1024 * 1024)

typedef struct project_file {
        char *name;
        char *data; /* NUL-terminated; size excludes the NUL */
        size_t size;
} project_file;

typedef struct project_settings {
        bool present; /* .ai-sandbox exists as a directory */
        project_file *files;
        size_t n_files;
} project_settings;

/* Read PROJECT/.ai-sandbox's regular files (top level only; anything else in it is left
 * out). Absent: created empty with create (a run, which mounts its copy over it), otherwise
 * present = false, no error. A .ai-sandbox that is a symbolic link or not a directory, an
 * `allow` that is not a regular file, or more than the bounds: -EINVAL with one line. */
int project_settings_read(const char *project, bool create, project_settings *ret, aisb_error **err);
void project_settings_done(project_settings *s);
/* The file called name, or NULL. */
const project_file *project_settings_find(const project_settings *s, const char *name);

/* Refuse a project the user reached through a symbolic link that a sandbox could have
 * planted: the shell's logical path ($PWD) leads to project through a link that lies inside
 * a directory holding .ai-sandbox (an aisb project, whose sandboxes write it). -EINVAL with one
 * line naming the link; 0 otherwise (also when $PWD says nothing about project). */
int project_check_reached(const char *project, aisb_error **err);

/* The project's directory, open: the working directory when is_cwd (where the user is, not a
 * path someone could swap meanwhile), else path, whose last component must not be a link. */
int project_open(const char *path, bool is_cwd, aisb_error **err);

/* Refuse a project that is the user's home or a directory above it: all of ~/.ssh, ~/.config
 * (aisb's own configuration included) would be the sandbox's to read and write. -EINVAL. */
int project_check_home(const char *project, aisb_error **err);

typedef struct run_dir {
        char *path;
        int fd;
} run_dir;
#define RUN_DIR_NULL ((run_dir) { .fd = -1 })

/* Create this run's private directory. */
int run_dir_create(run_dir *ret, aisb_error **err);
/* Create the directory sub in it and write the settings' files there (modes 0755 and 0644:
 * read inside the sandbox, whoever it runs as); the absolute path of sub is returned. */
int run_dir_write_settings(run_dir *d, const char *sub, const project_settings *s, char **ret_path,
                           aisb_error **err);
/* Write text to the file name in it (mode 0644: read inside the sandbox); its absolute path
 * is returned. */
int run_dir_write_file(run_dir *d, const char *name, const char *text, char **ret_path, aisb_error **err);
/* Remove the directory and everything in it (three levels deep at most, never following a
 * link). Safe on RUN_DIR_NULL, and more than once. */
void run_dir_remove(run_dir *d);
