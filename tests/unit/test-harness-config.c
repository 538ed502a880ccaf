/* SPDX-License-Identifier: MIT */
/* The bridges' pure rules (harness-carry.c, harness-config.c): which keys a carry-list carries
 * at all, which of those are credentials and stay on the host, and what policy sets in codex's
 * configuration whatever the files say. */
#include <check.h>
#include <stdlib.h>

#include "harness-carry.h"
#include "harness-config.h"
#include "pi-config.h"
#include "unit.h"

static json_object *J(const char *text)
{
        json_object *o = NULL;
        aisb_error *err = NULL;
        ck_assert_msg(settings_parse_json(text, strlen(text), "test", &o, &err) == 0, "%s", aisb_error_message(err));
        return o;
}

static void assert_json(json_object *got, const char *want)
{
        json_object *w = J(want);
        ck_assert_msg(json_object_equal(got, w), "got %s, want %s",
                      json_object_to_json_string_ext(got, JSON_C_TO_STRING_PLAIN), want);
        json_object_put(w);
}

/* The scrub of in (no key carried by name) leaves want; the paths it removed, as it says them
 * (free it). */
static char *scrub_to(const char *in, const char *want)
{
        json_object *o = J(in);
        buffer removed = {};
        ck_assert_int_eq(harness_scrub_credentials(o, NULL, &removed), 0);
        assert_json(o, want);
        json_object_put(o);
        char *text = buffer_steal(&removed);
        return text ? text : strdup("");
}

START_TEST(test_credential_names)
{
        static const char *const credentials[] = {
                "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "apiKeyHelper", "X-Api-Key",
                "x-api-key", "Authorization", "experimental_bearer_token", "AWS_SECRET_ACCESS_KEY",
                "GH_TOKEN", "password", "client_secret", "apikey", "Cookie", "private_key",
                "awsCredentialExport",
                /* Spellings a review found bridged: one-word compounds, short names at the end. */
                "PGPASSWORD", "CLIENTSECRET", "SECRETKEY", "MYAPPSECRET", "AWS_SECRETACCESSKEY", "DB_PASS",
                "REDIS_PWD", "MYSQL_PWD", "SMTP_PASS", "APITOKEN", "ACCESSTOKEN", "REFRESHTOKEN", "GITHUB_APITOKEN",
                "X_AUTH", "NPM_AUTH", "NPM_CONFIG__AUTH", "SIGNINGKEY", "DB_PASSPHRASE", "STRIPE_SECRETKEY", "auth",
                "sig", "GITLAB_PAT", "X-Tenant-Pass", "X-Corp-Auth", "MY_CREDS", "SENTRY_DSN", "DISCORD_WEBHOOK",
                "DISCORD_WEBHOOK_URL", "SSHPASS", "LDAP_BIND_PW", "DATADOG_APPKEY", "TAILSCALE_AUTHKEY",
                "ELASTICSEARCHCLUSTERADMINPASSWORD",
        };
        static const char *const others[] = {
                "env_key", "bearer_token_env_var", "api_key_env", "model", "model_provider", "base_url",
                "max_output_tokens", "CLAUDE_CODE_MAX_OUTPUT_TOKENS", "MAX_THINKING_TOKENS", "ANTHROPIC_BASE_URL",
                "keymap", "monkey", "tokenizer", "preferred_auth_method", "", "___",
                "PWD", "pat", "authority", "passthrough", "bypass", "signature_version", "OTEL_EXPORTER_OTLP_HEADERS",
                "http_headers", "env_http_headers",
                /* About a credential, not one (a re-review's false positives). */
                "model_auto_compact_token_limit", "tool_output_token_limit", "cli_auth_credentials_store",
                "mcp_oauth_credentials_store", "CLAUDE_CODE_API_KEY_HELPER_TTL_MS", "PASSWORD_STORE_DIR", "KEY_PATH",
                "SECRETS_DIR", "GH_ENTERPRISE_TOKEN_FILE", "tokenBudget", "AWS_ACCESS_KEY_ID", "keyId", "tokenId",
                "key_bindings",
        };
        for (size_t i = 0; i < ELEMENTSOF(credentials); i++)
                ck_assert_msg(harness_key_is_credential(credentials[i]), "%s is a credential", credentials[i]);
        for (size_t i = 0; i < ELEMENTSOF(others); i++)
                ck_assert_msg(!harness_key_is_credential(others[i]), "%s is no credential", others[i]);
}
END_TEST

/* Credentials go at any depth, inside arrays too (an entry of an array that lost a key goes
 * whole), named by their path; references stay. */
START_TEST(test_scrub)
{
        _cleanup_free_ char *text = scrub_to("{\"model\":\"m\",\"model_providers\":{\"acme\":{\"base_url\":\"https://a\","
                                             "\"env_key\":\"ACME_KEY\",\"experimental_bearer_token\":\"lit-1\","
                                             "\"http_headers\":{\"X-Api-Key\":\"lit-2\",\"X-Team\":\"t\"},"
                                             "\"env_http_headers\":{\"Authorization\":\"ACME_AUTH\"}}},"
                                             "\"servers\":[{\"name\":\"s\",\"token\":\"lit-3\"}],"
                                             "\"shell_environment_policy\":{\"set\":{\"GITHUB_TOKEN\":\"lit-4\",\"LANG\":\"C\"}}}",
                                             "{\"model\":\"m\",\"model_providers\":{\"acme\":{\"base_url\":\"https://a\","
                                             "\"env_key\":\"ACME_KEY\",\"http_headers\":{\"X-Team\":\"t\"},"
                                             "\"env_http_headers\":{\"Authorization\":\"ACME_AUTH\"}}},\"servers\":[],"
                                             "\"shell_environment_policy\":{\"set\":{\"LANG\":\"C\"}}}");
        ck_assert_str_eq(text ? text : "",
                         "model_providers.acme.experimental_bearer_token, model_providers.acme.http_headers.X-Api-Key, "
                         "servers[0].token, shell_environment_policy.set.GITHUB_TOKEN, ");
}
END_TEST

