/* tests/test_data_tuples_preference.c: `sentinel build` from TRL preference data (tuples/tuples.h
** "preference data"; docs/formats.md "Preference data"):
**   - each format (standard, implicit-prompt string, conversational with an explicit and an
**     implicit prompt, with and without `reference`) gives the hand-written task, history and
**     responses, and the shards read back hold the expected four texts and exactly the token ids
**     of the template rendering of (context, response);
**   - a conversational single-user-turn row and its string twin give the same tuple texts;
**   - malformed rows (missing column, wrong type, empty text, invalid JSON, no assistant turn,
**     a turn after the last assistant turn) fail naming file:line and what was expected, and
**     leave no output directory; --skip-bad counts them;
**   - rows cut to max_len and rows whose prompt leaves no room are counted; a .jsonl.gz file
**     reads like the plain one; an interrupted build (SENTINEL_TEST_KILL_AFTER) resumes to the
**     same bytes as an uninterrupted one; debate and preference files mix in one build. */
#include "tokenizer/template.h"
#include "tokenizer/tokenizer.h"
#include "tuples/tuples.h"
#include "tests/testutil.h"

#include <inttypes.h>

static char dir[1024], tokp[1200];

static void check_row(const char *json, enum sn_pref_kind kind, const char *task,
                      const char *const *history, size_t n_history, const char *chosen,
                      const char *rejected, const char *reference)
{
    struct sn_pref_row row;
    struct sn_err err = {0};
    int rc = sn_pref_parse(json, strlen(json), "t.jsonl:1", &row, &err);
    CHECK_MSG(rc == SN_OK, "%s: %s", json, err.msg);
    if (rc) {
        sn_pref_row_free(&row);
        return;
    }
    CHECK_MSG(row.kind == kind, "%s: kind %s", json, sn_pref_kind_name(row.kind));
    CHECK_STR(row.task, task);
    CHECK_MSG(row.n_history == n_history, "%s: %zu history entries", json, row.n_history);
    for (size_t i = 0; i < n_history && i < row.n_history; i++)
        CHECK_STR(row.history[i], history[i]);
    CHECK_STR(row.chosen, chosen);
    CHECK_STR(row.rejected, rejected);
    if (reference)
        CHECK_STR(row.reference, reference);
    else
        CHECK(row.reference == NULL);
    sn_pref_row_free(&row);
}

