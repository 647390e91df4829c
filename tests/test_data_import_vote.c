/* tests/test_data_import_vote.c: `sentinel stats --majority source` (docs/formats.md "Panel
** decision") on hand-made debates imported through the chat-log reader, whose given answers
** may be null: unparsed answers are one value of their own, a strict plurality of at least two
** wins, a tie / all different / a winning unparsed value is no decision. Each case's expected
** decision is worked out by hand; plurality and strict are run on the same debates for
** contrast. */
#include "import/import.h"
#include "data/data.h"
#include "eval/eval.h"
#include "testutil.h"

/* answers: one per agent, "-" = null (unparsed); gold is A. Returns accuracy.panel.r0 (0/1)
** under rule m, or -1 on error. */
static int panel_correct(const char *answers, enum sn_majority m)
{
    struct sn_buf j = {0};
    struct sn_err err = {0};
    size_t n = strlen(answers);
    sn_buf_puts(&j, "{\"format\":\"sentinel.chatlog/1\",\"question\":\"q\",\"options\":"
                    "[\"a\",\"b\",\"c\"],\"gold\":\"A\",\"agents\":[", &err);
    for (size_t i = 0; i < n; i++)
        sn_buf_puts(&j, i ? ",{}" : "{}", &err);
    sn_buf_puts(&j, "],\"rounds\":[[", &err);
    for (size_t i = 0; i < n; i++) {
        if (answers[i] == '-')
            sn_buf_printf(&j, &err, "%s{\"agent\":%zu,\"text\":\"t\",\"answer\":null}",
                          i ? "," : "", i);
        else
            sn_buf_printf(&j, &err, "%s{\"agent\":%zu,\"text\":\"t\",\"answer\":\"%c\"}",
                          i ? "," : "", i, answers[i]);
    }
    sn_buf_puts(&j, "]]}", &err);
    struct sn_import_params p = sn_import_default_params();
    p.format = "chatlog";
    struct sn_buf out = {0};
    struct sn_traj *t = NULL;
    int result = -1;
    if (sn_import_record(&p, "x.jsonl", j.data, j.len, 0, &out, NULL, &err) ||
        sn_traj_parse(out.data, out.len, "x:1", &t, &err))
        goto done;
    struct sn_stats_params sp = sn_stats_default_params();
    sp.majority = m;
    struct sn_stats *s;
    if (sn_stats_create(&sp, &s, &err))
        goto done;
    const struct sn_stat_row *rows;
    size_t nr;
    if (!sn_stats_add(s, t, &err) && !sn_stats_rows(s, &rows, &nr, &err))
        for (size_t i = 0; i < nr; i++)
            if (!strcmp(rows[i].metric, "accuracy.panel.r0"))
                result = (int)rows[i].k;
    sn_stats_free(s);
done:
    if (result < 0)
        fprintf(stderr, "%s: %s\n", answers, err.msg);
    sn_traj_free(t);
    sn_buf_free(&j);
    sn_buf_free(&out);
    return result;
}

int main(void)
{
    static const struct {
        const char *answers;
        int source, strict, plurality;
    } cases[] = {
        {"AA-", 1, 1, 1}, /* A has two votes */
        {"A--", 0, 1, 1}, /* the unparsed value wins under source: no decision */
        {"AB-", 0, 0, 0}, /* all different: no decision (plurality's default tie rule: none) */
        {"BA-", 0, 0, 0},
        {"A", 0, 1, 1},   /* one voter: source needs two votes */
        {"AB", 0, 0, 0},  /* two agents disagreeing: a tie, no decision */
        {"AA", 1, 1, 1},
        {"AABB", 0, 0, 0}, /* a tie */
        {"AAB--", 0, 1, 1}, /* A and unparsed tie under source */
        {"AAA--", 1, 1, 1},
        {"CC-AA", 0, 0, 0}, /* C and A tie: no decision under every rule */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_MSG(panel_correct(cases[i].answers, SN_MAJORITY_SOURCE) == cases[i].source,
                  "source %s", cases[i].answers);
        CHECK_MSG(panel_correct(cases[i].answers, SN_MAJORITY_STRICT) == cases[i].strict,
                  "strict %s", cases[i].answers);
        CHECK_MSG(panel_correct(cases[i].answers, SN_MAJORITY_PLURALITY) == cases[i].plurality,
                  "plurality %s", cases[i].answers);
    }
    enum sn_majority m;
    struct sn_err err = {0};
    CHECK(sn_majority_parse("source", &m, &err) == SN_OK && m == SN_MAJORITY_SOURCE);
    CHECK_STR(sn_majority_name(SN_MAJORITY_SOURCE), "source");
    return sn_test_done();
}