/* A value that looks like a credential goes whatever its name: a known token format, a URL
 * with a password, a random-looking token; an array holding one takes its key along.
 * Placeholders and ordinary values stay. */
#define GH_TOKEN "ghp_Qm4TzR8vLc2WxHy7NbKd3PfJ6sGa9UeVt5Rw"
START_TEST(test_scrub_values)
{
        _cleanup_free_ char *text = scrub_to("{\"env\":{\"MY_LLM\":\"" GH_TOKEN "\",\"LANG\":\"C.UTF-8\",\"HINT\":\"sk-...\"},"
                                             "\"proxy\":\"https://me:Zq8vR2xLp0wT@proxy.corp.test\",\"model\":\"gpt-5.1-codex-max\","
                                             "\"base_url\":\"https://llm.corp.test/v1\","
                                             "\"permissions\":{\"allow\":[\"Bash(ls)\",\"Bash(gh auth login --with-token " GH_TOKEN ")\"],"
                                             "\"deny\":[\"Read(./.env)\"]}}",
                                             "{\"env\":{\"LANG\":\"C.UTF-8\",\"HINT\":\"sk-...\"},\"model\":\"gpt-5.1-codex-max\","
                                             "\"base_url\":\"https://llm.corp.test/v1\",\"permissions\":{\"deny\":[\"Read(./.env)\"]}}");
        ck_assert_str_eq(text, "env.MY_LLM, proxy, permissions.allow, ");
        ck_assert_ptr_null(strstr(text, "ghp_"));
}
END_TEST

#define GH_TOKEN_VALUE "ghp_Xk9fQ2mZp7LwR4tV8bN1cJ6hY3sD0gE5uK2o"
/* The review's corpus: what its two attackers found bridged, each withheld now, by name or
 * by an assignment in its value; and what must stay (prose, references, a routing header). */
START_TEST(test_scrub_review_corpus)
{
        _cleanup_free_ char *text = scrub_to(
                "{\"env\":{\"TOKEN_ENV\":\"Winter2024Prod\",\"API_KEY_ENV\":\"x1y2z3w4\","
                "\"OTEL_EXPORTER_OTLP_HEADERS\":\"Authorization=Bearer abcdefghijklmnopqrstuvwxyz123456\","
                "\"ANTHROPIC_CUSTOM_HEADERS\":\"X-Corp-Auth: 0123456789abcdef0123456789abcdef\","
                "\"MY_SERVICE_AUTH\":\"Basic YWRtaW46cHc=\",\"SVC\":\"Basic YWRtaW46cHc9cHc=\","
                "\"ANTHROPIC_BASE_URL\":\"https://gw.test/v1?key=abcdefghij0123456789\","
                "\"DOCS_URL\":\"https://docs.test/a?page=2\",\"LANG\":\"C.UTF-8\"},"
                "\"hooks\":[{\"command\":\"curl -H 'X-Auth: Qm4TzR8vLc2WxHy7NbKd' https://x.test\"},"
                "{\"command\":\"deploy --token $DEPLOY_TOKEN\"}],"
                "\"statusLine\":{\"command\":\"PGPASSWORD=Winter2024Prod psql -c 'select 1'\"},"
                "\"instructions\":\"Never print a token: ask the user first. Keys are secret.\","
                "\"mcp_servers\":{\"gh\":{\"args\":[\"--password\",\"Tr0ub4dor3horse\"],\"env\":{\"CLIENTSECRET\":\"abc123def\"}},"
                "\"db\":{\"args\":[\"--auth=abcdef123456\"]},\"ok\":{\"args\":[\"--password\",\"$PW\",\"--port\",\"5432\"]}},"
                "\"model_providers\":{\"corp\":{\"query_params\":{\"api-version\":\"2025-04-01\",\"sig\":\"s1g2n3a4\"},"
                "\"http_headers\":{\"X-Auth\":\"0123456789abcdef\",\"X-Team\":\"t\",\"x-honeycomb-team\":\"aBcDeFgHiJkLmNoPqRsTuV\"}}},"
                "\"otel\":{\"exporter\":{\"otlp-http\":{\"endpoint\":\"https://o.test\",\"headers\":{\"x-honeycomb-team\":"
                "\"aBcDeFgHiJkLmNoPqRsTuV\"}}}},"
                "\"skills\":[{\"name\":\"s\",\"auth\":\"pa55word\"}],"
                "\"profiles\":{\"p1\":{\"env\":{\"SECRETKEY\":\"v\"}}},"
                "\"more\":{\"docker\":\"{\\\"auths\\\":{\\\"r\\\":{\\\"auth\\\":\\\"dXNlcjpwYXNzd29yZDEyMw==\\\"}}}\","
                "\"jenkins\":\"curl -u admin:S3cr3tPassw0rd https://jenkins.test/x\","
                "\"plain\":\"curl -u admin https://jenkins.test/x\","
                "\"q1\":\"PGPASSWORD=\\\"Tr0ub4dor3\\\" psql -tc x\",\"q2\":\"mysql --password 'Tr0ub4dor3'\","
                "\"q3\":\"curl -H 'Authorization: token 0a1b2c3d4e5f'\",\"q4\":[\"X-Api-Key:abcdef12\"],"
                "\"q5\":\"curl --user=admin:Tr0ub4dor3 https://x.test\",\"perm\":[\"Bash(gh auth token:*)\"]},"
                "\"mcp\":{\"env_http_headers\":{\"Authorization\":\"" GH_TOKEN_VALUE "\"},"
                "\"ok\":{\"env_http_headers\":{\"Authorization\":\"ACME_AUTH\",\"X-Org\":\"ORG_2\"}},"
                "\"http_headers\":{\"Accept\":\"application/json\",\"User-Agent\":\"codex/0.171\"}}}",
                                             "{\"env\":{\"DOCS_URL\":\"https://docs.test/a?page=2\",\"LANG\":\"C.UTF-8\"},"
                                             "\"hooks\":[{\"command\":\"deploy --token $DEPLOY_TOKEN\"}],\"statusLine\":{},"
                                             "\"instructions\":\"Never print a token: ask the user first. Keys are secret.\","
                                             "\"mcp_servers\":{\"gh\":{\"env\":{}},\"db\":{},\"ok\":{\"args\":[\"--password\",\"$PW\",\"--port\",\"5432\"]}},"
                                             "\"model_providers\":{\"corp\":{\"query_params\":{\"api-version\":\"2025-04-01\"},"
                                             "\"http_headers\":{\"X-Team\":\"t\"}}},"
                                             "\"otel\":{\"exporter\":{\"otlp-http\":{\"endpoint\":\"https://o.test\",\"headers\":{}}}},"
                                             "\"skills\":[],\"profiles\":{\"p1\":{\"env\":{}}},"
                                             "\"more\":{\"plain\":\"curl -u admin https://jenkins.test/x\",\"perm\":[\"Bash(gh auth token:*)\"]},"
                                             "\"mcp\":{\"env_http_headers\":{},"
                                             "\"ok\":{\"env_http_headers\":{\"Authorization\":\"ACME_AUTH\",\"X-Org\":\"ORG_2\"}},"
                                             "\"http_headers\":{\"Accept\":\"application/json\",\"User-Agent\":\"codex/0.171\"}}}");
        ck_assert_ptr_null(strstr(text, "Winter2024"));
        ck_assert_ptr_null(strstr(text, "abcdef"));
}
END_TEST

