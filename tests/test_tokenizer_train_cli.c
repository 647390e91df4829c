/* tests/test_tokenizer_train_cli.c: `sentinel tokenize train` end to end: from a trajectory
** file it learns exactly what the library learns from the trajectory's question, options and
** message texts; plain text files are read line by line with their newlines; two runs write
** the same bytes; the output loads and encodes; bad input (a malformed trajectory line, invalid
** UTF-8, an unreadable file, an empty corpus, a vocabulary below the byte alphabet and the
** specials) is refused with a message naming the file and line. */
#include "testutil.h"
#include "tokenizer/tokenizer.h"

#include <string.h>

static char dir[1024];

/* One debate, two agents, one round (docs/formats.md#trajectory). */
#define TRAJ(id, q, m0, m1)                                                                  \
    "{\"schema\":\"sentinel.trajectory/1\",\"id\":\"" id "\",\"experiment\":\"e\","          \
    "\"scenario\":\"none\",\"dataset\":\"synthetic\",\"item_id\":\"i-" id "\","              \
    "\"subject\":null,\"task\":\"mc\",\"question\":\"" q "\",\"options\":[\"Nile\","         \
    "\"Danube\"],\"gold\":\"A\",\"gold_explanation\":null,\"adversarial_target\":null,"      \
    "\"strategy\":\"simultaneous\",\"topology\":{\"name\":\"complete\",\"n_agents\":2,"      \
    "\"edges\":[]},\"agents\":[{\"id\":0,\"role\":\"honest\",\"model\":\"sim\","             \
    "\"backend\":\"sim\",\"persona\":null},{\"id\":1,\"role\":\"honest\",\"model\":\"sim\"," \
    "\"backend\":\"sim\",\"persona\":null}],\"rounds\":[[{\"agent\":0,\"text\":\"" m0 "\","  \
    "\"answer\":\"A\",\"parsed\":true},{\"agent\":1,\"text\":\"" m1 "\",\"answer\":\"A\","   \
    "\"parsed\":true}]],\"final\":{\"rule\":\"majority\",\"answer\":\"A\",\"correct\":true},"\
    "\"seed\":1,\"replicate\":0}\n"

static const char *const texts[] = {
    "Which river flows through Cairo?", "Nile", "Danube",
    "The Nile flows through Cairo.\nFINAL ANSWER: A", "Cairo is on the Nile.\nFINAL ANSWER: A",
    "Which river flows through Vienna?", "Nile", "Danube",
    "The Danube flows through Vienna.\nFINAL ANSWER: B", "Vienna: the Danube.\nFINAL ANSWER: B"};

static bool same_file(const char *a, const char *b)
{
    return sn_test_sh("cmp -s '%s' '%s'", a, b) == 0;
}

