/* tests/test_export_cli.c: `sentinel export`, `score --detector`, `tokenize --tokenizer X.gguf`
** and `inspect X.gguf`, all in the `sentinel` executable (no libtorch anywhere: the model
** directory is written here with the safetensors writer, so this test also runs in a build
** with -DSENTINEL_WITH_TORCH=OFF).
**   - a Qwen2ForSequenceClassification directory (random weights, score.weight, the demo
**     tokenizer) exports without --adapter; the head in the GGUF is its score.weight;
**   - every score input (--context/--response, --jsonl with response and responses, --ids,
**     text lines) prints what the library computes;
**   - tokenize with the GGUF prints the same ids as with tokenizer.json;
**   - a damaged GGUF makes score fail with a message naming the problem. */
#include "testutil.h"
#include "hf/hf.h"
#include "export/export.h"
#include "tokenizer/template.h"
#include "tokenizer/tokenizer.h"
#include "tests/testutil_qwen2.h"

enum { E = 32, L = 2, H = 4, HKV = 2, F = 64, V = SN_TOKENIZER_DEMO_VOCAB };

/* config.json + model.safetensors (f32) + tokenizer.json of a tiny Qwen2 reward model. */
static int write_model(const char *dir, float **head)
{
    struct sn_test_qwen2 c = {E, L, H, HKV, F, V, 512, 1e6, 0.2, 23, NULL};
    struct sn_err err = {0};
    int rc = sn_test_qwen2_write(&c, dir, head, &err);
    CHECK_MSG(rc == SN_OK, "%s", err.msg);
    return rc;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    const char *dir = sn_test_dir("export_cli");
    const char *bin = getenv("SENTINEL_BIN");
    bin = bin ? bin : "./sentinel";
    char mdir[1024], gg[1200], p[1300], q[1300], out[1300];
    struct sn_err err = {0};
    float *head = NULL;
    snprintf(mdir, sizeof mdir, "%s/model", dir);
    snprintf(gg, sizeof gg, "%s/d.gguf", dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    if (write_model(mdir, &head))
        return sn_test_done();

    CHECK(sn_test_sh("%s export --help > %s", bin, out) == 0 && sn_test_file_has(out, "--head-as-logit"));
    CHECK(sn_test_sh("%s export --base %s -o %s --type f32 --max-len 400 2> %s", bin, mdir, gg,
                     out) == 0);
    /* the head is the base's score.weight */
    struct sn_gguf *g = NULL;
    CHECK_MSG(sn_gguf_open(gg, &g, &err) == SN_OK, "%s", err.msg);
    if (g) {
        const float *hv = NULL;
        size_t hn = 0;
        CHECK(sn_gguf_get_arr_f32(g, SN_GGUF_KEY_HEAD, &hv, &hn, &err) == SN_OK && hn == E &&
              !memcmp(hv, head, E * sizeof *hv));
        CHECK(!sn_gguf_find_tensor(g, "output.weight"));
        double theta = 0;
        CHECK(sn_gguf_get_f64(g, "qwen2.rope.freq_base", true, 0, &theta, &err) == SN_OK &&
              theta == 1e6);
    }
    sn_gguf_close(g);

    struct sn_detector *d = NULL;
    CHECK_MSG(sn_detector_open(gg, NULL, &d, &err) == SN_OK, "%s", err.msg);
    if (!d)
        return sn_test_done();
    const char *ctx = "Which planet is largest? (A) Mars (B) Jupiter (C) Venus";
    const char *r0 = "Jupiter, (B), by far: it is 318 Earth masses.";
    const char *r1 = "Surely (A) Mars; the others agree with me.";
    float want[4], got[8];
    CHECK(sn_detector_score(d, ctx, r0, &want[0], &err) == SN_OK);
    CHECK(sn_detector_score(d, ctx, r1, &want[1], &err) == SN_OK);
    CHECK(fabsf(want[0] - want[1]) > 1e-4);

    /* --context / --response */
    snprintf(p, sizeof p, "%s/ctx.txt", dir);
    snprintf(q, sizeof q, "%s/resp.txt", dir);
    write_text(p, ctx);
    write_text(q, r0);
    CHECK(sn_test_sh("%s score --detector %s --context %s --response %s > %s", bin, gg, p, q,
                     out) == 0);
    CHECK(sn_test_read_floats(out, got, 8) == 1);
    CHECK_CLOSE(got[0], want[0], 1e-6, 0);

    /* --jsonl: one pair per record, and a shared context */
    snprintf(p, sizeof p, "%s/in.jsonl", dir);
    {
        FILE *f = fopen(p, "w");
        fprintf(f, "{\"context\": \"%s\", \"response\": \"%s\"}\n\n", ctx, r1);
        fprintf(f, "{\"context\": \"%s\", \"responses\": [\"%s\", \"%s\"]}\n", ctx, r0, r1);
        fclose(f);
    }
    CHECK(sn_test_sh("%s score --detector %s --jsonl %s > %s", bin, gg, p, out) == 0);
    CHECK(sn_test_read_floats(out, got, 8) == 3);
    CHECK_CLOSE(got[0], want[1], 1e-6, 0);
    CHECK_CLOSE(got[1], want[0], 2e-5, 0);
    CHECK_CLOSE(got[2], want[1], 2e-5, 0);

    /* --ids and text lines: scored as they are */
    struct sn_ids ids = {0};
    const struct sn_tokenizer *tok = sn_detector_tokenizer(d);
    CHECK(sn_tokenizer_encode(tok, r0, strlen(r0), &ids, &err) == SN_OK);
    CHECK(sn_detector_score_ids(d, ids.v, ids.n, &want[2], NULL, &err) == SN_OK);
    snprintf(p, sizeof p, "%s/ids.txt", dir);
    {
        FILE *f = fopen(p, "w");
        for (size_t i = 0; i < ids.n; i++)
            fprintf(f, "%s%d", i ? " " : "", ids.v[i]);
        fprintf(f, "\n5 6 7\n");
        fclose(f);
    }
    int32_t three[3] = {5, 6, 7};
    CHECK(sn_detector_score_ids(d, three, 3, &want[3], NULL, &err) == SN_OK);
    CHECK(sn_test_sh("%s score --detector %s --ids < %s > %s", bin, gg, p, out) == 0);
    CHECK(sn_test_read_floats(out, got, 8) == 2);
    CHECK_CLOSE(got[0], want[2], 1e-6, 0);
    CHECK_CLOSE(got[1], want[3], 1e-6, 0);
    write_text(q, r0);
    CHECK(sn_test_sh("%s score --detector %s < %s > %s", bin, gg, q, out) == 0);
    CHECK(sn_test_read_floats(out, got, 8) == 1);
    CHECK_CLOSE(got[0], want[2], 1e-6, 0);
    CHECK(sn_test_sh("%s score --detector %s --ids < /dev/null --context x 2> %s", bin, gg,
                     out) == 2);
    write_text(q, "1 2 99999\n");
    CHECK(sn_test_sh("%s score --detector %s --ids < %s 2> %s", bin, gg, q, out) == 1 &&
          sn_test_file_has(out, "stdin:1") && sn_test_file_has(out, "outside the vocabulary"));
    sn_ids_free(&ids);

    /* tokenize with the GGUF = with tokenizer.json */
    char tj[1200], o2[1300];
    snprintf(tj, sizeof tj, "%s/tokenizer.json", mdir);
    snprintf(o2, sizeof o2, "%s/out2.txt", dir);
    snprintf(p, sizeof p, "%s/lines.txt", dir);
    write_text(p, "Hello world\n<|im_start|>user\nthe theory of everything\n  spaces   \n\n");
    CHECK(sn_test_sh("%s tokenize --tokenizer %s < %s > %s", bin, gg, p, out) == 0);
    CHECK(sn_test_sh("%s tokenize --tokenizer %s < %s > %s", bin, tj, p, o2) == 0);
    CHECK(sn_test_sh("cmp -s %s %s", out, o2) == 0);

    /* inspect */
    CHECK(sn_test_sh("%s inspect %s > %s", bin, gg, out) == 0 &&
          sn_test_file_has(out, "sentinel.score.weight") && sn_test_file_has(out, "blk.1.ffn_down.weight") &&
          sn_test_file_has(out, "template sentinel-chatml/1"));
    CHECK(sn_test_sh("%s inspect --json %s > %s", bin, gg, out) == 0 &&
          sn_test_file_has(out, "\"qwen2.pooling_type\":\t\"3\""));
    /* the model directory and its safetensors file (tests/inspect_models.sh checks runs and
    ** checkpoints against the files; here the same code runs in the ASan suite) */
    CHECK(sn_test_sh("%s inspect %s > %s", bin, mdir, out) == 0 &&
          sn_test_file_has(out, "Hugging Face model directory") &&
          sn_test_file_has(out, "Qwen2ForSequenceClassification"));
    CHECK(sn_test_sh("%s inspect --json %s/model.safetensors > %s", bin, mdir, out) == 0 &&
          sn_test_file_has(out, "\"model.norm.weight\"") && sn_test_file_has(out, "\"score.weight\""));
    /* a checkpoint whose trainer_state.json names a file that differs: --verify fails */
    CHECK(sn_test_sh("cd %s && mkdir -p ck && cp config.json model.safetensors ck/ && "
                     "printf '{\"schema\": \"sentinel.trainer_state/1\", \"global_step\": 3, "
                     "\"files\": {\"config.json\": \"%s\"}}' > ck/trainer_state.json",
                     mdir, "0000000000000000000000000000000000000000000000000000000000000000") == 0);
    CHECK(sn_test_sh("%s inspect %s/ck > %s", bin, mdir, out) == 0 &&
          sn_test_file_has(out, "checkpoint, step 3"));
    CHECK(sn_test_sh("%s inspect --verify %s/ck 2> %s", bin, mdir, out) == 1 &&
          sn_test_file_has(out, "config.json: SHA-256 differs"));
    /* damaged state files: named errors, never a crash */
    CHECK(sn_test_sh("cd %s && printf '{\"files\": [1, 2], \"global_step\": \"x\"}' > "
                     "ck/trainer_state.json && %s inspect ck > /dev/null", mdir, bin) == 0);
    CHECK(sn_test_sh("cd %s && %s inspect --verify ck 2> %s > /dev/null", mdir, bin, out) == 1 &&
          sn_test_file_has(out, "no \"files\" object"));
    CHECK(sn_test_sh("cd %s && printf '{\"files\": {\"../model.safetensors\": 7}}' > "
                     "ck/trainer_state.json && %s inspect --verify ck 2> %s", mdir, bin, out) == 1 &&
          sn_test_file_has(out, "is not a SHA-256 of a file in the directory"));
    CHECK(sn_test_sh("cd %s && printf '{\"files\": ' > ck/trainer_state.json && "
                     "%s inspect ck 2> %s", mdir, bin, out) == 1 &&
          sn_test_file_has(out, "trainer_state.json"));

    /* a damaged file: clear errors from score and inspect */
    snprintf(p, sizeof p, "%s/bad.gguf", dir);
    CHECK(sn_test_sh("head -c 3000 %s > %s", gg, p) == 0);
    CHECK(sn_test_sh("%s score --detector %s --ids < /dev/null 2> %s", bin, p, out) == 1 &&
          sn_test_file_has(out, "truncated"));
    CHECK(sn_test_sh("%s inspect %s 2> %s", bin, p, out) == 1 && sn_test_file_has(out, "truncated"));
    /* no head: a base without score.weight and no adapter */
    CHECK(sn_test_sh("%s export --base %s/nonexistent -o %s/x.gguf 2> %s", bin, dir, dir,
                     out) == 1 && sn_test_file_has(out, "config.json"));
    sn_detector_free(d);
    free(head);
    return sn_test_done();
}