/* Whether value, a string under key in a table of kind table ("env", or a plain key's: NULL),
 * is withheld by the scrub. */
static bool withheld(const char *table, const char *key, const char *value)
{
        json_object *o = json_object_new_object(), *t = table ? json_object_new_object() : o;
        ck_assert_ptr_nonnull(o);
        if (table)
                ck_assert_int_eq(json_object_object_add(o, table, t), 0);
        ck_assert_int_eq(json_object_object_add(t, key, json_object_new_string(value)), 0);
        ck_assert_int_eq(harness_scrub_credentials(o, NULL, NULL), 0);
        bool gone = !json_object_object_get_ex(t, key, NULL);
        json_object_put(o);
        return gone;
}

/* A review's first shape: a claude hook's command passing mysql's password glued on its -p
 * option. The hook goes, and its matcher's entry with it; a prompting -p, another tool's -p
 * (a port, a mapping, a process) and a variable stay. */
START_TEST(test_scrub_mysql_hook)
{
        _cleanup_free_ char *text = scrub_to("{\"hooks\":{\"PostToolUse\":[{\"matcher\":\"Bash\",\"hooks\":[{\"type\":\"command\","
                                             "\"command\":\"mysql -uroot -pS3cretPass123 -e 'select 1'\"}]},"
                                             "{\"matcher\":\"Edit\",\"hooks\":[{\"type\":\"command\",\"command\":\"mysql -uroot -p app\"}]}]}}",
                                             "{\"hooks\":{\"PostToolUse\":[{\"matcher\":\"Edit\",\"hooks\":[{\"type\":\"command\","
                                             "\"command\":\"mysql -uroot -p app\"}]}]}}");
        ck_assert_str_eq(text, "hooks.PostToolUse[0].hooks[0].command, ");

        static const char *const passwords[] = {
                "mysql -uroot -pS3cretPass123",
                "mysql -u root -p'S3cretPass123' app",
                "mysql -uroot -p\"S3cretPass123\"",
                "cd /srv && /usr/bin/mysqldump --user=backup -pTr0ub4dor3 app > a.sql",
                "mariadb-dump -pTr0ub4dor3 app",
                "mysql -pS3cretPass123",                 /* no -u: the program says it */
                "bash -c \"mysqladmin -uroot -pS3cretPass123 status\"",
                "docker login -u me -p Tr0ub4dor3 registry.test", /* after a user's option, */
                "tool -ume -pS3cret99",                           /* spaced in a login only */
                "sshpass -p Tr0ub4dor3 ssh host",
                "redis-cli -h cache -a Tr0ub4dor3 ping",
                "mongosh -u admin -p Tr0ub4dor3 db",
                "sqlcmd -S db -U sa -P 'Tr0ub4dor3!'",
        };
        for (size_t i = 0; i < ELEMENTSOF(passwords); i++)
                ck_assert_msg(withheld(NULL, "command", passwords[i]), "%s withheld", passwords[i]);
        static const char *const others[] = {
                "mysql -uroot -p",                       /* prompts */
                "mysql -uroot -p app2024db",             /* prompts; app2024db is the database */
                "mysql -uroot -p$MYSQL_PWD",
                "mysql -uroot -p\"$MYSQL_PWD\"",
                "mysql -uroot -p'<password>'",
                "mysql -h db -P 3306 -uroot -p",
                "ssh -p 2222 host",
                "psql -U app -p 5432 -h db",
                "docker run -u 1000 -p 8080:80 -p 127.0.0.1:8443:443/tcp img",
                "docker run --user app -p 8443:443/tcp img",
                "ps -u root -p 123456",
                "strace -uroot -p1234567",
                "rsync -u -p src2024/ dst/",
                "sudo -u app docker compose -p app2024 up -d", /* a project's name */
                "tool -u me -p S3cret99",                      /* a password, spaced outside a login */
                "gcc -pthread -o x x.c $(mysql_config --libs)",
                "mongosh -u admin -p --authenticationDatabase admin",
                "sshpass -f ~/.pw ssh -p 2222 host",
                "curl -u admin -p https://api.test/v1/items",
        };
        for (size_t i = 0; i < ELEMENTSOF(others); i++)
                ck_assert_msg(!withheld(NULL, "command", others[i]), "%s kept", others[i]);

        /* A command's words one a string: mcp_servers' command and args. */
        json_object *o = J("{\"mcp_servers\":{\"db\":{\"command\":\"mysql\",\"args\":[\"mysql\",\"-uroot\",\"-pS3cretPass123\"]},"
              "\"db2\":{\"args\":[\"--host\",\"db\",\"-u\",\"admin\",\"-pq8Zr2LxW\"]},"
              "\"reg\":{\"args\":[\"login\",\"-u\",\"me\",\"-p\",\"Tr0ub4dor3\",\"registry.test\"]},"
              "\"db3\":{\"args\":[\"/usr/bin/mysql\",\"-uroot\",\"-p\",\"app2024db\"]},"
              "\"web\":{\"args\":[\"-u\",\"1000\",\"-p\",\"8080:80\"]}}}");
        ck_assert_int_eq(harness_scrub_credentials(o, NULL, NULL), 0);
        assert_json(o, "{\"mcp_servers\":{\"db\":{\"command\":\"mysql\"},\"db2\":{},\"reg\":{},"
                       "\"db3\":{\"args\":[\"/usr/bin/mysql\",\"-uroot\",\"-p\",\"app2024db\"]},"
                       "\"web\":{\"args\":[\"-u\",\"1000\",\"-p\",\"8080:80\"]}}}");
        json_object_put(o);
}
END_TEST

