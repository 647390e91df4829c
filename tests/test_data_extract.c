/* tests/test_data_extract.c: answer extraction and numeric normalisation (context/extract.c).
** A table of real-looking responses with the answer a careful human reads from each, the
** classic research-code mistakes as named regression tests, and normalisation cases. */
#include "data/data.h"
#include "testutil.h"

struct ex {
    const char *text;
    int         task; /* 0 = mc, 1 = numeric */
    size_t      n_opt;
    const char *want; /* NULL = must be reported unparsed */
};

#define MC(t, w) {t, 0, 4, w}
#define MC5(t, w) {t, 0, 5, w}
#define NUM(t, w) {t, 1, 0, w}

static const struct ex table[] = {
    /* --- multiple choice: explicit final answers --- */
    MC("FINAL ANSWER: B", "B"),
    MC("Let me think. The Nile flows through Cairo.\n\nFINAL ANSWER: A", "A"),
    MC("Final Answer: (C)", "C"),
    MC("**Final Answer: D**", "D"),
    MC("final answer: b", "B"),
    MC("My final answer is (B).", "B"),
    MC("Final answer: (A) Nile", "A"),
    MC("I considered (A) and (B). FINAL ANSWER: D", "D"),
    MC("FINAL ANSWER: A. Wait, re-checking... FINAL ANSWER: C", "C"),
    MC("The final answer is option B.", "B"),
    MC("Final answer - [C]", "C"),
    MC("Final Answer:\n\nB", "B"),
    MC("So the final answer is: **(D)**", "D"),
    MC("FINAL ANSWER: \\boxed{B}", "B"),
    MC("FINAL ANSWER: $\\boxed{C}$", "C"),
    /* --- "the answer is X" --- */
    MC("The answer is B", "B"),
    MC("The answer is B.", "B"),
    MC("Therefore, the answer is (C).", "C"),
    MC("Answer: D", "D"),
    MC("answer: (a)", "A"),
    MC("I think the correct answer is option A, Canberra.", "A"),
    MC("After weighing everything, the correct option is C.", "C"),
    MC("The answer would be D since the others are wrong.", "D"),
    MC("I choose B.", "B"),
    MC("I stand by (A).", "A"),
    MC("My answer remains C.", "C"),
    MC("The correct choice is D) Octagon", "D"),
    MC("Answer: [B]", "B"),
    MC("The answer is \"C\".", "C"),
    MC("answer is: B", "B"),
    /* --- boxed, bracketed and standalone letters --- */
    MC("\\boxed{C}", "C"),
    MC("So we get \\boxed{\\text{A}}", "A"),
    MC("Between the two, (B) is stronger than (A), so I go with (D).", "D"),
    MC("Options considered: [A], [C]. Choosing [C].", "C"),
    MC("(B)", "B"),
    MC("B", "B"),
    MC("B.", "B"),
    MC("D) Octagon", "D"),
    MC("It must be C", "C"),
    MC("Option B is correct.", "B"),
    MC("Option B is the right one, not option A", "A"),
    MC("I'd go with choice C here.", "C"),
    MC("A. Nile", "A"),
    MC("Looking at this, C.", "C"),
    /* --- letters that are words or out of range --- */
    MC("I think it is probably the river one.", NULL),
    MC("A good case can be made for several options.", NULL),
    MC("I am not sure about this question at all.", NULL),
    MC("The answer is E.", NULL),                     /* only A-D exist */
    MC5("The answer is E.", "E"),                     /* five options: E exists */
    MC("FINAL ANSWER: Z", NULL),
    MC("", NULL),
    MC("The answer is a bit unclear to me.", NULL),
    MC("I hold a PhD in this area.", NULL),
    MC("The U.S. and the U.K. agree.", NULL),
    MC("This is an A-level question.", NULL),
    MC("Q&A sessions help.", NULL),
    MC("I'm certain.", NULL),
    MC("I think so. I believe so.", NULL),
    /* classic mistake: first capital letter of "The answer is B" must not give "T"/"A" */
    MC("The answer is B", "B"),
    MC("As an AI, I believe the answer is C", "C"),
    MC("A careful reading gives B", "B"),
    MC("I think B", "B"),
    MC("In my view A is wrong and C is right. FINAL ANSWER: C", "C"),
    MC5("After thinking, I pick E.", "E"),
    MC("Neither (A) nor (B); it has to be (C).", "C"),
    MC("The answer is (b)", "B"),
    MC("**Answer:** C", "C"),
    MC("Answer:\n(C) Condensation", "C"),
    MC("My final answer: A\nNote: (B) was tempting.", "A"),

    /* --- numeric: explicit forms --- */
    NUM("#### 72", "72"),
    NUM("She sold 48/2 = 24 clips in May. 48 + 24 = 72.\n#### 72", "72"),
    NUM("The answer is 18.", "18"),
    NUM("The answer is $18.", "18"),
    NUM("So the answer is \\boxed{18}.", "18"),
    NUM("\\boxed{1,000}", "1000"),
    NUM("FINAL ANSWER: 3.5", "3.5"),
    NUM("FINAL ANSWER: 3.50", "3.5"),
    NUM("FINAL ANSWER: 3.0", "3"),
    NUM("Final answer: 1,234,567", "1234567"),
    NUM("Final answer: -12", "-12"),
    NUM("Final answer: \xe2\x88\x92" "12", "-12"), /* U+2212 minus */
    NUM("The answer is 12/4", "3"),
    NUM("The answer is \\frac{3}{4}", "0.75"),
    NUM("The answer is $\\frac{1}{2}$.", "0.5"),
    NUM("\\boxed{\\dfrac{10}{4}}", "2.5"),
    NUM("The answer is 25%.", "25"),
    NUM("The answer is 25\\%.", "25"),
    NUM("The answer is \\$1,250.50", "1250.5"),
    NUM("Answer: 0.5", "0.5"),
    NUM("Answer: .5", "0.5"),
    NUM("The final answer is 42 apples.", "42"),
    NUM("FINAL ANSWER: 7\n\nI computed 3 + 4 earlier.", "7"),
    NUM("First 5 x 4 = 20, then 20 + 2 = 22. The answer is 22. Note 5 was a guess.", "22"),
    NUM("\\boxed{18 \\text{ dollars}}", "18"),
    NUM("\\boxed{}", NULL),
    /* last number fallback */
    NUM("Total: 5 + 7 = 12", "12"),
    NUM("She has 3 apples and buys 4 more, so 7", "7"),
    NUM("It costs 3.5 dollars", "3.5"),     /* classic: not 35 */
    NUM("Price 1,000 dollars", "1000"),
    NUM("We have 1,2 and 3", "3"),
    NUM("In 2023 there were 15", "15"),
    NUM("no numbers here", NULL),
    NUM("", NULL),
    NUM("The answer is seven.", NULL),
    NUM("H2O is water", NULL),                 /* digit inside a word */
    NUM("result = 7.", "7"),
    NUM("The result is 1e5", "100000"),
    NUM("about 2.5E-3 of it", "0.0025"),
    NUM("The answer is 5e555", NULL),            /* overflows to inf: not an answer */
    NUM("x = -3", "-3"),
    NUM("Answer: 1/0", "1"),                   /* division by zero is not a fraction */
    NUM("#### 1,000,000", "1000000"),
    NUM("#### -0", "0"),
    NUM("The answer is 0.333333333333", "0.3333333333"),
    NUM("Answer: 100.", "100"),
    NUM("The answer is 3.14159.", "3.14159"),
    NUM("I get 1000,000", "1000"),             /* "1000,000" is not a thousands form */
};

