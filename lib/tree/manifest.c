/* SPDX-License-Identifier: MIT */
#include "manifest.h"

#include <inttypes.h>

#include "tree-walk.h"

#define MANIFEST_MAGIC "aisb-manifest 1\n"

static void entry_done(manifest_entry *e)
{
        free(e->path);
        free(e->target);
}

void manifest_done(manifest *m)
{
        for (size_t i = 0; i < m->n; i++)
                entry_done(&m->entries[i]);
        free(m->entries);
        *m = (manifest) {};
}

int manifest_walk(int fd, unsigned flags, tree_fn fn, manifest *ret)
{
        manifest m = {};
        int r = tree_walk(fd, 0, flags, fn, &m);
        if (r < 0)
                manifest_done(&m);
        else
                *ret = m;
        return r;
}

int manifest_add(manifest *m, const manifest_entry *e)
{
        if (ARRAY_GROW(m->entries, m->allocated, m->n, 256) < 0)
                return -ENOMEM;
        manifest_entry copy = *e;
        copy.path = strdup(e->path);
        copy.target = e->target ? strdup(e->target) : NULL;
        if (!copy.path || (e->target && !copy.target)) {
                entry_done(&copy);
                return -ENOMEM;
        }
        m->entries[m->n++] = copy;
        return 0;
}

static int entry_cmp(const void *a, const void *b)
{
        return tree_path_cmp(((const manifest_entry *) a)->path, ((const manifest_entry *) b)->path);
}

const manifest_entry *manifest_find(const manifest *m, const char *path)
{
        const manifest_entry key = { .path = (char *) path };
        return m->n ? bsearch(&key, m->entries, m->n, sizeof *m->entries, entry_cmp) : NULL;
}