/* The second: the same command as an environment's value, under a name that says nothing. */
START_TEST(test_scrub_mysql_env)
{
        _cleanup_free_ char *text = scrub_to("{\"env\":{\"DB_CMD\":\"mysql -uadmin -pq8Zr2LxW\",\"DB_SHELL\":\"mysql -uadmin -p\","
                                             "\"SSH_CMD\":\"ssh -p 2222 -l admin host\",\"LANG\":\"C.UTF-8\"}}",
                                             "{\"env\":{\"DB_SHELL\":\"mysql -uadmin -p\",\"SSH_CMD\":\"ssh -p 2222 -l admin host\","
                                             "\"LANG\":\"C.UTF-8\"}}");
        ck_assert_str_eq(text, "env.DB_CMD, ");
        ck_assert_ptr_null(strstr(text, "q8Zr"));
        ck_assert_msg(withheld("env", "X", "MYSQL_HOST=db mysql -uadmin -pq8Zr2LxW app"), "after an assignment");
        ck_assert_msg(withheld("set", "X", "mysql -uadmin -p'q8Zr2LxW'"), "codex's set");
}
END_TEST

/* The third: a webhook's URL, its token in its path, under a name without "webhook": a known
 * service's, placeholders too, and any URL with a random-looking segment. Ordinary URLs stay. */
