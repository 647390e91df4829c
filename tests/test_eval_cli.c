/* tests/test_eval_cli.c: `sentinel stats` end to end ($SENTINEL_BIN): JSON and CSV rows,
** the recorded majority rule, `stats panels` on the published rates, --explain, usage errors,
** and robustness (truncated gzip, a line that is not JSON, a missing field: file:line + field;
** --skip-bad counts them). */
#include "test_eval_fixture.h"

#include <unistd.h>

static const char *bin;
static char dir[1024];

static char *slurp(const char *name)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = NULL;
    size_t len;
    struct sn_err err = {0};
    if (sn_file_read(path, 0, &text, &len, &err))
        return strdup("");
    return text;
}

/* runs `bin stats ARGS` in dir with stdout -> out.txt, stderr -> err.txt; returns exit code */
static int stats(const char *args)
{
    return sn_test_sh("cd '%s' && '%s' stats %s > out.txt 2> err.txt", dir, bin, args);
}

static const cJSON *find_row(const cJSON *root, const char *group_label, const char *metric)
{
    const cJSON *row;
    cJSON_ArrayForEach(row, cJSON_GetObjectItem(root, "rows")) {
        if (!strcmp(cJSON_GetObjectItem(row, "group_label")->valuestring, group_label) &&
            !strcmp(cJSON_GetObjectItem(row, "metric")->valuestring, metric))
            return row;
    }
    return NULL;
}