int main(void)
{
    const char *bin = sn_test_bin();
    snprintf(dir, sizeof dir, "%s", sn_test_dir("tokenizer_train_cli"));
    char traj[1200], out1[1200], out2[1200], lib[1200], txt[1200], bad[1200], log[1200];
    snprintf(traj, sizeof traj, "%s/traj.jsonl", dir);
    snprintf(out1, sizeof out1, "%s/tok1.json", dir);
    snprintf(out2, sizeof out2, "%s/tok2.json", dir);
    snprintf(lib, sizeof lib, "%s/tok-lib.json", dir);
    snprintf(txt, sizeof txt, "%s/text.txt", dir);
    snprintf(bad, sizeof bad, "%s/bad.jsonl", dir);
    snprintf(log, sizeof log, "%s/log.txt", dir);
    sn_test_write_file(traj,
        TRAJ("t1", "Which river flows through Cairo?",
             "The Nile flows through Cairo.\\nFINAL ANSWER: A",
             "Cairo is on the Nile.\\nFINAL ANSWER: A")
        TRAJ("t2", "Which river flows through Vienna?",
             "The Danube flows through Vienna.\\nFINAL ANSWER: B",
             "Vienna: the Danube.\\nFINAL ANSWER: B"));

    CHECK(sn_test_sh("'%s' tokenize train --help | grep -q -- --vocab-size", bin) == 0);
    CHECK(sn_test_sh("'%s' tokenize --help | grep -q 'tokenize train'", bin) == 0);

    /* the CLI reads what the library is given here, in the same order */
    CHECK(sn_test_sh("'%s' tokenize train -o '%s' --vocab-size 300 --min-frequency 2 "
                     "--progress none '%s' 2>'%s'", bin, out1, traj, log) == 0);
    CHECK(sn_test_sh("grep -q 'wrote .*tok1.json: 300 ids' '%s'", log) == 0);
    struct sn_bpe_train_params p = sn_bpe_train_default_params();
    struct sn_bpe_trainer *t = NULL;
    struct sn_err err = {0};
    p.vocab_size = 300;
    CHECK(sn_bpe_trainer_create(&p, &t, &err) == SN_OK);
    for (size_t i = 0; t && i < sizeof texts / sizeof *texts; i++)
        CHECK(sn_bpe_trainer_add(t, texts[i], strlen(texts[i]), &err) == SN_OK);
    CHECK(t && sn_bpe_trainer_train(t, NULL, &err) == SN_OK);
    CHECK(t && sn_bpe_trainer_write(t, lib, &err) == SN_OK);
    sn_bpe_trainer_free(t);
    CHECK(same_file(out1, lib));

    /* a directory is searched for trajectory files; a second run writes the same bytes */
    CHECK(sn_test_sh("'%s' tokenize train -o '%s' --vocab-size 300 --progress none '%s' "
                     "2>/dev/null", bin, out2, dir) == 0);
    CHECK(same_file(out1, out2));

    /* plain text, line by line with the newline; no specials: ids 0-299 are all learned */
    sn_test_write_file(txt, "the cat sat on the mat\nthe cat sat on the hat\n\nthe end");
    CHECK(sn_test_sh("'%s' tokenize train -o '%s' --vocab-size 300 --min-frequency 2 "
                     "--no-specials --progress plain '%s' 2>'%s'", bin, out2, txt, log) == 0);
    CHECK(sn_test_sh("grep -q 'stopped before --vocab-size 300' '%s'", log) == 0);
    struct sn_tokenizer *tok = NULL;
    CHECK(sn_tokenizer_open(out2, &tok, &err) == SN_OK);
    if (tok) {
        struct sn_ids ids = {0};
        CHECK(sn_tokenizer_encode(tok, " cat sat", 8, &ids, &err) == SN_OK);
        CHECK_MSG(ids.n == 2, " cat sat: %zu ids", ids.n); /* " cat", " sat": seen twice each */
        CHECK(sn_tokenizer_token_id(tok, "<|im_end|>") < 0);
        sn_ids_free(&ids);
        sn_tokenizer_free(tok);
    }

    /* --special: in id order after the learned tokens. The specials in the text are cut out,
    ** so the only pair seen twice is " b" (Ġ b): 256 + 1 + 2 ids */
    sn_test_write_file(txt, "<s>a b</s>\n<s>a b</s>\n");
    CHECK(sn_test_sh("'%s' tokenize train -o '%s' --vocab-size 300 --special '<s>' --special "
                     "'</s>' --progress none '%s' 2>/dev/null", bin, out2, txt) == 0);
    tok = NULL;
    CHECK(sn_tokenizer_open(out2, &tok, &err) == SN_OK);
    if (tok) {
        size_t n = sn_tokenizer_vocab_size(tok);
        CHECK_MSG(n == 259, "%zu ids", n);
        CHECK(sn_tokenizer_token_id(tok, "<s>") == (int32_t)n - 2);
        CHECK(sn_tokenizer_token_id(tok, "</s>") == (int32_t)n - 1);
        CHECK(sn_tokenizer_is_special(tok, (int32_t)n - 1));
        sn_tokenizer_free(tok);
    }
    CHECK(sn_test_sh("'%s' tokenize train -o '%s' --special x --no-specials '%s' 2>/dev/null",
                     bin, out2, txt) == 2);

    /* refusals: file:line, exit 1 for bad data, 2 for bad settings */
    sn_test_write_file(bad, TRAJ("t1", "Q?", "a", "b") "{\"schema\":\"sentinel.trajectory/1\"}\n");
    CHECK(sn_test_sh("'%s' tokenize train -o '%s' --progress none '%s' 2>'%s'", bin, out2, bad,
                     log) == 1);
    CHECK(sn_test_sh("grep -q 'bad.jsonl:2:' '%s'", log) == 0);
    sn_test_write_file(txt, "fine\nnot \xff fine\n");
    CHECK(sn_test_sh("'%s' tokenize train -o '%s' --progress none '%s' 2>'%s'", bin, out2, txt,
                     log) == 1);
    CHECK(sn_test_sh("grep -q 'text.txt:2: invalid UTF-8 at byte 4' '%s'", log) == 0);
    CHECK(sn_test_sh("'%s' tokenize train -o '%s' --progress none '%s/missing.txt' 2>'%s'",
                     bin, out2, dir, log) != 0);
    CHECK(sn_test_sh("grep -q 'missing.txt' '%s'", log) == 0);
    sn_test_write_file(txt, "");
    CHECK(sn_test_sh("'%s' tokenize train -o '%s' --progress none '%s' 2>'%s'", bin, out2, txt,
                     log) == 2);
    CHECK(sn_test_sh("grep -q 'empty corpus' '%s'", log) == 0);
    CHECK(sn_test_sh("'%s' tokenize train -o '%s' --vocab-size 258 '%s' 2>'%s'", bin, out2,
                     traj, log) == 2);
    CHECK(sn_test_sh("grep -q 'at least 259' '%s'", log) == 0);
    CHECK(sn_test_sh("'%s' tokenize train '%s' 2>/dev/null", bin, traj) == 2); /* no --out */
    return sn_test_done();
}
