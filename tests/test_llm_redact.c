/* tests/test_llm_redact.c: every credential form is redacted (llm.h sn_llm_redact), in the
** function itself, in server error text on its way into messages (sn_openai_server_message,
** which feeds the errors file), and nothing else is touched. */
#include "llm/llm.h"
#include "llm/openai_internal.h"
#include "testutil.h"

/* Redacts `in` and checks that `secret` is gone, `keep` (may be NULL) survives, and the count. */
static void one(const char *in, const char *secret, const char *keep, size_t want_n)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", in);
    size_t n = sn_llm_redact(buf, sizeof buf);
    CHECK_MSG(n == want_n, "%s -> %s: %zu redactions, want %zu", in, buf, n, want_n);
    CHECK_MSG(!strstr(buf, secret), "%s -> %s still holds %s", in, buf, secret);
    CHECK_MSG(strstr(buf, "[redacted]"), "%s -> %s", in, buf);
    if (keep)
        CHECK_MSG(strstr(buf, keep), "%s -> %s lost %s", in, buf, keep);
}

static void test_forms(void)
{
    /* Basic (credentials from http://user:pass@host; base64 of "user:pass") */
    one("401: bad header Authorization: Basic dXNlcjpwYXNz received", "dXNlcjpwYXNz",
        "received", 1);
    one("authorization=basic dXNlcjpwYXNz", "dXNlcjpwYXNz", NULL, 1);
    /* Bearer */
    one("echo: {\"Authorization\": \"Bearer sk-abc123XYZ.def\"}", "sk-abc123XYZ", "echo", 1);
    one("bearer   tok_987/+=", "tok_987", NULL, 1);
    /* api-key style headers and JSON fields */
    one("header api-key: 0123456789abcdef was rejected", "0123456789abcdef", "rejected", 1);
    one("x-api-key:zz-SECRET-zz; retry", "zz-SECRET-zz", "retry", 1);
    one("{\"api_key\": \"k-42-k\"}", "k-42-k", NULL, 1);
    one("X-Goog-Api-Key=AIzaSECRET", "AIzaSECRET", NULL, 1);
    /* URL userinfo */
    one("POST http://alice:s3cr3t@10.0.0.1:8000/v1/chat failed", "s3cr3t", "10.0.0.1:8000/v1",
        1);
    one("https://token@api.example.com/v1", "token@", "api.example.com", 1);
    /* query-string keys */
    one("GET https://h/v1/models?key=AIzaQUERY&alt=json", "AIzaQUERY", "alt=json", 1);
    one("https://h/x?alt=1&api_key=QQQ123#frag", "QQQ123", "#frag", 1);
    one("https://h/x?access_token=ya29.TOKEN", "ya29.TOKEN", NULL, 1);
    one("https://h/x?sig=abcSIG&se=2030", "abcSIG", "se=2030", 1);
    /* several in one message */
    one("http://u:p4ss@h/?token=T0K Authorization: Bearer B34R", "B34R", NULL, 3);
}

static void test_untouched(void)
{
    const char *clean[] = {
        "openai http://127.0.0.1:8000/v1: HTTP 503 after 7 attempts",
        "the model's maximum context length is 4096 tokens",
        "keyboard=us monkey=1", /* not a query string */
        "[redacted]",
    };
    for (size_t i = 0; i < sizeof clean / sizeof *clean; i++) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", clean[i]);
        CHECK_MSG(sn_llm_redact(buf, sizeof buf) == 0 && !strcmp(buf, clean[i]), "%s -> %s",
                  clean[i], buf);
    }
}

static void test_small_buffer(void)
{
    /* the marker is longer than the secret and the buffer is full: cut, never overflow */
    char buf[24];
    snprintf(buf, sizeof buf, "%s", "x Basic YQ== tail text");
    CHECK(sn_llm_redact(buf, sizeof buf) == 1);
    CHECK(strlen(buf) < sizeof buf && !strstr(buf, "YQ==") && strstr(buf, "[redacted]"));
}

static void test_server_echo(void)
{
    /* a server's error text echoing the request headers, as it reaches messages and the
    ** errors file */
    const char *body = "{\"error\": {\"message\": \"bad request; headers were: Authorization: "
                       "Basic YWxpY2U6czNjcjN0, x-api-key: KEY-777\"}}";
    char out[300];
    sn_openai_server_message(body, strlen(body), NULL, out, sizeof out);
    CHECK_MSG(!strstr(out, "YWxpY2U6czNjcjN0") && !strstr(out, "KEY-777") &&
              strstr(out, "bad request"), "%s", out);
}

int main(void)
{
    test_forms();
    test_untouched();
    test_small_buffer();
    test_server_echo();
    return sn_test_done();
}