static double num(const cJSON *row, const char *key)
{
    const cJSON *v = row ? cJSON_GetObjectItem(row, key) : NULL;
    return v && cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

int main(void)
{
    bin = sn_test_bin();
    snprintf(dir, sizeof dir, "%s", sn_test_dir("eval_cli"));
    char path[1200];

    /* two strategies; the SDI debate of test_eval_sdi (0.5) and one never attacked (1.0) */
    static const char *const g1[] = {"AAABB", "ABABB", "BBABB"};
    static const char *const g2[] = {"AAABB", "AAABB", "AAABB"};
    struct fx good[] = {
        {.id = "d1", .roles = "HHHAA", .gold = "A", .target = "B", .grid = g1, .T = 3,
         .strategy = "simultaneous", .replicate = 0},
        {.id = "d2", .roles = "HHHAA", .gold = "A", .target = "B", .grid = g2, .T = 3,
         .strategy = "simultaneous", .replicate = 1},
        {.id = "d3", .roles = "HHHAA", .gold = "A", .target = "B", .grid = g2, .T = 3,
         .strategy = "one_by_one", .replicate = 0},
    };
    CHECK(sn_test_sh("mkdir -p '%s/traj/sub'", dir) == 0);
    snprintf(path, sizeof path, "%s/traj/a.jsonl.gz", dir);
    fx_write(path, good, 2);
    snprintf(path, sizeof path, "%s/traj/sub/b.jsonl", dir);
    fx_write(path, good + 2, 1);

    /* a directory, searched recursively (a file also named is read once); JSON + CSV + table */
    CHECK(stats("traj -i traj/a.jsonl.gz --by strategy --json out.json --csv out.csv "
                "--items items.csv --progress none") == 0);
    /* per-debate row of d1 (hand values: test_eval_sdi "basic"; NAC (2+2+1)/3; honest r0 3/3,
    ** r2 1/3; panel r0 A correct, r2 B wrong; C0 yes, CF no) */
    char *items = slurp("items.csv");
    CHECK_MSG(strstr(items, "\nd1,d1,synthetic,strategy=simultaneous,0,3,ok,0.5,3,0.3333333333,"
                            "0.75,3,1.666666667,1,0.3333333333,1,0,0,1,0\n") != NULL, "%s", items);
    CHECK(!strncmp(items, "id,item_id,", 11));
    free(items);
    char *out = slurp("out.txt");
    CHECK(strstr(out, "== strategy=one_by_one ==") && strstr(out, "sdi ") &&
          strstr(out, "plurality"));
    CHECK_MSG(strstr(out, "\n3 trajectories") != NULL, "%s", out);
    free(out);
    char *js = slurp("out.json");
    cJSON *root = cJSON_Parse(js);
    CHECK(root != NULL);
    if (root) {
        CHECK_STR(cJSON_GetObjectItem(root, "schema")->valuestring, "sentinel.stats/1");
        CHECK_STR(cJSON_GetObjectItem(root, "majority")->valuestring, "plurality");
        CHECK(num(root, "n_trajectories") == 3);
        CHECK(num(root, "n_skipped_lines") == 0);
        CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(root, "inputs")) == 2);
        const cJSON *r = find_row(root, "strategy=simultaneous", "sdi");
        CHECK(r && num(r, "value") == 0.75 && num(r, "n") == 2);
        /* replicates 0 and 1 hold 0.5 and 1.0: mean 0.75, SD 0.5/√2 */
        CHECK(r && fabs(num(r, "rep_mean") - 0.75) < 1e-12);
        CHECK(r && fabs(num(r, "rep_sd") - 0.5 / sqrt(2.0)) < 1e-12);
        r = find_row(root, "strategy=one_by_one", "sdi");
        CHECK(r && num(r, "value") == 1.0);
        CHECK(r && cJSON_IsNull(cJSON_GetObjectItem(r, "rep_sd"))); /* one replicate */
        CHECK(r && !strcmp(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "group"),
                                               "strategy")->valuestring, "one_by_one"));
        r = find_row(root, "strategy=simultaneous", "accuracy.honest.r0");
        CHECK(r && num(r, "k") == 6 && num(r, "n") == 6 && num(r, "hi") == 1.0);
    }
    cJSON_Delete(root);
    free(js);
    char *csv = slurp("out.csv");
    static const char hdr[] = "group,strategy,metric,kind,value,n,k,lo,hi,rep_n,rep_mean,"
                              "rep_sd,majority,adversary_effective,tie,note\n";
    CHECK(!strncmp(csv, hdr, sizeof hdr - 1));
    CHECK_MSG(strstr(csv, "\nstrategy=simultaneous,simultaneous,sdi,mean,0.75,2,,") != NULL,
              "%.300s", csv);
    CHECK(strstr(csv, ",plurality,false,none,\n") != NULL);
    free(csv);
    CHECK(sn_test_sh("ls '%s' | grep -q tmp", dir) != 0); /* no temp file left behind */

    /* the majority rule is recorded */
    CHECK(stats("traj --majority strict --json strict.json --quiet") == 0);
    js = slurp("strict.json");
    CHECK(strstr(js, "\"majority\":\t\"strict\"") || strstr(js, "\"majority\": \"strict\""));
    free(js);
    /* ... and the tie rule, in JSON and in the table, default none */
    CHECK(stats("traj --json tie.json") == 0);
    js = slurp("tie.json");
    CHECK(strstr(js, "\"tie\":\t\"none\"") || strstr(js, "\"tie\": \"none\""));
    free(js);
    out = slurp("out.txt");
    CHECK_MSG(strstr(out, "a tie is no decision, counted wrong"), "%s", out);
    free(out);
    CHECK(stats("traj --tie lowest-id --json tie.json") == 0);
    js = slurp("tie.json");
    CHECK(strstr(js, "\"tie\":\t\"lowest-id\"") || strstr(js, "\"tie\": \"lowest-id\""));
    free(js);
    out = slurp("out.txt");
    CHECK(strstr(out, "lowest agent id"));
    free(out);
    CHECK(stats("traj --tie sideways") == 2);

    /* stats panels: the published check */
    CHECK(stats("panels --rates 89.1,35.2,90.0 --json panels.json") == 0);
    out = slurp("out.txt");
    CHECK_MSG(strstr(out, "honest bonus            53.9 pp"), "%s", out);
    CHECK(strstr(out, "adversarial penalty      0.9 pp"));
    CHECK(strstr(out, "replacement cost        54.8 pp"));
    CHECK(strstr(out, "break-even prior q*     98.4 %"));
    free(out);
    js = slurp("panels.json");
    root = cJSON_Parse(js);
    CHECK(root && fabs(num(root, "break_even_q") - 98.357664) < 1e-5);
    cJSON_Delete(root);
    free(js);
    CHECK(stats("panels --rates 89.1,x,90") == 2);

    /* --explain */
    CHECK(stats("traj --explain d1") == 0);
    out = slurp("out.txt");
    CHECK(strstr(out, "debate d1") && strstr(out, "T_first = FAT = 3,"));
    free(out);
    CHECK(stats("traj --explain nope") == 2);
    char *er = slurp("err.txt");
    CHECK(strstr(er, "no debate with id or item_id 'nope'"));
    free(er);

    /* usage errors */
    CHECK(stats("traj --by stratgy") == 2);
    er = slurp("err.txt");
    CHECK(strstr(er, "did you mean 'strategy'"));
    free(er);
    CHECK(stats("--help") == 0);
    out = slurp("out.txt");
    CHECK(strstr(out, "--majority") && strstr(out, "--skip-bad") && strstr(out, "--by"));
    free(out);

    /* robustness: line 2 not JSON, line 3 missing 'gold', then a good line */
    {
        char *l1 = fx_json(&good[0]), *l4 = fx_json(&good[1]);
        cJSON *j = cJSON_Parse(l1);
        cJSON_DeleteItemFromObject(j, "gold");
        char *l3 = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        snprintf(path, sizeof path, "%s/bad.jsonl", dir);
        FILE *f = fopen(path, "wb");
        fprintf(f, "%s\n{\"schema\": oops\n%s\n%s\n", l1, l3, l4);
        fclose(f);
        free(l1);
        free(l3);
        free(l4);
    }
    CHECK(stats("bad.jsonl --quiet") == 1);
    er = slurp("err.txt");
    CHECK_MSG(strstr(er, "bad.jsonl:2: not valid JSON"), "%s", er);
    free(er);
    /* with --skip-bad: two skipped, two read, and the report says so */
    CHECK(stats("bad.jsonl --skip-bad --json skip.json") == 0);
    js = slurp("skip.json");
    root = cJSON_Parse(js);
    CHECK(root && num(root, "n_skipped_lines") == 2 && num(root, "n_trajectories") == 2);
    CHECK(root && strstr(cJSON_GetObjectItem(root, "first_skipped")->valuestring,
                         "bad.jsonl:2: not valid JSON"));
    cJSON_Delete(root);
    free(js);
    er = slurp("err.txt");
    CHECK_MSG(strstr(er, "skipped 2 bad line(s)"), "%s", er);
    free(er);
    out = slurp("out.txt");
    CHECK(strstr(out, "2 skipped lines"));
    free(out);
    /* the missing field, on its own */
    CHECK(sn_test_sh("cd '%s' && sed -n 3p bad.jsonl > nogold.jsonl", dir) == 0);
    CHECK(stats("nogold.jsonl") == 1);
    er = slurp("err.txt");
    CHECK_MSG(strstr(er, "nogold.jsonl:1: missing field 'gold'"), "%s", er);
    free(er);

    /* a truncated gzip member: an error naming the file and the last good line */
    snprintf(path, sizeof path, "%s/trunc.jsonl.gz", dir);
    fx_write(path, good, 3);
    CHECK(sn_test_sh("cd '%s' && s=$(stat -c %%s trunc.jsonl.gz) && "
                     "truncate -s $((s - 30)) trunc.jsonl.gz", dir) == 0);
    CHECK(stats("trunc.jsonl.gz --json t.json") == 1);
    er = slurp("err.txt");
    CHECK_MSG(strstr(er, "trunc.jsonl.gz") && strstr(er, "after line 2"), "%s", er);
    free(er);
    snprintf(path, sizeof path, "%s/t.json", dir);
    CHECK(access(path, F_OK) != 0); /* nothing written on failure */
    CHECK(stats("trunc.jsonl.gz --skip-bad --json t.json --quiet") == 0);
    js = slurp("t.json");
    root = cJSON_Parse(js);
    CHECK(root && num(root, "n_skipped_lines") == 1 && num(root, "n_trajectories") == 2);
    cJSON_Delete(root);
    free(js);
    return sn_test_done();
}