START_TEST(test_scrub_webhook_urls)
{
        static const char *const hooks[] = {
                "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX",
                "https://hooks.slack.com/workflows/T01ABCDEF/A02/1234/abcd",
                "https://discord.com/api/webhooks/123456789/abcdefTOKENabcdefTOKENabcdefTOKEN",
                "https://ptb.discord.com/api/v10/webhooks/123456789/xyz",
                "https://discordapp.com/api/webhooks/1/t",
                "https://outlook.office.com/webhook/1b2c3d4e-0000-1111-2222-333344445555@tenant/IncomingWebhook/abc/def",
                "https://acme.webhook.office.com/webhookb2/1b2c3d4e-0000-1111-2222-333344445555/IncomingWebhook/x",
                "https://HOOKS.ZAPIER.COM./hooks/catch/123456/abcdef/",
                "https://api.telegram.org/bot123456:ABC-DEF1234ghIkl-zyx57W2v1u123ew11/sendMessage",
                "https://maker.ifttt.com/trigger/deploy/with/key/abc",
                "https://open.feishu.cn/open-apis/bot/v2/hook/1b2c3d4e-0000-1111-2222-333344445555",
                "curl -X POST -d @msg.json https://hooks.slack.com/services/T1/B1/abc",
                "https://relay.test/to/https://hooks.slack.com/services/T1/B1/abc",
                "x://y://hooks.slack.com/services/T1/B1/abc", /* a "://" in a host */
                /* Random-looking segments of services not listed. */
                "https://chat.corp.test/hooks/xjm8hyq5ij8r5bc4xw9s1hyqfy",
                "https://notify.test/t/aBcD3fGh1jKlMn0pQrStUvWx/send",
                "https://n.test/in/Dm9bWZSK6vJcTBySpQ2bu5GN",
        };
        for (size_t i = 0; i < ELEMENTSOF(hooks); i++)
                ck_assert_msg(withheld("env", "NOTIFY", hooks[i]), "%s withheld", hooks[i]);
        static const char *const urls[] = {
                "https://docs.test/a/b",
                "https://api.example.com/v1/models",
                "https://github.com/acme/widgets.git",
                "git+https://github.com/acme/widgets#0a1b2c3d4e5f60718293a4b5c6d7e8f901234567",
                "https://github.com/acme/widgets/commit/0a1b2c3d4e5f60718293a4b5c6d7e8f901234567",
                "https://registry.npmjs.org/",
                "https://registry.npmjs.org/@acme%2fwidgets/-/widgets-1.2.3.tgz",
                "https://items.test/v2/123e4567-e89b-12d3-a456-426614174000",
                "https://huggingface.co/Qwen/Qwen2-VL-72B-Instruct-GPTQ-Int4",
                "https://docs.test/guides/getting-started-with-v2-api",
                "https://cdn.test/releases/claude-3-5-sonnet-20241022/ubuntu2204serverimage-amd64",
                "https://docs.test/k8s/K8sClusterAutoscalerV2Beta1",
                "https://blog.test/@me/how-to-build-agents-3f2a9b1c8d7e",
                "https://blog.test/p/post-title-3f2a9b1c8d7e4a5b",
                "https://api.slack.com/messaging/webhooks",
                "https://discord.com/developers/docs/resources/webhook",
                "https://hooks.slack.com/services/",
                "https://llm.corp.test/openai/deployments/gpt-4o-2024-08-06/chat",
                "see https://docs.test/a/b, then https://x.test/y.",
        };
        for (size_t i = 0; i < ELEMENTSOF(urls); i++)
                ck_assert_msg(!withheld("env", "NOTIFY", urls[i]), "%s kept", urls[i]);
        /* Under a plain key, in a list, as claude's statusLine has it. */
        json_object *o = J("{\"statusLine\":{\"command\":\"notify https://hooks.slack.com/services/T1/B2/c3\"},"
                           "\"links\":[\"https://docs.test/a\",\"https://discord.com/api/webhooks/1/tok\"],"
                           "\"docs\":[\"https://docs.test/a\"]}");
        ck_assert_int_eq(harness_scrub_credentials(o, NULL, NULL), 0);
        assert_json(o, "{\"statusLine\":{},\"docs\":[\"https://docs.test/a\"]}");
        json_object_put(o);
}
END_TEST

/* The fourth: codex's query_params, which codex adds to every request's URL: a credential's
 * name goes whatever its value (Azure Functions' code), a value that looks like one goes
 * under any name but those that pick an API or a deployment; and the same names in a URL's
 * query. */
START_TEST(test_scrub_query_params)
{
        _cleanup_free_ char *text = scrub_to("{\"model_providers\":{\"fn\":{\"base_url\":\"https://fn.azurewebsites.net/api\","
                                             "\"query_params\":{\"api-version\":\"2025-04-01\",\"code\":\"Fn2xLp0wTq8v\"}},"
                                             "\"apim\":{\"query_params\":{\"subscription-key\":\"0123456789abcdef\",\"access_token\":\"x1y2z3w4v5\","
                                             "\"jwt\":\"eyJ\",\"custom\":\"Zq8vR2xLp0wT\",\"format\":\"json\",\"deployment\":\"gpt-4o-2024\","
                                             "\"tier\":\"free\"}}}}",
                                             "{\"model_providers\":{\"fn\":{\"base_url\":\"https://fn.azurewebsites.net/api\","
                                             "\"query_params\":{\"api-version\":\"2025-04-01\"}},"
                                             "\"apim\":{\"query_params\":{\"format\":\"json\",\"deployment\":\"gpt-4o-2024\",\"tier\":\"free\"}}}}");
        ck_assert_str_eq(text, "model_providers.fn.query_params.code, model_providers.apim.query_params.subscription-key, "
                               "model_providers.apim.query_params.access_token, model_providers.apim.query_params.jwt, "
                               "model_providers.apim.query_params.custom, ");

        static const char *const credentials[] = {
                "https://fn.azurewebsites.net/api/HttpTrigger?code=Fn2xLp0wTq8v",
                "https://fn.azurewebsites.net/api/x?name=a&code=Zq8vR2xLp0wT",
                "https://gw.test/v1?api-version=2025-04-01&sig=s1g2n3a4",
                "https://gw.test/v1?access_token=x1y2z3w4v5",
                "https://gw.test/v1?session=Zq8vR2xLp0wT",
        };
        for (size_t i = 0; i < ELEMENTSOF(credentials); i++)
                ck_assert_msg(withheld("env", "FN_URL", credentials[i]), "%s withheld", credentials[i]);
        static const char *const others[] = {
                "https://gw.test/v1?api-version=2025-04-01",
                "https://docs.test/a?code=py",
                "https://docs.test/a?code=$CODE",
                "lint --code=strict src",      /* a code's option, not a query's */
                "code=abc123def ./run",        /* a variable, not a query's */
        };
        for (size_t i = 0; i < ELEMENTSOF(others); i++)
                ck_assert_msg(!withheld("env", "FN_URL", others[i]), "%s kept", others[i]);
}
END_TEST