static void parse_formats(void)
{
    check_row("{\"prompt\": \"What is 2+2?\", \"chosen\": \"4\", \"rejected\": \"5\"}",
              SN_PREF_STANDARD, "What is 2+2?", NULL, 0, "4", "5", NULL);
    check_row("{\"prompt\": \"P\", \"chosen\": \"good\", \"rejected\": \"bad\", "
              "\"reference\": \"best\", \"margin\": 0.5}",
              SN_PREF_STANDARD, "P", NULL, 0, "good", "bad", "best");
    /* implicit: TRL's common prefix; the split lands after white space */
    check_row("{\"chosen\": \"Q: Capital of France?\\nA: Paris\", "
              "\"rejected\": \"Q: Capital of France?\\nA: Lyon\"}",
              SN_PREF_IMPLICIT, "Q: Capital of France?\nA:", NULL, 0, "Paris", "Lyon", NULL);
    /* implicit, the texts part inside a word: the split moves back to the word's start */
    check_row("{\"chosen\": \"The answer is four\", \"rejected\": \"The answer is five\"}",
              SN_PREF_IMPLICIT, "The answer is", NULL, 0, "four", "five", NULL);
    /* implicit with nothing shared: an empty prompt */
    check_row("{\"chosen\": \"yes\", \"rejected\": \"no\", \"reference\": \"yes indeed\"}",
              SN_PREF_IMPLICIT, "", NULL, 0, "yes", "no", "yes indeed");
    /* implicit, one text the start of the other: at most one byte short of the shorter */
    check_row("{\"chosen\": \"Say it: ok\", \"rejected\": \"Say it: ok then\"}",
              SN_PREF_IMPLICIT, "Say it:", NULL, 0, "ok", "ok then", NULL);
    /* conversational, explicit prompt: system first, then the first user turn */
    check_row("{\"prompt\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, "
              "{\"role\": \"user\", \"content\": \"Hi?\"}], "
              "\"chosen\": [{\"role\": \"assistant\", \"content\": \"Hello.\"}], "
              "\"rejected\": [{\"role\": \"assistant\", \"content\": \"Go away.\"}]}",
              SN_PREF_CONVERSATIONAL, "Be brief.\n\nHi?", NULL, 0, "Hello.", "Go away.", NULL);
    /* conversational, several turns: later turns are history entries */
    static const char *const hist[] = {"Assistant: B", "User: C"};
    check_row("{\"prompt\": [{\"role\": \"user\", \"content\": \"A\"}, "
              "{\"role\": \"assistant\", \"content\": \"B\"}, "
              "{\"role\": \"user\", \"content\": \"C\"}], "
              "\"chosen\": [{\"role\": \"assistant\", \"content\": \"D\"}], "
              "\"rejected\": [{\"role\": \"assistant\", \"content\": \"E\"}], "
              "\"reference\": \"F\"}",
              SN_PREF_CONVERSATIONAL, "A", hist, 2, "D", "E", "F");
    /* conversational, implicit prompt: the common messages */
    check_row("{\"chosen\": [{\"role\": \"user\", \"content\": \"Hi\"}, "
              "{\"role\": \"assistant\", \"content\": \"Hello\"}], "
              "\"rejected\": [{\"role\": \"user\", \"content\": \"Hi\"}, "
              "{\"role\": \"assistant\", \"content\": \"Bye\"}]}",
              SN_PREF_CONVERSATIONAL_IMPLICIT, "Hi", NULL, 0, "Hello", "Bye", NULL);
    /* a turn with line breaks is one history line */
    static const char *const hist1[] = {"Assistant: one two  three"};
    check_row("{\"prompt\": [{\"role\": \"user\", \"content\": \"q\\nstill q\"}, "
              "{\"role\": \"assistant\", \"content\": \"one\\ntwo\\r\\nthree\"}], "
              "\"chosen\": [{\"role\": \"assistant\", \"content\": \"a\"}], "
              "\"rejected\": [{\"role\": \"assistant\", \"content\": \"b\"}]}",
              SN_PREF_CONVERSATIONAL, "q\nstill q", hist1, 1, "a", "b", NULL);
    /* a system turn placed later still comes first */
    static const char *const hist2[] = {"Assistant: x"};
    check_row("{\"chosen\": [{\"role\": \"user\", \"content\": \"u\"}, "
              "{\"role\": \"system\", \"content\": \"s\"}, "
              "{\"role\": \"assistant\", \"content\": \"x\"}, "
              "{\"role\": \"assistant\", \"content\": \"yes\"}], "
              "\"rejected\": [{\"role\": \"user\", \"content\": \"u\"}, "
              "{\"role\": \"system\", \"content\": \"s\"}, "
              "{\"role\": \"assistant\", \"content\": \"x\"}, "
              "{\"role\": \"assistant\", \"content\": \"no\"}]}",
              SN_PREF_CONVERSATIONAL_IMPLICIT, "s\n\nu", hist2, 1, "yes", "no", NULL);
}

struct bad {
    const char *row;      /* the second line of the file (the first is a good row) */
    const char *expect;   /* in the message, after "<file>:2: " */
};

static const struct bad bads[] = {
    {"{\"prompt\": \"p\", \"chosen\": \"c\"}", "missing column 'rejected' (expected a string"},
    {"{\"prompt\": \"p\", \"chosen\": 3, \"rejected\": \"r\"}", "chosen: expected a string"},
    {"{\"prompt\": \"p\", \"chosen\": \"c\", \"rejected\": \"  \"}",
     "rejected: empty text (expected a non-empty string)"},
    {"{\"prompt\": \"p\", \"chosen\": \"c\", ", "invalid JSON near byte"},
    {"{\"chosen\": [{\"role\": \"user\", \"content\": \"a\"}], "
     "\"rejected\": [{\"role\": \"user\", \"content\": \"b\"}]}",
     "chosen: no assistant turn (expected the conversation to end with the assistant's"},
    {"{\"chosen\": [{\"role\": \"assistant\", \"content\": \"a\"}, {\"role\": \"user\", "
     "\"content\": \"more\"}], \"rejected\": [{\"role\": \"assistant\", \"content\": \"b\"}]}",
     "chosen: a 'user' turn follows the last assistant turn"},
    {"{\"prompt\": \"p\", \"chosen\": [{\"role\": \"assistant\", \"content\": \"a\"}], "
     "\"rejected\": [{\"role\": \"assistant\", \"content\": \"b\"}]}",
     "prompt: expected a list of messages like the other columns"},
    {"{\"chosen\": [{\"role\": \"assistant\"}], \"rejected\": [{\"role\": \"assistant\", "
     "\"content\": \"b\"}]}", "chosen[0]: expected a message {\"role\": string, \"content\": "},
    {"{\"prompt\": \"p\", \"chosen\": \"c\", \"rejected\": \"r\", \"reference\": 7}",
     "reference: expected a string"},
    {"[1, 2]", "expected a JSON object with the columns chosen and rejected"},
};

