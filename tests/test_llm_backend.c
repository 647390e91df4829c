/* tests/test_llm_backend.c: the backend handle of llm/llm.h for kinds implemented outside
** llm/ (how sim/'s sim agents plug in): sn_llm_backend_create checks its ops table, the
** calls reach the kind's functions with its impl, the counters the kind updates are what
** sn_llm_backend_stats reports, close runs the kind's close once and frees the handle (ASan),
** and sn_llm_backend_open_with dispatches on "kind", naming the known kinds when it cannot. */
#include "llm/llm.h"
#include "tests/testutil.h"

struct fake {
    int n_complete, n_close;
    char last[64];
};

static int fake_complete(struct sn_llm_backend *b, const struct sn_llm_request *req,
                         struct sn_llm_reply *out, struct sn_err *err)
{
    struct fake *f = sn_llm_backend_impl(b);
    f->n_complete++;
    snprintf(f->last, sizeof f->last, "%s", req->messages[0].content);
    struct sn_llm_stats *st = sn_llm_backend_counters(b);
    __atomic_fetch_add(&st->requests, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&st->completion_tokens, 7, __ATOMIC_RELAXED);
    out->text = sn_strdup("FINAL ANSWER: A");
    return out->text ? SN_OK : sn_err_set(err, SN_E_NOMEM, "out of memory");
}
static void fake_close(struct sn_llm_backend *b)
{
    struct fake *f = sn_llm_backend_impl(b);
    f->n_close++;
}
static const struct sn_llm_backend_ops fake_ops = {"fake", fake_complete, fake_close};

static struct fake opened; /* the impl of backends made by fake_open */
static int fake_open(const cJSON *config, struct sn_llm_backend **out, struct sn_err *err)
{
    (void)config;
    return sn_llm_backend_create(&fake_ops, &opened, NULL, out, err);
}

static void test_create(void)
{
    struct sn_err err = {0};
    struct sn_llm_backend *b = (struct sn_llm_backend *)&err; /* must be reset to NULL */
    static const struct sn_llm_backend_ops no_close = {"fake", fake_complete, NULL};
    CHECK(sn_llm_backend_create(&no_close, NULL, "x", &b, &err) == SN_E_ARG && b == NULL);
    CHECK(strstr(err.msg, "close") != NULL);

    struct fake f = {0};
    err = (struct sn_err){0};
    CHECK(sn_llm_backend_create(&fake_ops, &f, "fake endpoint 1", &b, &err) == SN_OK && b);
    CHECK_STR(sn_llm_backend_kind(b), "fake");
    CHECK_STR(sn_llm_backend_describe(b), "fake endpoint 1");
    CHECK(sn_llm_backend_impl(b) == &f);
    struct sn_chat_msg m = {"user", "question 1"};
    struct sn_llm_request req = {.messages = &m, .n_messages = 1, .temperature = -1,
                                 .top_p = -1};
    for (int i = 0; i < 3; i++) {
        struct sn_llm_reply r;
        CHECK(sn_llm_complete(b, &req, &r, &err) == SN_OK);
        CHECK_STR(r.text, "FINAL ANSWER: A");
        sn_llm_reply_free(&r);
        CHECK(r.text == NULL);
    }
    CHECK(f.n_complete == 3 && !strcmp(f.last, "question 1"));
    struct sn_llm_stats st = sn_llm_backend_stats(b);
    CHECK(st.requests == 3 && st.completion_tokens == 21 && st.failed == 0);
    CHECK(f.n_close == 0);
    sn_llm_backend_close(b);
    CHECK(f.n_close == 1 && f.n_complete == 3);
    sn_llm_backend_close(NULL);
    CHECK_STR(sn_llm_backend_kind(NULL), "");

    /* a long description is cut, not overrun */
    char longd[600];
    memset(longd, 'd', sizeof longd - 1);
    longd[sizeof longd - 1] = '\0';
    CHECK(sn_llm_backend_create(&fake_ops, &f, longd, &b, &err) == SN_OK);
    CHECK(strlen(sn_llm_backend_describe(b)) == 255);
    sn_llm_backend_close(b);
    CHECK(f.n_close == 2);
}

static void test_open_with(void)
{
    static const struct sn_llm_kind kinds[] = {{"fake", fake_open}};
    struct sn_err err = {0};
    struct sn_llm_backend *b = NULL;
    cJSON *c = cJSON_Parse("{\"kind\":\"fake\"}");
    CHECK(sn_llm_backend_open_with(c, kinds, 1, &b, &err) == SN_OK && b);
    CHECK_STR(sn_llm_backend_kind(b), "fake");
    CHECK_STR(sn_llm_backend_describe(b), "fake"); /* NULL describe: the kind */
    sn_llm_backend_close(b);
    CHECK(opened.n_close == 1);
    /* without the kind table, "fake" is unknown */
    CHECK(sn_llm_backend_open(c, &b, &err) == SN_E_ARG && b == NULL);
    CHECK(strstr(err.msg, "unknown kind 'fake' (expected \"openai\")") != NULL);
    cJSON_Delete(c);

    c = cJSON_Parse("{\"kind\":\"vllm\"}");
    err = (struct sn_err){0};
    CHECK(sn_llm_backend_open_with(c, kinds, 1, &b, &err) == SN_E_ARG && b == NULL);
    CHECK(strstr(err.msg, "unknown kind 'vllm' (expected \"fake\" or \"openai\")") != NULL);
    cJSON_Delete(c);
    c = cJSON_Parse("{\"model\":\"m\"}");
    err = (struct sn_err){0};
    CHECK(sn_llm_backend_open_with(c, kinds, 1, &b, &err) == SN_E_ARG);
    CHECK(strstr(err.msg, "missing \"kind\" (\"fake\" or \"openai\")") != NULL);
    cJSON_Delete(c);
    c = cJSON_Parse("[1]");
    err = (struct sn_err){0};
    CHECK(sn_llm_backend_open_with(c, kinds, 1, &b, &err) == SN_E_ARG);
    CHECK(strstr(err.msg, "expected an object like {\"kind\":\"fake\"}") != NULL);
    cJSON_Delete(c);
    /* "openai" still reaches the built-in kind: its own config checks answer */
    c = cJSON_Parse("{\"kind\":\"openai\",\"base_url\":\"http://127.0.0.1:9/v1\",\"bogus\":1}");
    err = (struct sn_err){0};
    CHECK(sn_llm_backend_open_with(c, kinds, 1, &b, &err) == SN_E_ARG && b == NULL);
    CHECK(strstr(err.msg, "bogus") != NULL);
    cJSON_Delete(c);
    CHECK(opened.n_complete == 0);
}

int main(void)
{
    test_create();
    test_open_with();
    return sn_test_done();
}
