/* SPDX-License-Identifier: MIT */
/*
 * bench/floor SOCKET TAG: the least any libcurl client can do for aisb's cache-hit decision,
 * to measure what the host's libcurl costs by itself: the same two requests aisb makes
 * (GET /_ping, then GET /libpod/images/TAG/exists) over the same unix socket, and nothing
 * else. Exit 0 when the image exists. bench/run compiles it against the system libcurl.
 */
#include <curl/curl.h>
#include <stdio.h>

static size_t discard(char *data, size_t size, size_t n, void *userdata)
{
        return size * n;
}

static long get(CURL *curl, const char *url)
{
        long status = 0;
        curl_easy_setopt(curl, CURLOPT_URL, url);
        if (curl_easy_perform(curl) != CURLE_OK)
                return -1;
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        return status;
}

int main(int argc, char **argv)
{
        if (argc != 3) {
                fprintf(stderr, "usage: floor SOCKET TAG\n");
                return 2;
        }
        CURL *curl = curl_easy_init();
        if (!curl)
                return 1;
        char *tag = curl_easy_escape(curl, argv[2], 0);
        char url[1024];
        snprintf(url, sizeof url, "http://d/v4.0.0/libpod/images/%s/exists", tag ? tag : "");
        curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, argv[1]);
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
        int code = get(curl, "http://d/_ping") == 200 && get(curl, url) == 204 ? 0 : 1;
        curl_free(tag);
        curl_easy_cleanup(curl);
        return code;
}