static const char *good_row = "{\"prompt\": \"p\", \"chosen\": \"c\", \"rejected\": \"r\"}";

static struct sn_build_params params(const char *in, const char *out, size_t max_len);

static void malformed(void)
{
    struct sn_err err = {0};
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        char name[64], text[1024];
        snprintf(name, sizeof name, "bad%zu.jsonl", i);
        snprintf(text, sizeof text, "%s\n%s\n", good_row, bads[i].row);
        const char *in = sn_test_path(dir, name);
        sn_test_write_file(in, text);
        const char *out = sn_test_path(dir, "bad_out");
        struct sn_build_params p = params(in, out, 256);
        struct sn_build_report rep;
        err = (struct sn_err){0};
        int rc = sn_tuples_build(&p, &rep, &err);
        CHECK_MSG(rc == SN_E_FORMAT, "%s: rc %d", bads[i].row, rc);
        char want[1200];
        snprintf(want, sizeof want, "%s:2: %s", in, bads[i].expect);
        CHECK_MSG(strstr(err.msg, want) != NULL, "got '%s', want '%s'", err.msg, want);
        CHECK_MSG(sn_test_sh("test ! -e '%s'", out) == 0, "%s left behind", out);
    }
    /* through the CLI: exit 1, the message on stderr, nothing written */
    const char *in = sn_test_path(dir, "bad4.jsonl");
    CHECK(sn_test_sh("'%s' build -i '%s' -o '%s/cli_bad' --tokenizer '%s' --progress none "
                     "2> '%s/cli_bad.log'; test $? -eq 1", sn_test_bin(), in, dir, tokp,
                     dir) == 0);
    char want[1200];
    snprintf(want, sizeof want, "%s:2: chosen: no assistant turn", in);
    CHECK(sn_test_file_has(sn_test_path(dir, "cli_bad.log"), want));
    CHECK(sn_test_sh("test ! -e '%s/cli_bad'", dir) == 0);
    /* format preference names bad JSON on line 1 as a preference row */
    in = sn_test_path(dir, "badfirst.jsonl");
    sn_test_write_file(in, "{\"chosen\": \n");
    struct sn_build_params p = params(in, sn_test_path(dir, "bf"), 256);
    struct sn_build_report rep;
    p.format = SN_INPUT_PREFERENCE;
    err = (struct sn_err){0};
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_E_FORMAT);
    snprintf(want, sizeof want, "%s:1: invalid JSON near byte", in);
    CHECK_MSG(strstr(err.msg, want) != NULL, "got '%s'", err.msg);
    CHECK(sn_test_sh("'%s' build -i x -o y --tokenizer z --format csv 2>/dev/null; "
                     "test $? -eq 2", sn_test_bin()) == 0);
    /* skip_bad: every bad row counted, the good ones built */
    struct sn_buf all = {0};
    size_t nb = sizeof bads / sizeof bads[0];
    for (size_t i = 0; i < nb; i++)
        CHECK(sn_buf_printf(&all, &err, "%s\n%s\n", good_row, bads[i].row) == SN_OK);
    in = sn_test_path(dir, "allbad.jsonl");
    sn_test_write_file(in, all.data);
    sn_buf_free(&all);
    p = params(in, sn_test_path(dir, "skip"), 256);
    p.skip_bad = true;
    err = (struct sn_err){0};
    CHECK_MSG(sn_tuples_build(&p, &rep, &err) == SN_OK, "%s", err.msg);
    CHECK(rep.counts[SN_TC_PREF_ROWS] == 2 * nb);
    CHECK(rep.counts[SN_TC_BAD_LINES] == nb);
    CHECK(rep.counts[SN_TC_DUPLICATE] == nb - 1); /* the good rows are one tuple */
    CHECK(rep.per_split[SN_SPLIT_TRAIN] == 1);
}

/* What the shards must hold for one row: the texts, and ids = template encoding. */
struct want {
    const char *context, *chosen, *rejected, *reference;
    struct sn_prompt prompt;
};