/* claude's settings as the bridge carries them: the commands that print a credential are on no
 * carry-list, so they stay on the host; a credential among what is carried goes by its name. */
START_TEST(test_claude_scrub)
{
        json_object *o = J("{\"model\":\"opus\",\"apiKeyHelper\":\"~/bin/key\",\"awsAuthRefresh\":\"aws sso login\","
                           "\"otelHeadersHelper\":\"h\",\"env\":{\"ANTHROPIC_BASE_URL\":\"https://b\","
                           "\"ANTHROPIC_API_KEY\":\"sk-ant-lit\",\"DISABLE_TELEMETRY\":\"1\"},"
                           "\"hooks\":{\"PreToolUse\":[{\"matcher\":\"Bash\",\"hooks\":[{\"type\":\"command\",\"command\":\"x\"}]}]},"
                           "\"permissions\":{\"allow\":[\"Bash(ls)\"]}}");
        buffer held = {}, removed = {};
        ck_assert_int_eq(harness_carry(o, CARRY_CLAUDE, NULL, &held), 4);
        ck_assert_int_eq(harness_scrub_credentials(o, NULL, &removed), 0);
        assert_json(o, "{\"model\":\"opus\",\"env\":{\"ANTHROPIC_BASE_URL\":\"https://b\",\"DISABLE_TELEMETRY\":\"1\"},"
                       "\"hooks\":{\"PreToolUse\":[{\"matcher\":\"Bash\",\"hooks\":[{\"type\":\"command\",\"command\":\"x\"}]}]},"
                       "\"permissions\":{\"allow\":[\"Bash(ls)\"]}}");
        _cleanup_free_ char *text = buffer_steal(&held), *credentials = buffer_steal(&removed);
        ck_assert_str_eq(text, "apiKeyHelper, awsAuthRefresh, otelHeadersHelper, env.ANTHROPIC_API_KEY, ");
        ck_assert_str_eq(credentials, "");
        json_object_put(o);
        /* Not an object: nothing to do. */
        o = J("[1]");
        ck_assert_int_eq(harness_carry(o, CARRY_CLAUDE, NULL, NULL), 0);
        assert_json(o, "[1]");
        json_object_put(o);
}
END_TEST

/* What a carry-list carries, for each file: a key a path ends at whole, a table a path goes
 * through by what the path names below it, "*" any key or element, "PREFIX*" the keys it
 * begins; everything else stays on the host, counted and named. bridge-carry's entries add
 * to their own file's list only. A random value under an innocent name is the case no scan
 * of values catches (hex: no token's format, and its entropy is a digest's). */
