/* tests/test_llm_openai_unit.c: the pure pieces of the `openai` backend (llm/openai_parse.c)
** and its config validation: reply parsing (string, array, null content with and without
** reasoning, error objects, truncated JSON, usage), server error text with the key redacted,
** Retry-After in its three forms, the backoff schedule (docs/openai.md "Retries") and credential
** stripping. No server needed. */
#include <string.h>
#include <time.h>

#include "llm/openai_internal.h"
#include "tests/testutil.h"

static enum sn_openai_parse parse(const char *body, struct sn_llm_reply *r, char *finish,
                                  char *why)
{
    memset(r, 0, sizeof *r);
    return sn_openai_parse_reply(body, strlen(body), r, finish, 32, why, 300);
}

static void test_parse(void)
{
    struct sn_llm_reply r;
    char finish[32], why[300];

    CHECK(parse("{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
                "\"The answer is (B).\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens"
                "\":17,\"completion_tokens\":5,\"total_tokens\":22}}", &r, finish, why) ==
          SN_OPENAI_PARSE_OK);
    CHECK_STR(r.text, "The answer is (B).");
    CHECK(r.prompt_tokens == 17 && r.completion_tokens == 5);
    CHECK_STR(finish, "stop");
    sn_llm_reply_free(&r);

    /* array of parts, no usage */
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"ab\"},"
                "{\"type\":\"image\"},{\"type\":\"text\",\"text\":\"cd\"}]}}]}", &r, finish,
                why) == SN_OPENAI_PARSE_OK);
    CHECK_STR(r.text, "abcd");
    CHECK(r.prompt_tokens == -1 && r.completion_tokens == -1);
    CHECK_STR(finish, "");
    sn_llm_reply_free(&r);

    /* null content: vLLM reasoning parser, Ollama "reasoning" */
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":null,\"reasoning_content\":\"think\"}}]}",
                &r, finish, why) == SN_OPENAI_PARSE_OK);
    CHECK_STR(r.text, "think");
    sn_llm_reply_free(&r);
    CHECK(parse("{\"choices\":[{\"message\":{\"reasoning\":\"hmm\"}}]}", &r, finish, why) ==
          SN_OPENAI_PARSE_OK);
    CHECK_STR(r.text, "hmm");
    sn_llm_reply_free(&r);
    /* empty string content is a valid (empty) answer */
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":\"\"}}]}", &r, finish, why) ==
          SN_OPENAI_PARSE_OK);
    CHECK_STR(r.text, "");
    sn_llm_reply_free(&r);

    /* rejected: no content, error object */
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":null},\"finish_reason\":\"length\"}]}",
                &r, finish, why) == SN_OPENAI_PARSE_REJECTED);
    CHECK(strstr(why, "null") && strstr(why, "length"));
    CHECK(r.text == NULL);
    CHECK(parse("{\"error\":{\"message\":\"model overloaded\"}}", &r, finish, why) ==
          SN_OPENAI_PARSE_REJECTED);
    CHECK(strstr(why, "model overloaded") != NULL);

    /* malformed: retried */
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":\"tru", &r, finish, why) ==
          SN_OPENAI_PARSE_MALFORMED);
    CHECK(parse("", &r, finish, why) == SN_OPENAI_PARSE_MALFORMED);
    CHECK(strstr(why, "empty") != NULL);
    CHECK(parse("[1,2]", &r, finish, why) == SN_OPENAI_PARSE_MALFORMED);
    CHECK(parse("{\"choices\":[]}", &r, finish, why) == SN_OPENAI_PARSE_MALFORMED);
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":42}}]}", &r, finish, why) ==
          SN_OPENAI_PARSE_MALFORMED);
    CHECK(r.text == NULL);
    /* usage out of range -> unknown */
    CHECK(parse("{\"choices\":[{\"message\":{\"content\":\"x\"}}],\"usage\":{\"prompt_tokens\":"
                "-3,\"completion_tokens\":1e300}}", &r, finish, why) == SN_OPENAI_PARSE_OK);
    CHECK(r.prompt_tokens == -1 && r.completion_tokens == -1);
    sn_llm_reply_free(&r);
}

