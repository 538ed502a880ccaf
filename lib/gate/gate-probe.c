/* SPDX-License-Identifier: MIT */
/*
 * aisb's request to a run's own gate (gate_probe, gate.h), through the gate as the sandbox's would
 * go, with the run's key: squid answers it only once its helpers run.
 */
#include <curl/curl.h>

#include "gate-squid.h"
#include "gate.h"
#include "service.h"

static size_t probe_discard(char *data, size_t size, size_t n, void *userdata)
{
        (void) data;
        (void) userdata;
        return size * n;
}

static int probe_progress(void *userdata, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
        return ctx_stopping(userdata) ? 1 : 0;
}

/* Whether squid's answer names the page of a gate whose run is gone. */
static size_t probe_header(char *data, size_t size, size_t n, void *userdata)
{
        static const char name[] = "X-Squid-Error:";
        size_t len = size * n;
        if (len > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
                size_t i = sizeof name - 1;
                while (i < len && (data[i] == ' ' || data[i] == '\t'))
                        i++;
                if (len - i >= strlen(GATE_HELD_PAGE) && memcmp(data + i, GATE_HELD_PAGE, strlen(GATE_HELD_PAGE)) == 0)
                        *(bool *) userdata = true;
        }
        return len;
}

int gate_probe(aisb_ctx *ctx, unsigned port, const char *key, long timeout_ms, aisb_error **err)
{
        CURL *c = curl_easy_init();
        if (!c)
                return error_oom(err);
        char proxy[32];
        snprintf(proxy, sizeof proxy, "http://127.0.0.1:%u", port);
        curl_easy_setopt(c, CURLOPT_URL, "http://" GATE_PROBE_HOST "/");
        curl_easy_setopt(c, CURLOPT_PROXY, proxy);
        curl_easy_setopt(c, CURLOPT_NOPROXY, ""); /* whatever no_proxy says */
        curl_easy_setopt(c, CURLOPT_PROXYUSERNAME, GATE_CLIENT_USER);
        curl_easy_setopt(c, CURLOPT_PROXYPASSWORD, key);
        curl_easy_setopt(c, CURLOPT_PROXYAUTH, (long) CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, probe_discard);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, probe_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, ctx);
        bool held = false;
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, probe_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &held);
        CURLcode rc = curl_easy_perform(c);
        long status = 0;
        (void) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup(c);
        if (rc == CURLE_OK && status > 0 && held)
                return aisb_error_set(err, -EIO,
                                      "the gate on 127.0.0.1:%u refuses as if its run were gone: it cannot "
                                      "see its marker tls/serving; run again",
                                      port);
        if (rc == CURLE_OK && status > 0)
                return 0;
        if (rc == CURLE_ABORTED_BY_CALLBACK)
                return aisb_error_set(err, -ECANCELED, "stopped while the gate started");
        return aisb_error_set(err, -ETIMEDOUT,
                              "the gate on 127.0.0.1:%u did not answer a request (%s): squid could not "
                              "start the helper that refuses the sandbox once its run is gone (as when "
                              "something holds every port on the loopback); run again",
                              port, curl_easy_strerror(rc));
}
