/* tokenizer/demo.c: the byte-level tokenizer of the tiny demo model (tokenizer.h,
** sn_tokenizer_write_demo). Same tokenizer.json layout as Qwen2's (NFC normalizer, Split with
** the Qwen2 regex + ByteLevel pre-tokenizer, BPE model, ByteLevel decoder), so both go through
** sn_tokenizer_open. Merges are learned here, deterministically, by plain BPE training
** (Sennrich et al. 2016, §3.1) on the built-in English text below: count adjacent pairs over
** the pre-tokens, merge the most frequent (ties: smallest left id, then smallest right id),
** until the vocabulary has SN_TOKENIZER_DEMO_VOCAB - 3 tokens; then the three ChatML tokens. */
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_internal.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

static const char demo_text[] =
    "In a debate, several agents answer the same question and read each other's answers. "
    "Each round, every agent may keep its answer or change it after reading the others. "
    "An honest agent tries to find the correct answer and explains its reasoning. "
    "An adversary wants the group to settle on a wrong answer; it writes confident, "
    "plausible arguments, repeats them, and agrees with other agents when that helps. "
    "The detector reads a response together with the context of the debate and gives it "
    "a score: higher means more trustworthy. It was trained on pairs of responses, one "
    "chosen and one rejected, so that the chosen response scores higher than the rejected "
    "one, and on a reference explanation that anchors the scores to the facts.\n"
    "Question: Which of the following is the largest planet in the solar system?\n"
    "Options: (A) Mars (B) Jupiter (C) Earth (D) Venus\n"
    "Answer: (B) Jupiter. Jupiter is the largest planet; its mass is more than twice the mass "
    "of all the other planets together. I think the answer is B, and I am confident.\n"
    "I disagree. The others are wrong: the answer is (C), because Earth is the planet we "
    "know best, and it has the most water. Let's reconsider the options step by step.\n"
    "After reading the other answers, I still believe the correct option is (B). The "
    "argument for (C) does not answer the question that was asked.\n"
    "We're sure that it's right; they've checked it, and you'll see that we'd agree.\n"
    "def score(context, response):\n"
    "    tokens = tokenize(context + response)\n"
    "    return model.forward(tokens)[-1]\n"
    "for i in range(10): total += values[i] * 2\n"
    "The numbers 12, 345 and 6789 are written digit by digit: 1 2 3 4 5 6 7 8 9 0.\n"
    "Training uses a learning rate of 0.0001, a batch of 16 pairs and 1000 steps. "
    "The validation accuracy is reported after every epoch, and the best checkpoint is kept. "
    "When the detector flags an agent, its messages are removed from the debate, and the "
    "remaining agents continue. This recovers most of the accuracy that the attack removed.\n";

/* A pair of token ids and how often it occurs. */
struct pair_count {
    uint64_t key; /* (a << 32 | b) + 1; 0 = empty slot */
    size_t   count;
};

struct word {
    int32_t *ids;
    size_t   n, freq;
};

struct demo {
    char   *tok_bytes[SN_TOKENIZER_DEMO_VOCAB];
    size_t  tok_len[SN_TOKENIZER_DEMO_VOCAB];
    size_t  n_tok;
    int32_t merge_a[SN_TOKENIZER_DEMO_VOCAB * 4], merge_b[SN_TOKENIZER_DEMO_VOCAB * 4];
    size_t  n_merges;
    struct word *words;
    size_t  n_words;
};

static void demo_free(struct demo *d)
{
    for (size_t i = 0; i < d->n_tok; i++)
        sn_free(d->tok_bytes[i]);
    for (size_t i = 0; i < d->n_words; i++)
        sn_free(d->words[i].ids);
    sn_free(d->words);
}