static void test_messages(void)
{
    char out[64];
    const char *b = "{\"error\":{\"message\":\"bad key sk-XYZ in\\nheader\",\"type\":\"x\"}}";
    sn_openai_server_message(b, strlen(b), "sk-XYZ", out, sizeof out);
    CHECK_STR(out, "bad key [redacted] in header");
    b = "{\"object\":\"error\",\"message\":\"vllm says no\"}";
    sn_openai_server_message(b, strlen(b), NULL, out, sizeof out);
    CHECK_STR(out, "vllm says no");
    b = "{\"error\":\"ollama says no\"}";
    sn_openai_server_message(b, strlen(b), NULL, out, sizeof out);
    CHECK_STR(out, "ollama says no");
    b = "<html>\x01gateway\xff</html>";
    sn_openai_server_message(b, strlen(b), NULL, out, sizeof out);
    CHECK_STR(out, "<html>?gateway?</html>");
    /* truncation keeps the bound and says so */
    char small[16];
    sn_openai_sanitize("0123456789abcdefghij", 20, NULL, small, sizeof small);
    CHECK_STR(small, "0123456789ab...");
    /* a secret cut at the boundary is never partly printed */
    sn_openai_sanitize("abcdefgh sk-SECRETKEY", 21, "sk-SECRETKEY", small, sizeof small);
    CHECK(strstr(small, "sk-") == NULL);
    CHECK(strlen(small) < sizeof small);
    sn_openai_server_message("", 0, NULL, out, sizeof out);
    CHECK_STR(out, "(empty body)");
}

static void test_retry_after(void)
{
    double d = -1;
    time_t now = 1700000000; /* Tue, 14 Nov 2023 22:13:20 GMT */
    CHECK(sn_openai_retry_after("1500", "9", now, &d));
    CHECK_CLOSE(d, 1.5, 1e-12, 0);
    CHECK(sn_openai_retry_after(NULL, "2.5", now, &d));
    CHECK_CLOSE(d, 2.5, 1e-12, 0);
    CHECK(sn_openai_retry_after("junk", " 7 ", now, &d));
    CHECK_CLOSE(d, 7, 1e-12, 0);
    CHECK(sn_openai_retry_after(NULL, "Tue, 14 Nov 2023 22:13:50 GMT", now, &d));
    CHECK_CLOSE(d, 30, 1e-9, 0);
    CHECK(!sn_openai_retry_after(NULL, "Tue, 14 Nov 2023 22:13:00 GMT", now, &d)); /* past */
    CHECK(!sn_openai_retry_after(NULL, "0", now, &d));
    CHECK(!sn_openai_retry_after(NULL, "-3", now, &d));
    CHECK(!sn_openai_retry_after("0", NULL, now, &d));
    CHECK(!sn_openai_retry_after(NULL, "soon", now, &d));
    CHECK(!sn_openai_retry_after(NULL, NULL, now, &d));
}

static void test_backoff(void)
{
    /* min(0.5 * 2^k, 8) * (1 - 0.25 u): 0.5, 1, 2, 4, 8, 8 */
    const double want[] = { 0.5, 1, 2, 4, 8, 8, 8 };
    for (int k = 0; k < 7; k++) {
        CHECK_CLOSE(sn_openai_backoff(k, 0.5, 8, 0.0), want[k], 1e-12, 0);
        CHECK_CLOSE(sn_openai_backoff(k, 0.5, 8, 0.999999), want[k] * 0.75, 1e-5, 0);
    }
    CHECK_CLOSE(sn_openai_backoff(1000, 0.5, 8, 0.5), 8 * 0.875, 1e-12, 0);
    CHECK(sn_openai_status_retryable(429) && sn_openai_status_retryable(408) &&
          sn_openai_status_retryable(409) && sn_openai_status_retryable(500) &&
          sn_openai_status_retryable(503));
    CHECK(!sn_openai_status_retryable(400) && !sn_openai_status_retryable(401) &&
          !sn_openai_status_retryable(404) && !sn_openai_status_retryable(422));
}

static void test_urls(void)
{
    char *u = sn_openai_public_url("https://user:pw@api.example.com/v1/");
    CHECK_STR(u, "https://api.example.com/v1");
    sn_free(u);
    u = sn_openai_public_url("http://127.0.0.1:8000/v1");
    CHECK_STR(u, "http://127.0.0.1:8000/v1");
    sn_free(u);
    u = sn_openai_public_url("http://host/v1?x=a@b"); /* '@' after the host is not userinfo */
    CHECK_STR(u, "http://host/v1?x=a@b");
    sn_free(u);
}

static int open_json(const char *text, struct sn_llm_backend **b, struct sn_err *err)
{
    cJSON *j = cJSON_Parse(text);
    int rc = sn_llm_openai_open(j, b, err);
    cJSON_Delete(j);
    return rc;
}