static const char *const hist3[] = {"Assistant: B", "User: C"};
static const struct want wants[] = {
    {"What is 2+2?", "4", "5", "4", {NULL, "What is 2+2?", NULL, 0}},
    {"Q: Capital of France?\nA:", "Paris", "Lyon", "Paris is the capital.",
     {NULL, "Q: Capital of France?\nA:", NULL, 0}},
    {"Be brief.\n\nHi?", "Hello.", "Go away.", "Hello.", {NULL, "Be brief.\n\nHi?", NULL, 0}},
    {"A\n\nDiscussion so far:\nAssistant: B\nUser: C", "D", "E", "F", {NULL, "A", hist3, 2}},
    {"Hi there", "Hello", "Bye", "Hello", {NULL, "Hi there", NULL, 0}},
};

static const char *rows_text =
    "{\"prompt\": \"What is 2+2?\", \"chosen\": \"4\", \"rejected\": \"5\"}\n"
    "\n"
    "{\"chosen\": \"Q: Capital of France?\\nA: Paris\", \"rejected\": \"Q: Capital of France?"
    "\\nA: Lyon\", \"reference\": \"Paris is the capital.\"}\n"
    "{\"prompt\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, {\"role\": \"user\", "
    "\"content\": \"Hi?\"}], \"chosen\": [{\"role\": \"assistant\", \"content\": \"Hello.\"}], "
    "\"rejected\": [{\"role\": \"assistant\", \"content\": \"Go away.\"}]}\n"
    "{\"prompt\": [{\"role\": \"user\", \"content\": \"A\"}, {\"role\": \"assistant\", "
    "\"content\": \"B\"}, {\"role\": \"user\", \"content\": \"C\"}], \"chosen\": [{\"role\": "
    "\"assistant\", \"content\": \"D\"}], \"rejected\": [{\"role\": \"assistant\", \"content\": "
    "\"E\"}], \"reference\": \"F\"}\n"
    "{\"chosen\": [{\"role\": \"user\", \"content\": \"Hi there\"}, {\"role\": \"assistant\", "
    "\"content\": \"Hello\"}], \"rejected\": [{\"role\": \"user\", \"content\": \"Hi there\"}, "
    "{\"role\": \"assistant\", \"content\": \"Bye\"}]}\n"
    /* the string twin of the row above: the same texts, dropped as a duplicate */
    "{\"prompt\": \"Hi there\", \"chosen\": \"Hello\", \"rejected\": \"Bye\"}";

static struct sn_build_params params(const char *in, const char *out, size_t max_len)
{
    static const char *inputs[1];
    inputs[0] = in;
    struct sn_build_params p = sn_build_default_params();
    p.inputs = inputs;
    p.n_inputs = 1;
    p.out_dir = out;
    p.tokenizer_path = tokp;
    p.max_len = max_len;
    p.tuples.validation_fraction = 0;
    p.tuples.test_fraction = 0;
    return p;
}

static void shards_hold(const char *out, struct sn_tokenizer *tok)
{
    struct sn_err err = {0};
    struct sn_shard_reader *r = NULL;
    CHECK(sn_shard_reader_open(sn_test_path(out, "train-00000.h5"), NULL, &r, &err) == SN_OK);
    if (!r)
        return;
    size_t n = sizeof wants / sizeof wants[0];
    CHECK_MSG(sn_shard_reader_count(r) == n, "%zu tuples", sn_shard_reader_count(r));
    struct sn_ids ids = {0};
    for (size_t i = 0; i < n && i < sn_shard_reader_count(r); i++) {
        const char *w[SN_FIELD_COUNT] = {wants[i].context, wants[i].chosen, wants[i].rejected,
                                         wants[i].reference};
        struct sn_tuple_view v;
        CHECK(sn_shard_reader_get(r, i, &v, &err) == SN_OK);
        for (int f = 0; f < SN_FIELD_COUNT; f++) {
            char *t = NULL;
            CHECK(sn_shard_reader_text(r, i, (enum sn_field)f, &t, &err) == SN_OK);
            CHECK_MSG(t && !strcmp(t, w[f]), "tuple %zu %s: '%s', want '%s'", i,
                      sn_field_name((enum sn_field)f), t ? t : "(null)", w[f]);
            sn_free(t);
            if (f == SN_FIELD_CONTEXT)
                continue;
            CHECK(sn_template_encode(tok, &wants[i].prompt, w[f], 256, &ids, NULL, NULL, &err) ==
                  SN_OK);
            CHECK_MSG(v.n_ids[f] == ids.n && !memcmp(v.ids[f], ids.v, ids.n * sizeof *ids.v),
                      "tuple %zu %s: ids differ from the template's", i,
                      sn_field_name((enum sn_field)f));
            /* what `sentinel score --jsonl` renders from {"context": <context text>} */
            const struct sn_prompt as_scored = {NULL, wants[i].context, NULL, 0};
            CHECK(sn_template_encode(tok, &as_scored, w[f], 256, &ids, NULL, NULL, &err) ==
                  SN_OK);
            CHECK_MSG(v.n_ids[f] == ids.n && !memcmp(v.ids[f], ids.v, ids.n * sizeof *ids.v),
                      "tuple %zu %s: ids differ from the scorer's rendering", i,
                      sn_field_name((enum sn_field)f));
        }
        struct sn_tuple_meta m;
        CHECK(sn_shard_reader_meta(r, i, &m, &err) == SN_OK);
        CHECK_STR(m.dataset, "rows");
        CHECK_STR(m.rejected_kind, "preference");
    }
    sn_ids_free(&ids);
    sn_shard_reader_close(r);
}

