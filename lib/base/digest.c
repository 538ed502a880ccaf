/* SPDX-License-Identifier: MIT */
#include "digest.h"
#include "fileio.h"

#include <nettle/sha2.h>

struct digest {
        struct sha256_ctx nettle;
};

int digest_new(digest **ret)
{
        digest *s = malloc(sizeof *s);
        if (!s)
                return -ENOMEM;
        nettle_sha256_init(&s->nettle);
        *ret = s;
        return 0;
}

int digest_update(digest *s, const void *data, size_t size)
{
        nettle_sha256_update(&s->nettle, size, data);
        return 0;
}

int digest_update_fd(digest *s, int fd, uint64_t size)
{
        uint8_t buf[64 * 1024];
        for (uint64_t off = 0; off < size;) {
                size_t want = size - off < sizeof buf ? (size_t) (size - off) : sizeof buf;
                int r = pread_exactly(fd, buf, want, off);
                if (r < 0)
                        return r;
                nettle_sha256_update(&s->nettle, want, buf);
                off += want;
        }
        return 0;
}

int digest_end_hex(digest *s, size_t hex_chars, char **ret)
{
        uint8_t sum[SHA256_DIGEST_SIZE];
        if (hex_chars > 2 * SHA256_DIGEST_SIZE || hex_chars % 2)
                return -EINVAL;
        nettle_sha256_digest(&s->nettle, sizeof sum, sum);
        char *hex = malloc(hex_chars + 1);
        if (!hex)
                return -ENOMEM;
        for (size_t i = 0; i < hex_chars / 2; i++)
                snprintf(hex + 2 * i, 3, "%02x", sum[i]);
        hex[hex_chars] = 0;
        *ret = hex;
        return 0;
}

void digest_free(digest *s)
{
        free(s);
}

int sha256_hex(const void *data, size_t size, size_t hex_chars, char **ret)
{
        _cleanup_(digest_freep) digest *s = NULL;
        int r = digest_new(&s);
        if (r < 0)
                return r;
        r = digest_update(s, data, size);
        return r < 0 ? r : digest_end_hex(s, hex_chars, ret);
}