static void test_config(void)
{
    struct sn_llm_backend *b = NULL;
    struct sn_err err = { 0 };
    CHECK(open_json("{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:1/v1\","
                    "\"concurency\":4}", &b, &err) == SN_E_ARG);
    CHECK_MSG(strstr(err.msg, "concurency'") && strstr(err.msg, "did you mean 'concurrency'"),
              "%s", err.msg);
    CHECK(b == NULL);
    sn_err_clear(&err);
    CHECK(open_json("{\"kind\":\"openai\",\"model\":\"m\"}", &b, &err) == SN_E_ARG);
    CHECK(strstr(err.msg, "base_url") != NULL);
    sn_err_clear(&err);
    CHECK(open_json("{\"base_url\":\"http://h/v1\",\"headers\":{\"Authorization\":\"Bearer x\"}}",
                    &b, &err) == SN_E_ARG);
    CHECK(strstr(err.msg, "api_key_env") != NULL && strstr(err.msg, "Bearer x") == NULL);
    sn_err_clear(&err);
    CHECK(open_json("{\"base_url\":\"http://h/v1\",\"extra_body\":{\"messages\":[]}}", &b,
                    &err) == SN_E_ARG);
    CHECK(strstr(err.msg, "extra_body.messages") != NULL);
    sn_err_clear(&err);
    CHECK(open_json("{\"base_url\":\"http://h/v1\",\"concurrency\":0}", &b, &err) == SN_E_ARG);
    CHECK(strstr(err.msg, "concurrency") != NULL);
    sn_err_clear(&err);
    CHECK(open_json("{\"base_url\":\"http://h/v1\",\"timeout_s\":\"10\"}", &b, &err) != SN_OK);
    sn_err_clear(&err);
    CHECK(open_json("{\"base_url\":\"ftp://h/v1\"}", &b, &err) == SN_E_ARG);
    sn_err_clear(&err);
    /* a good one: describe names the endpoint without credentials */
    CHECK(open_json("{\"kind\":\"openai\",\"name\":\"big\",\"base_url\":\"http://u:pw@127.0.0.1:"
                    "9/v1/\",\"model\":\"Qwen2.5-7B-Instruct\",\"concurrency\":3}", &b, &err) ==
          SN_OK);
    if (b) {
        CHECK_STR(b->ops->kind, "openai");
        CHECK_STR(b->describe, "openai http://127.0.0.1:9/v1 model=Qwen2.5-7B-Instruct");
        b->ops->close(b);
    }
}

/* Every allocation of open + one request failing in turn: a clean error each time, no crash
** (and, under ASan, no leak). The request goes to a closed port, so it ends in a transport
** error once nothing fails. */
static void test_alloc_failures(void)
{
    char cfg[1024];
    snprintf(cfg, sizeof cfg,
             "{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:1/v1\",\"model\":\"m\","
             "\"max_retries\":0,\"extra_body\":{\"top_k\":5},\"headers\":{\"X-A\":\"b\"},"
             "\"cache_dir\":\"%s/cache\"}", sn_test_dir("data_openai_unit_alloc"));
    cJSON *j = cJSON_Parse(cfg);
    int n_clean = 0;
    for (uint64_t n = 1; n < 400 && n_clean < 3; n++) {
        struct sn_llm_backend *b = NULL;
        struct sn_err err = { 0 };
        sn_alloc_fail_after(n);
        int rc = sn_llm_openai_open(j, &b, &err);
        if (rc == SN_OK) {
            struct sn_chat_msg m[1] = { { "user", "hello" } };
            struct sn_llm_request req = { .messages = m, .n_messages = 1, .temperature = -1,
                                          .top_p = -1 };
            struct sn_llm_reply r;
            sn_err_clear(&err);
            rc = b->ops->complete(b, &req, &r, &err);
            CHECK_MSG(rc == SN_E_BACKEND || rc == SN_E_NOMEM, "n=%d rc=%d %s", (int)n, rc,
                      err.msg);
            if (rc == SN_E_BACKEND && strstr(err.msg, "transport error"))
                n_clean++;
            b->ops->close(b);
        } else {
            CHECK(b == NULL);
        }
        sn_alloc_fail_after(0);
        CHECK(rc == SN_OK || err.msg[0] != '\0');
    }
    CHECK(n_clean == 3);
    cJSON_Delete(j);
}

int main(void)
{
    test_parse();
    test_messages();
    test_retry_after();
    test_backoff();
    test_urls();
    test_config();
    test_alloc_failures();
    return sn_test_done();
}