#define RANDOM_HEX "9f86d081884c7d659a2feaa0c55ad015"
START_TEST(test_carry)
{
        static const struct {
                carry_file f;
                const char *extra[3];
                const char *in, *out, *held;
        } cases[] = {
                { CARRY_PI, {}, "{\"defaultModel\":\"m\",\"defaultProvider\":\"p\",\"defaultThinkingLevel\":\"low\","
                                "\"colorScheme2\":\"" RANDOM_HEX "\",\"compaction\":{\"enabled\":true,\"x\":1},"
                                "\"retry\":{\"provider\":{\"timeoutMs\":5,\"y\":2}},\"images\":5}",
                  "{\"defaultModel\":\"m\",\"defaultProvider\":\"p\",\"defaultThinkingLevel\":\"low\","
                  "\"compaction\":{\"enabled\":true},\"retry\":{\"provider\":{\"timeoutMs\":5}}}",
                  "colorScheme2, compaction.x, retry.provider.y, images, " },
                { CARRY_PI, { "pi:colorScheme2", "claude:theme2" },
                  "{\"theme\":\"dark\",\"theme2\":1,\"colorScheme2\":\"" RANDOM_HEX "\"}",
                  "{\"theme\":\"dark\",\"colorScheme2\":\"" RANDOM_HEX "\"}", "theme2, " },
                { CARRY_PI_MODELS, {},
                  "{\"providers\":{\"p\":{\"baseUrl\":\"u\",\"apiKey\":\"K\",\"extra\":\"x\","
                  "\"models\":[{\"id\":\"m\",\"note\":\"n\"},\"bad\"],\"modelOverrides\":{\"o\":{\"name\":\"n\",\"z\":1}}}},"
                  "\"top\":1}",
                  "{\"providers\":{\"p\":{\"baseUrl\":\"u\",\"apiKey\":\"K\",\"models\":[{\"id\":\"m\"}],"
                  "\"modelOverrides\":{\"o\":{\"name\":\"n\"}}}}}",
                  "providers.p.extra, providers.p.models[1], providers.p.models[0].note, providers.p.modelOverrides.o.z, "
                  "top, " },
                { CARRY_CLAUDE, {},
                  "{\"model\":\"opus\",\"colorScheme2\":\"" RANDOM_HEX "\",\"env\":{\"ANTHROPIC_BASE_URL\":\"https://b\","
                  "\"MY_VAR\":\"1\",\"CLAUDE_CODE_DISABLE_X\":\"1\",\"ANTHROPIC_DEFAULT_OPUS_MODEL\":\"o\","
                  "\"ANTHROPIC_DEFAULTX\":\"y\",\"HTTPS_PROXY\":\"http://h\"},\"effortLevel\":\"high\"}",
                  "{\"model\":\"opus\",\"env\":{\"ANTHROPIC_BASE_URL\":\"https://b\",\"CLAUDE_CODE_DISABLE_X\":\"1\","
                  "\"ANTHROPIC_DEFAULT_OPUS_MODEL\":\"o\"},\"effortLevel\":\"high\"}",
                  "colorScheme2, env.MY_VAR, env.ANTHROPIC_DEFAULTX, env.HTTPS_PROXY, " },
                { CARRY_CLAUDE, { "claude:env.MY_*", "claude:colorScheme2" },
                  "{\"env\":{\"MY_VAR\":\"1\",\"MYVAR\":\"2\"},\"colorScheme2\":\"" RANDOM_HEX "\"}",
                  "{\"env\":{\"MY_VAR\":\"1\"},\"colorScheme2\":\"" RANDOM_HEX "\"}", "env.MYVAR, " },
                { CARRY_CODEX, { "codex:profiles.w.foo" },
                  "{\"model\":\"m\",\"model_provider\":\"c\",\"model_reasoning_effort\":\"low\","
                  "\"model_providers\":{\"c\":{\"base_url\":\"u\",\"env_key\":\"K\","
                  "\"experimental_bearer_token\":\"t\",\"auth\":{\"command\":\"x\"}}},"
                  "\"shell_environment_policy\":{\"inherit\":\"core\",\"set\":{\"A\":\"1\"}},"
                  "\"mcp_servers\":{\"s\":{\"command\":\"c\",\"env\":{\"T\":\"v\"}}},"
                  "\"profiles\":{\"w\":{\"model\":\"o3\",\"foo\":\"bar\",\"baz\":1}},\"colorScheme2\":\"x\"}",
                  "{\"model\":\"m\",\"model_provider\":\"c\",\"model_reasoning_effort\":\"low\","
                  "\"model_providers\":{\"c\":{\"base_url\":\"u\",\"env_key\":\"K\"}},"
                  "\"shell_environment_policy\":{\"inherit\":\"core\"},\"mcp_servers\":{\"s\":{\"command\":\"c\"}},"
                  "\"profiles\":{\"w\":{\"model\":\"o3\",\"foo\":\"bar\"}}}",
                  "model_providers.c.experimental_bearer_token, model_providers.c.auth, shell_environment_policy.set, "
                  "mcp_servers.s.env, profiles.w.baz, colorScheme2, " },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_object *o = J(cases[i].in);
                buffer held = {};
                int n = harness_carry(o, cases[i].f, cases[i].extra, &held);
                assert_json(o, cases[i].out);
                _cleanup_free_ char *text = buffer_steal(&held);
                ck_assert_msg(text && streq(text, cases[i].held), "case %zu held %s", i, text ? text : "(nothing)");
                int commas = 0;
                for (const char *c = text; *c; c++)
                        commas += *c == ',';
                ck_assert_int_eq(n, commas);
                json_object_put(o);
        }
}
END_TEST