/* Pre-tokens of demo_text with the Qwen2 split regex, as distinct words with counts. */
static int demo_words(struct demo *d, struct sn_err *err)
{
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)SN_QWEN2_SPLIT_REGEX, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &ec, &eo, NULL);
    pcre2_match_data *md = re ? pcre2_match_data_create_from_pattern(re, NULL) : NULL;
    size_t n = sizeof demo_text - 1, pos = 0, cap = 0;
    int rc = SN_OK;
    if (!md) {
        rc = sn_err_set(err, SN_E_BACKEND, "demo tokenizer: PCRE2 setup failed");
        goto done;
    }
    while (pos < n) {
        int m = pcre2_match(re, (PCRE2_SPTR)demo_text, n, pos, 0, md, NULL);
        if (m < 0)
            break; /* the pattern covers every character; nothing is left over */
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        const char *w = demo_text + ov[0];
        size_t wl = ov[1] - ov[0], i;
        pos = ov[1];
        for (i = 0; i < d->n_words; i++) {
            struct word *x = &d->words[i];
            if (x->n != wl)
                continue;
            size_t j = 0;
            while (j < wl && x->ids[j] == (uint8_t)w[j])
                j++;
            if (j == wl)
                break;
        }
        if (i < d->n_words) {
            d->words[i].freq++;
            continue;
        }
        if (d->n_words == cap) {
            cap = cap ? 2 * cap : 256;
            struct word *nw = sn_realloc(d->words, cap * sizeof *nw);
            if (!nw) {
                rc = sn_err_set(err, SN_E_NOMEM, "demo tokenizer: out of memory");
                goto done;
            }
            d->words = nw;
        }
        struct word *x = &d->words[d->n_words];
        x->ids = sn_malloc(wl * sizeof *x->ids);
        if (!x->ids) {
            rc = sn_err_set(err, SN_E_NOMEM, "demo tokenizer: out of memory");
            goto done;
        }
        for (size_t j = 0; j < wl; j++)
            x->ids[j] = (uint8_t)w[j];
        x->n = wl;
        x->freq = 1;
        d->n_words++;
    }
done:
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return rc;
}

/* One BPE training step. Returns 1 when a merge was added, 0 when no pair is left. */
static int demo_step(struct demo *d, struct pair_count *tab, size_t mask, struct sn_err *err)
{
    memset(tab, 0, (mask + 1) * sizeof *tab);
    for (size_t w = 0; w < d->n_words; w++) {
        const struct word *x = &d->words[w];
        for (size_t i = 0; i + 1 < x->n; i++) {
            uint64_t key = ((uint64_t)(uint32_t)x->ids[i] << 32 | (uint32_t)x->ids[i + 1]) + 1;
            size_t h = (size_t)(key * 0x9E3779B97F4A7C15ull >> 20) & mask;
            while (tab[h].key && tab[h].key != key)
                h = (h + 1) & mask;
            tab[h].key = key;
            tab[h].count += x->freq;
        }
    }
    uint64_t best = 0;
    size_t best_n = 0;
    for (size_t h = 0; h <= mask; h++)
        if (tab[h].key && (tab[h].count > best_n || (tab[h].count == best_n && tab[h].key < best))) {
            best = tab[h].key;
            best_n = tab[h].count;
        }
    if (!best)
        return 0;
    int32_t a = (int32_t)((best - 1) >> 32), b = (int32_t)((best - 1) & 0xFFFFFFFFu);
    size_t la = d->tok_len[a], lb = d->tok_len[b];
    int32_t nid = -1;
    for (size_t t = 0; t < d->n_tok; t++)
        if (d->tok_len[t] == la + lb && !memcmp(d->tok_bytes[t], d->tok_bytes[a], la) &&
            !memcmp(d->tok_bytes[t] + la, d->tok_bytes[b], lb))
            nid = (int32_t)t;
    if (nid < 0) {
        char *s = sn_malloc(la + lb);
        if (!s)
            return sn_err_set(err, SN_E_NOMEM, "demo tokenizer: out of memory"), -1;
        memcpy(s, d->tok_bytes[a], la);
        memcpy(s + la, d->tok_bytes[b], lb);
        nid = (int32_t)d->n_tok;
        d->tok_bytes[d->n_tok] = s;
        d->tok_len[d->n_tok++] = la + lb;
    }
    d->merge_a[d->n_merges] = a;
    d->merge_b[d->n_merges++] = b;
    for (size_t w = 0; w < d->n_words; w++) {
        struct word *x = &d->words[w];
        size_t o = 0;
        for (size_t i = 0; i < x->n; i++) {
            if (i + 1 < x->n && x->ids[i] == a && x->ids[i + 1] == b) {
                x->ids[o++] = nid;
                i++;
            } else {
                x->ids[o++] = x->ids[i];
            }
        }
        x->n = o;
    }
    return 1;
}