manifest_entry manifest_entry_of(const char *path, const struct stat *st)
{
        char type = S_ISREG(st->st_mode) ? MANIFEST_FILE : S_ISDIR(st->st_mode) ? MANIFEST_DIR
                  : S_ISLNK(st->st_mode) ? MANIFEST_LINK : MANIFEST_OTHER;
        return (manifest_entry) {
                .path = (char *) path, .type = type, .mode = st->st_mode & 07777,
                .size = type == MANIFEST_DIR ? 0 : (uint64_t) st->st_size,
                .dev = (uint64_t) st->st_dev, .ino = (uint64_t) st->st_ino,
                .mtime_ns = (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
                .ctime_ns = (int64_t) st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec,
        };
}

bool manifest_same(const manifest_entry *a, const manifest_entry *b)
{
        return a->type == b->type && a->mode == b->mode && a->size == b->size && a->dev == b->dev &&
               a->ino == b->ino && a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

static bool must_escape(unsigned char c)
{
        return c <= ' ' || c == '%' || c == 0x7f;
}

int manifest_escape(const char *s, buffer *out)
{
        static const char hex[] = "0123456789abcdef";
        for (const unsigned char *p = (const unsigned char *) s; *p;) {
                const unsigned char *run = p;
                while (*p && !must_escape(*p))
                        p++;
                int r = p > run ? buffer_append(out, run, (size_t) (p - run)) : 0;
                if (r < 0)
                        return r;
                if (!*p)
                        break;
                char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
                if ((r = buffer_append(out, e, 3)) < 0)
                        return r;
                p++;
        }
        return 0;
}

int manifest_format(const manifest *m, buffer *out)
{
        int r = buffer_append(out, MANIFEST_MAGIC, strlen(MANIFEST_MAGIC));
        for (size_t i = 0; r >= 0 && i < m->n; i++) {
                const manifest_entry *e = &m->entries[i];
                r = buffer_printf(out, "%c %" PRIo32 " %" PRIu64 " %" PRId64 " %" PRId64 " %" PRIu64 " %" PRIu64 " %s ",
                                  e->type, e->mode, e->size, e->mtime_ns, e->ctime_ns, e->dev, e->ino,
                                  e->hash[0] ? e->hash : "-");
                r = r < 0 ? r : manifest_escape(e->path, out);
                if (r >= 0 && e->target) {
                        r = buffer_append(out, " ", 1);
                        r = r < 0 ? r : manifest_escape(e->target, out);
                }
                r = r < 0 ? r : buffer_append(out, "\n", 1);
        }
        return r;
}

/* ---- parsing: every field checked, nothing trusted ---- */

typedef struct cursor {
        const char *p, *end;
} cursor;

/* The next field up to a space or the line's end, without it. */
static bool field(cursor *c, const char **ret, size_t *ret_len)
{
        const char *start = c->p;
        while (c->p < c->end && *c->p != ' ' && *c->p != '\n')
                c->p++;
        if (c->p == start)
                return false;
        *ret = start;
        *ret_len = (size_t) (c->p - start);
        return true;
}

static bool space(cursor *c)
{
        if (c->p >= c->end || *c->p != ' ')
                return false;
        c->p++;
        return true;
}

static bool number(cursor *c, bool negative_ok, unsigned base, uint64_t max, int64_t *ret_signed, uint64_t *ret)
{
        const char *s;
        size_t len;
        if (!field(c, &s, &len) || len > 24)
                return false;
        bool negative = false;
        if (*s == '-' && negative_ok) {
                negative = true;
                s++;
                len--;
        }
        if (len == 0 || (len > 1 && *s == '0'))
                return false;
        uint64_t v = 0;
        for (size_t i = 0; i < len; i++) {
                unsigned d = (unsigned) (s[i] - '0');
                if (d >= base || v > (max - d) / base)
                        return false;
                v = v * base + d;
        }
        if (negative && (v == 0 || v > (uint64_t) INT64_MAX))
                return false;
        if (ret_signed)
                *ret_signed = negative ? -(int64_t) v : (int64_t) v;
        if (ret)
                *ret = v;
        return true;
}

static int hex_value(char c)
{
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* An escaped name, unescaped; only what manifest_escape writes is taken. */
static bool name(cursor *c, char **ret)
{
        const char *s;
        size_t len;
        if (!field(c, &s, &len) || len >= 3 * TREE_PATH_MAX)
                return false;
        _cleanup_free_ char *out = malloc(len + 1);
        if (!out)
                return false;
        size_t n = 0;
        for (size_t i = 0; i < len; i++) {
                unsigned char ch = (unsigned char) s[i];
                if (ch == '%') {
                        if (i + 2 >= len)
                                return false;
                        int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
                        if (hi < 0 || lo < 0)
                                return false;
                        ch = (unsigned char) (hi << 4 | lo);
                        if (ch == 0 || !must_escape(ch))
                                return false;
                        i += 2;
                } else if (must_escape(ch))
                        return false;
                out[n++] = (char) ch;
        }
        out[n] = 0;
        *ret = steal_pointer(&out);
        return true;
}

static int parse_line(cursor *c, manifest_entry *e)
{
        const char *s;
        size_t len;
        uint64_t mode = 0;
        if (!field(c, &s, &len) || len != 1 ||
            (*s != MANIFEST_FILE && *s != MANIFEST_DIR && *s != MANIFEST_LINK && *s != MANIFEST_OTHER &&
             *s != MANIFEST_UNREAD))
                return -EBADMSG;
        e->type = *s;
        if (!space(c) || !number(c, false, 8, 07777, NULL, &mode) || !space(c) ||
            !number(c, false, 10, UINT64_MAX, NULL, &e->size) || !space(c) ||
            !number(c, true, 10, INT64_MAX, &e->mtime_ns, NULL) || !space(c) ||
            !number(c, true, 10, INT64_MAX, &e->ctime_ns, NULL) || !space(c) ||
            !number(c, false, 10, UINT64_MAX, NULL, &e->dev) || !space(c) ||
            !number(c, false, 10, UINT64_MAX, NULL, &e->ino) || !space(c) || !field(c, &s, &len))
                return -EBADMSG;
        e->mode = (uint32_t) mode;
        if (len == 1 && *s == '-')
                e->hash[0] = 0;
        else if (len == MANIFEST_HASH_HEX && e->type == MANIFEST_FILE) {
                for (size_t i = 0; i < len; i++)
                        if (hex_value(s[i]) < 0)
                                return -EBADMSG;
                memcpy(e->hash, s, len);
                e->hash[len] = 0;
        } else
                return -EBADMSG;
        if (!space(c) || !name(c, &e->path) || !tree_path_valid(e->path))
                return -EBADMSG;
        /* A link's target, when it was read (a record of names only has none). */
        if (e->type == MANIFEST_LINK && c->p < c->end && *c->p == ' ') {
                if (!space(c) || !name(c, &e->target))
                        return -EBADMSG;
        }
        if (c->p >= c->end || *c->p != '\n')
                return -EBADMSG;
        c->p++;
        return 0;
}

int manifest_parse(const char *text, size_t size, manifest *ret, size_t *ret_line)
{
        manifest m = {};
        size_t line = 1;
        int r = 0;
        if (size > MANIFEST_MAX_TEXT || size < strlen(MANIFEST_MAGIC) ||
            memcmp(text, MANIFEST_MAGIC, strlen(MANIFEST_MAGIC)) != 0)
                r = -EBADMSG;
        cursor c = { .p = text + strlen(MANIFEST_MAGIC), .end = text + size };
        while (r >= 0 && c.p < c.end) {
                line++;
                manifest_entry e = {};
                r = m.n >= MANIFEST_MAX_ENTRIES ? -EBADMSG : parse_line(&c, &e);
                /* In the walk's order, each path once. */
                if (r >= 0 && m.n && tree_path_cmp(m.entries[m.n - 1].path, e.path) >= 0)
                        r = -EBADMSG;
                if (r >= 0)
                        r = ARRAY_GROW(m.entries, m.allocated, m.n, 256);
                if (r < 0) {
                        entry_done(&e);
                        break;
                }
                m.entries[m.n++] = e;
        }
        if (r < 0) {
                manifest_done(&m);
                if (ret_line)
                        *ret_line = line;
                return r;
        }
        *ret = m;
        return 0;
}