static void build_formats(struct sn_tokenizer *tok)
{
    struct sn_err err = {0};
    const char *in = sn_test_path(dir, "rows.jsonl");
    sn_test_write_file(in, rows_text);   /* no final newline: read all the same */
    char out[1200];
    snprintf(out, sizeof out, "%s/shards", dir);
    struct sn_build_params p = params(in, out, 256);
    struct sn_build_report rep;
    CHECK_MSG(sn_tuples_build(&p, &rep, &err) == SN_OK, "%s", err.msg);
    CHECK(rep.counts[SN_TC_PREF_ROWS] == 6);
    CHECK(rep.counts[SN_TC_DUPLICATE] == 1);
    CHECK(rep.counts[SN_TC_TRUNCATED] == 0);
    CHECK(rep.per_split[SN_SPLIT_TRAIN] == 5);
    shards_hold(out, tok);
    CHECK(sn_test_sh("grep -q '\"preference_builder\": \"sentinel-preference/1\"' '%s/manifest.json'",
                     out) == 0);

    /* the same rows gzip-compressed, named .jsonl.gz, through the CLI and a recipe */
    CHECK(sn_test_sh("cd '%s' && gzip -c rows.jsonl > rows.jsonl.gz && printf '{\"build\": "
                     "{\"validation_fraction\": 0, \"test_fraction\": 0, \"max_len\": 256, "
                     "\"format\": \"preference\"}}' > r.json && '%s' build -r r.json "
                     "-i rows.jsonl.gz -o gz --tokenizer '%s' --progress none > gz.log", dir,
                     sn_test_bin(), tokp) == 0);
    CHECK(sn_test_sh("cmp '%s/train-00000.h5' '%s/gz/train-00000.h5'", out, dir) == 0);
    CHECK(sn_test_file_has(sn_test_path(dir, "gz.log"), "read 6 preference rows: 0 with a "
                           "sequence truncated to max_len 256, 0 dropped"));

    /* split_by model has no value for preference rows */
    p = params(in, sn_test_path(dir, "model"), 256);
    p.tuples.split_by = SN_SPLIT_BY_MODEL;
    err = (struct sn_err){0};
    CHECK(sn_tuples_build(&p, &rep, &err) == SN_E_ARG && strstr(err.msg, "use item or dataset"));
}

static void lengths(void)
{
    struct sn_err err = {0};
    struct sn_buf t = {0};
    /* a long response (cut), a prompt longer than max_len (dropped), a short row (kept whole) */
    CHECK(sn_buf_puts(&t, "{\"prompt\": \"short\", \"chosen\": \"", &err) == SN_OK);
    for (int i = 0; i < 60; i++)
        CHECK(sn_buf_puts(&t, "long words here ", &err) == SN_OK);
    CHECK(sn_buf_puts(&t, "end\", \"rejected\": \"no\"}\n{\"prompt\": \"", &err) == SN_OK);
    for (int i = 0; i < 60; i++)
        CHECK(sn_buf_puts(&t, "a long prompt ", &err) == SN_OK);
    CHECK(sn_buf_puts(&t, "\", \"chosen\": \"yes\", \"rejected\": \"no\"}\n"
                          "{\"prompt\": \"q\", \"chosen\": \"yes\", \"rejected\": \"no\"}\n",
                      &err) == SN_OK);
    const char *in = sn_test_path(dir, "long.jsonl");
    sn_test_write_file(in, t.data);
    sn_buf_free(&t);
    struct sn_build_params p = params(in, sn_test_path(dir, "long_out"), 256);
    struct sn_build_report rep;
    CHECK_MSG(sn_tuples_build(&p, &rep, &err) == SN_OK, "%s", err.msg);
    CHECK(rep.counts[SN_TC_PREF_ROWS] == 3);
    CHECK(rep.counts[SN_TC_TRUNCATED] == 1);
    CHECK(rep.counts[SN_TC_TASK_TOO_LONG] == 1);
    CHECK(rep.per_split[SN_SPLIT_TRAIN] == 2);
}