/* bridge-carry's entries: HARNESS:KEY, and one clear line for anything else. */
START_TEST(test_carry_entry)
{
        static const char *const good[] = { "pi:colorScheme2", "pi-models:providers.corp.x", "claude:env.MY_VAR",
                                            "codex:profiles.*.model", "claude:env.MY_*", "claude:*",
                                            "codex:model_providers.corp.http_headers.X-Team" };
        static const char *const bad[] = { "", "pi", "pi:", "gemini:x", "claude:env..X", "claude:.x", "claude:x.",
                                           "claude:a*b", "claude:with space", "PI:x", ":x", "claude:x\ty" };
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                ck_assert_msg(carry_entry_check(good[i], NULL) == 0, "%s is an entry", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ck_assert_msg(carry_entry_check(bad[i], NULL) == -EINVAL, "%s is none", bad[i]);
        aisb_error *err = NULL;
        ck_assert_int_eq(carry_entry_check("gemini:model", &err), -EINVAL);
        ck_assert_str_eq(aisb_error_message(err), "bridge-carry: 'gemini:model' is not HARNESS:KEY (HARNESS pi, "
                                                  "pi-models, claude or codex; KEY a key path such as env.MY_VAR or "
                                                  "model_providers.*.base_url)");
        aisb_error_free(err);
        /* The paths the user vouches for by name: whole, no '*', of the file asked. */
        char **named = NULL;
        ck_assert_int_eq(carry_named_paths(CARRY_CLAUDE,
                                           (const char *const[]) { "claude:env.X", "claude:env.Y_*", "codex:env.Z",
                                                                   "claude:a.b", NULL },
                                           &named),
                         0);
        ck_assert_uint_eq(strv_length((const char *const *) named), 2);
        ck_assert_str_eq(named[0], "env.X");
        ck_assert_str_eq(named[1], "a.b");
        strv_free(named);
        ck_assert_int_eq(carry_named_paths(CARRY_PI, NULL, &named), 0);
        ck_assert_ptr_null(named);
}
END_TEST

/* A key the user carries by its whole path goes by its value only: its name is the user's
 * word; a value that looks like a credential still goes, under a name named too. */
START_TEST(test_scrub_named)
{
        json_object *o = J("{\"env\":{\"ANTHROPIC_CUSTOM_HEADERS\":\"X-Team: a\",\"MY_KEY\":\"" GH_TOKEN "\","
                           "\"OTHER_KEY\":\"plain\"},\"query_params\":{\"code\":\"py\",\"sig\":\"s\"},"
                           "\"http_headers\":{\"X-Api-Key\":\"team\",\"X-Auth\":\"0123456789abcdef\"}}");
        buffer removed = {};
        ck_assert_int_eq(harness_scrub_credentials(o, (const char *const[]) { "env.ANTHROPIC_CUSTOM_HEADERS",
                                                                              "env.MY_KEY", "query_params.code",
                                                                              "http_headers.X-Api-Key",
                                                                              "http_headers.X-Auth", NULL },
                                                   &removed),
                         0);
        assert_json(o, "{\"env\":{\"ANTHROPIC_CUSTOM_HEADERS\":\"X-Team: a\"},\"query_params\":{\"code\":\"py\"},"
                       "\"http_headers\":{\"X-Api-Key\":\"team\"}}");
        _cleanup_free_ char *text = buffer_steal(&removed);
        ck_assert_str_eq(text, "env.MY_KEY, env.OTHER_KEY, query_params.sig, http_headers.X-Auth, ");
        json_object_put(o);
}
END_TEST

START_TEST(test_codex_policy)
{
        json_object *o = J("{\"model\":\"gpt\",\"sandbox_mode\":\"workspace-write\",\"approval_policy\":\"on-request\","
                           "\"check_for_update_on_startup\":true,\"model_reasoning_effort\":\"low\","
                           "\"plan_mode_reasoning_effort\":\"minimal\","
                           "\"profiles\":{\"a\":{\"model_reasoning_effort\":\"minimal\",\"sandbox_mode\":\"read-only\"},"
                           "\"b\":{\"model\":\"o3\",\"plan_mode_reasoning_effort\":\"low\"},\"c\":7}}");
        ck_assert_int_eq(codex_config_apply_policy(o, "high", NULL), 0);
        assert_json(o, "{\"model\":\"gpt\",\"sandbox_mode\":\"danger-full-access\",\"approval_policy\":\"on-request\","
                       "\"check_for_update_on_startup\":false,\"model_reasoning_effort\":\"high\","
                       "\"plan_mode_reasoning_effort\":\"high\","
                       "\"profiles\":{\"a\":{\"model_reasoning_effort\":\"high\",\"sandbox_mode\":\"danger-full-access\"},"
                       "\"b\":{\"model\":\"o3\",\"plan_mode_reasoning_effort\":\"high\"},\"c\":7},"
                       "\"features\":{\"plugins\":false,\"daemon_auto_start\":false},\"analytics\":{\"enabled\":false},"
                       "\"otel\":{\"metrics_exporter\":\"none\"}}");
        /* host: the merge's level stays; the sandbox mode and the update check do not. */
        json_object_put(o);
        /* A table of the user's keeps its other keys; a non-table there is replaced. */
        o = J("{\"model_reasoning_effort\":\"low\",\"sandbox_mode\":\"read-only\",\"features\":{\"x\":true,"
              "\"plugins\":true},\"analytics\":7,\"otel\":{\"exporter\":\"none\"}}");
        ck_assert_int_eq(codex_config_apply_policy(o, "host", NULL), 0);
        assert_json(o, "{\"model_reasoning_effort\":\"low\",\"sandbox_mode\":\"danger-full-access\","
                       "\"features\":{\"x\":true,\"plugins\":false,\"daemon_auto_start\":false},"
                       "\"analytics\":{\"enabled\":false},\"otel\":{\"exporter\":\"none\",\"metrics_exporter\":\"none\"},"
                       "\"check_for_update_on_startup\":false}");
        aisb_error *err = NULL;
        ck_assert_int_eq(codex_config_apply_policy(o, "max", &err), -EINVAL);
        ck_assert_str_eq(aisb_error_message(err),
                         "thinking: codex has no level 'max' (use one of: none, minimal, low, medium, high, xhigh, host)");
        aisb_error_free(err);
        json_object_put(o);
        for (const char *const *l = (const char *const[]) { "none", "minimal", "low", "medium", "high", "xhigh", "host", NULL }; *l; l++)
                ck_assert(codex_thinking_level_valid(*l));
        ck_assert(!codex_thinking_level_valid("off"));
        ck_assert(!codex_thinking_level_valid(NULL));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("harness-config");
        TCase *tc = tcase_create("rules");
        tcase_add_test(tc, test_credential_names);
        tcase_add_test(tc, test_scrub);
        tcase_add_test(tc, test_scrub_values);
        tcase_add_test(tc, test_scrub_review_corpus);
        tcase_add_test(tc, test_scrub_mysql_hook);
        tcase_add_test(tc, test_scrub_mysql_env);
        tcase_add_test(tc, test_scrub_webhook_urls);
        tcase_add_test(tc, test_scrub_query_params);
        tcase_add_test(tc, test_claude_scrub);
        tcase_add_test(tc, test_carry);
        tcase_add_test(tc, test_carry_entry);
        tcase_add_test(tc, test_scrub_named);
        tcase_add_test(tc, test_codex_policy);
        suite_add_tcase(s, tc);
        return unit_run(s);
}