struct norm { const char *in, *want; };
static const struct norm norms[] = {
    {"12/4", "3"}, {"1,000", "1000"}, {"3.0", "3"}, {"\\frac{1}{4}", "0.25"},
    {"\\boxed{42}", "42"}, {"$5", "5"}, {"5%", "5"}, {" 7 ", "7"}, {"7.", "7"},
    {"-2.50", "-2.5"}, {"$\\frac{3}{2}$", "1.5"}, {"\\$12", "12"}, {"0012", "12"},
    {"abc", NULL}, {"5 apples", NULL}, {"", NULL}, {"1/0", NULL}, {"1,00", NULL},
    {"1e3", "1000"}, {"1e", NULL}, {"--5", NULL}, {"\\frac{1}{0}", NULL}, {"3 4", NULL},
};

int main(void)
{
    size_t n = sizeof table / sizeof table[0];
    CHECK(n >= 100);
    for (size_t i = 0; i < n; i++) {
        const struct ex *e = &table[i];
        char out[SN_ANSWER_MAX];
        bool ok = sn_extract_answer(e->text, e->task ? SN_TASK_NUMERIC : SN_TASK_MC, e->n_opt,
                                    out);
        if (e->want) {
            CHECK_MSG(ok && strcmp(out, e->want) == 0, "case %zu: \"%s\" -> %s%s, want %s", i,
                      e->text, ok ? out : "(unparsed)", "", e->want);
        } else {
            CHECK_MSG(!ok && out[0] == '\0', "case %zu: \"%s\" -> %s, want unparsed", i,
                      e->text, out);
        }
    }
    for (size_t i = 0; i < sizeof norms / sizeof norms[0]; i++) {
        char out[SN_ANSWER_MAX];
        bool ok = sn_normalize_number(norms[i].in, out);
        if (norms[i].want)
            CHECK_MSG(ok && !strcmp(out, norms[i].want), "normalize \"%s\" -> %s, want %s",
                      norms[i].in, ok ? out : "(fail)", norms[i].want);
        else
            CHECK_MSG(!ok, "normalize \"%s\" -> %s, want failure", norms[i].in, out);
    }
    /* regression: classic mistakes, named */
    char out[SN_ANSWER_MAX];
    /* 1. first capital letter */
    CHECK(sn_extract_answer("The answer is B", SN_TASK_MC, 4, out) && !strcmp(out, "B"));
    /* 2. concatenating digits: 3.5 must not become 35 */
    CHECK(sn_extract_answer("so it is 3.5", SN_TASK_NUMERIC, 0, out) && !strcmp(out, "3.5"));
    CHECK(sn_extract_answer("between 1 and 2", SN_TASK_NUMERIC, 0, out) && !strcmp(out, "2"));
    /* 3. unparsed is never correct, not even against an empty gold */
    CHECK(!sn_extract_answer("no idea", SN_TASK_MC, 4, out));
    CHECK(!sn_answer_equal(out, "A", SN_TASK_MC));
    CHECK(!sn_answer_equal("", "", SN_TASK_MC));
    CHECK(!sn_answer_equal(NULL, "3", SN_TASK_NUMERIC));
    /* numeric equality by value */
    CHECK(sn_answer_equal("3", "3", SN_TASK_NUMERIC));
    CHECK(sn_answer_equal("0.5", "0.50", SN_TASK_NUMERIC));
    CHECK(!sn_answer_equal("3", "35", SN_TASK_NUMERIC));
    /* formatting */
    sn_format_number(-0.0, out);
    CHECK_STR(out, "0");
    sn_format_number(1e6, out);
    CHECK_STR(out, "1000000");
    sn_format_number(2.5, out);
    CHECK_STR(out, "2.5");
    sn_format_number(1.0 / 3.0, out);
    CHECK_STR(out, "0.3333333333");
    /* bounds: options beyond 26 or none */
    CHECK(!sn_extract_answer("FINAL ANSWER: A", SN_TASK_MC, 0, out));
    CHECK(!sn_extract_answer(NULL, SN_TASK_MC, 4, out));
    return sn_test_done();
}