/* An interrupted build resumes to the bytes of an uninterrupted one. */
static void resume(void)
{
    struct sn_buf t = {0};
    struct sn_err err = {0};
    for (int i = 0; i < 40; i++)
        CHECK(sn_buf_printf(&t, &err, "{\"prompt\": \"Question %d: which is right?\", "
                            "\"chosen\": \"Answer %d is right because it follows.\", "
                            "\"rejected\": \"Answer %d is wrong.\"}\n", i, i, i + 1) == SN_OK);
    const char *in = sn_test_path(dir, "many.jsonl");
    sn_test_write_file(in, t.data);
    sn_buf_free(&t);
    const char *b = sn_test_bin();
    CHECK(sn_test_sh("cd '%s' && '%s' build -i '%s' -o whole --tokenizer '%s' --shard-size 8 "
                     "--progress none > /dev/null", dir, b, in, tokp) == 0);
    CHECK(sn_test_sh("cd '%s' && SENTINEL_TEST_KILL_AFTER=19 '%s' build -i '%s' -o killed "
                     "--tokenizer '%s' --shard-size 8 --progress none > /dev/null 2>&1; "
                     "test $? -eq 137", dir, b, in, tokp) == 0);
    CHECK(sn_test_sh("cd '%s' && '%s' build -i '%s' -o killed --tokenizer '%s' --shard-size 8 "
                     "--progress none > resumed.log", dir, b, in, tokp) == 0);
    CHECK(sn_test_file_has(sn_test_path(dir, "resumed.log"), "(resumed)"));
    CHECK(sn_test_sh("cd '%s' && diff -r whole killed", dir) == 0);
}

/* Debate and preference files in one build (a directory holding both): each read its way. */
static void mixed(void)
{
    char d[1200];
    struct sn_buf t = {0};
    struct sn_err err = {0};
    snprintf(d, sizeof d, "%s/mixed", dir);
    CHECK(sn_test_sh("mkdir -p '%s'", d) == 0);
    CHECK(sn_buf_printf(&t, &err, "%s\n", sn_test_trajectory_text()) == SN_OK);
    sn_test_write_file(sn_test_path(d, "a-debates.jsonl"), t.data);
    sn_buf_free(&t);
    sn_test_write_file(sn_test_path(d, "b-prefs.jsonl"), good_row);
    struct sn_build_params p = params(d, sn_test_path(dir, "mixed_out"), 256);
    struct sn_build_report rep;
    CHECK_MSG(sn_tuples_build(&p, &rep, &err) == SN_OK, "%s", err.msg);
    CHECK(rep.n_inputs == 2);
    CHECK(rep.counts[SN_TC_TRAJECTORIES] == 1 && rep.counts[SN_TC_PREF_ROWS] == 1);
    CHECK_MSG(rep.counts[SN_TC_TUPLES] >= 2, "%llu tuples",
              (unsigned long long)rep.counts[SN_TC_TUPLES]);
    /* format trajectory reads the preference file as a trajectory: it names the field */
    p = params(d, sn_test_path(dir, "mixed_traj"), 256);
    p.format = SN_INPUT_TRAJECTORY;
    err = (struct sn_err){0};
    CHECK(sn_tuples_build(&p, &rep, &err) != SN_OK && strstr(err.msg, "b-prefs.jsonl:1"));
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s", sn_test_dir("tuples_preference"));
    snprintf(tokp, sizeof tokp, "%s/tok.json", dir);
    struct sn_err err = {0};
    struct sn_tokenizer *tok = NULL;
    if (sn_tokenizer_write_demo(tokp, &err) || sn_tokenizer_open(tokp, &tok, &err)) {
        fprintf(stderr, "demo tokenizer: %s\n", err.msg);
        return 1;
    }
    parse_formats();
    build_formats(tok);
    malformed();
    lengths();
    resume();
    mixed();
    sn_tokenizer_free(tok);
    return sn_test_done();
}