static cJSON *bytelevel_string(const char *b, size_t n)
{
    char s[4 * 64 + 1];
    size_t o = 0;
    for (size_t i = 0; i < n && o + 2 < sizeof s; i++) {
        uint32_t cp = sn_bytelevel_cp((uint8_t)b[i]);
        if (cp < 0x80) {
            s[o++] = (char)cp;
        } else {
            s[o++] = (char)(0xC0 | cp >> 6);
            s[o++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    s[o] = 0;
    return cJSON_CreateString(s);
}

static cJSON *json_obj(cJSON *parent, const char *key)
{
    cJSON *o = cJSON_CreateObject();
    if (o)
        cJSON_AddItemToObject(parent, key, o);
    return o;
}

static cJSON *demo_json(const struct demo *d)
{
    static const char *const chatml[3] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    cJSON *root = cJSON_CreateObject(), *x, *arr, *model, *vocab, *merges, *pt, *seq;
    if (!root)
        return NULL;
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    arr = cJSON_AddArrayToObject(root, "added_tokens");
    for (int i = 0; arr && i < 3; i++) {
        x = cJSON_CreateObject();
        if (!x)
            break;
        cJSON_AddItemToArray(arr, x);
        cJSON_AddNumberToObject(x, "id", (double)(d->n_tok + (size_t)i));
        cJSON_AddStringToObject(x, "content", chatml[i]);
        cJSON_AddBoolToObject(x, "single_word", 0);
        cJSON_AddBoolToObject(x, "lstrip", 0);
        cJSON_AddBoolToObject(x, "rstrip", 0);
        cJSON_AddBoolToObject(x, "normalized", 0);
        cJSON_AddBoolToObject(x, "special", 1);
    }
    x = json_obj(root, "normalizer");
    if (x)
        cJSON_AddStringToObject(x, "type", "NFC");
    pt = json_obj(root, "pre_tokenizer");
    if (pt) {
        cJSON_AddStringToObject(pt, "type", "Sequence");
        seq = cJSON_AddArrayToObject(pt, "pretokenizers");
        x = cJSON_CreateObject();
        if (seq && x) {
            cJSON_AddItemToArray(seq, x);
            cJSON_AddStringToObject(x, "type", "Split");
            cJSON *pat = json_obj(x, "pattern");
            if (pat)
                cJSON_AddStringToObject(pat, "Regex", SN_QWEN2_SPLIT_REGEX);
            cJSON_AddStringToObject(x, "behavior", "Isolated");
            cJSON_AddBoolToObject(x, "invert", 0);
            x = cJSON_CreateObject();
            if (x) {
                cJSON_AddItemToArray(seq, x);
                cJSON_AddStringToObject(x, "type", "ByteLevel");
                cJSON_AddBoolToObject(x, "add_prefix_space", 0);
                cJSON_AddBoolToObject(x, "trim_offsets", 0);
                cJSON_AddBoolToObject(x, "use_regex", 0);
            }
        } else {
            cJSON_Delete(x);
        }
    }
    cJSON_AddNullToObject(root, "post_processor");
    x = json_obj(root, "decoder");
    if (x) {
        cJSON_AddStringToObject(x, "type", "ByteLevel");
        cJSON_AddBoolToObject(x, "add_prefix_space", 0);
        cJSON_AddBoolToObject(x, "trim_offsets", 0);
        cJSON_AddBoolToObject(x, "use_regex", 0);
    }
    model = json_obj(root, "model");
    if (model) {
        cJSON_AddStringToObject(model, "type", "BPE");
        cJSON_AddNullToObject(model, "dropout");
        cJSON_AddNullToObject(model, "unk_token");
        cJSON_AddStringToObject(model, "continuing_subword_prefix", "");
        cJSON_AddStringToObject(model, "end_of_word_suffix", "");
        cJSON_AddBoolToObject(model, "fuse_unk", 0);
        cJSON_AddBoolToObject(model, "byte_fallback", 0);
        cJSON_AddBoolToObject(model, "ignore_merges", 0);
        vocab = json_obj(model, "vocab");
        for (size_t t = 0; vocab && t < d->n_tok; t++) {
            cJSON *s = bytelevel_string(d->tok_bytes[t], d->tok_len[t]);
            if (!s)
                break;
            cJSON_AddNumberToObject(vocab, s->valuestring, (double)t);
            cJSON_Delete(s);
        }
        merges = cJSON_AddArrayToObject(model, "merges");
        for (size_t m = 0; merges && m < d->n_merges; m++) {
            cJSON *p = cJSON_CreateArray();
            if (!p)
                break;
            cJSON_AddItemToArray(merges, p);
            cJSON_AddItemToArray(p, bytelevel_string(d->tok_bytes[d->merge_a[m]],
                                                      d->tok_len[d->merge_a[m]]));
            cJSON_AddItemToArray(p, bytelevel_string(d->tok_bytes[d->merge_b[m]],
                                                      d->tok_len[d->merge_b[m]]));
        }
    }
    return root;
}

/* Counts every node so a failed cJSON allocation above (which leaves a node out) is caught. */
static size_t json_count(const cJSON *j)
{
    size_t n = 1;
    for (const cJSON *c = j ? j->child : NULL; c; c = c->next)
        n += json_count(c);
    return n;
}

int sn_tokenizer_write_demo(const char *path, struct sn_err *err)
{
    struct demo d;
    memset(&d, 0, sizeof d);
    size_t mask = 8191;
    struct pair_count *tab = NULL;
    cJSON *root = NULL;
    int rc = SN_OK;
    for (int b = 0; b < 256; b++) {
        d.tok_bytes[b] = sn_malloc(1);
        if (!d.tok_bytes[b]) {
            rc = sn_err_set(err, SN_E_NOMEM, "demo tokenizer: out of memory");
            goto done;
        }
        d.tok_bytes[b][0] = (char)b;
        d.tok_len[b] = 1;
        d.n_tok++;
    }
    if ((rc = demo_words(&d, err)))
        goto done;
    tab = sn_malloc((mask + 1) * sizeof *tab);
    if (!tab) {
        rc = sn_err_set(err, SN_E_NOMEM, "demo tokenizer: out of memory");
        goto done;
    }
    while (d.n_tok < SN_TOKENIZER_DEMO_VOCAB - 3 && d.n_merges < SN_TOKENIZER_DEMO_VOCAB * 4) {
        int r = demo_step(&d, tab, mask, err);
        if (r < 0) {
            rc = err->code;
            goto done;
        }
        if (r == 0) {
            rc = sn_err_set(err, SN_E_FORMAT, "demo tokenizer: the built-in text ran out of "
                            "pairs after %zu tokens", d.n_tok);
            goto done;
        }
    }
    root = demo_json(&d);
    /* nodes: root 1, its 9 keys, 3 added tokens x 8, normalizer 1, pre_tokenizer 13
    ** (2 keys, 2 steps, Split 4 + pattern 1, ByteLevel 4), decoder 4, model 10 keys, one per
    ** vocab entry, 3 per merge */
    size_t want = 1 + 9 + 24 + 1 + 13 + 4 + 10 + d.n_tok + 3 * d.n_merges;
    if (!root || json_count(root) != want) {
        rc = sn_err_set(err, SN_E_NOMEM, "demo tokenizer: out of memory building the JSON");
        goto done;
    }
    rc = sn_json_save(path, root, err);
done:
    cJSON_Delete(root);
    sn_free(tab);
    demo_free(&d);
    return rc;
}
