/* cli/cmd_export.c: `sentinel export` (docs/design.md §1): a Hugging Face Qwen2 directory and an
** optional PEFT adapter checkpoint -> a qwen2 GGUF detector (export/export.h; the file's keys
** and tensors: docs/formats.md#gguf). Runs in `sentinel` itself: no libtorch. */
#include "cli/cli.h"
#include "export/export.h"
#include "export/write.h"
#include "train/recipe.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
        "usage: sentinel export --base MODEL_DIR [--adapter CKPT_DIR] [-o OUT.gguf]\n"
        "       sentinel export --checkpoint RUN_OR_CKPT_DIR [--last] [-o OUT.gguf] ...\n"
        "                       [--type f32|f16|bf16|q8_0] [--head-as-logit] [--adapter-only]\n"
        "                       [--peft DIR] [--hf DIR] [--max-len N]\n"
        "                       [--system TEXT] [--tokenizer-hash HEX] [--name NAME]\n"
        "\n"
        "Writes a GGUF v3 file that stock llama.cpp loads as 'qwen2' and `sentinel score\n"
        "--detector` runs: the LoRA of --adapter merged into the weights (W + alpha/r * B A),\n"
        "llama.cpp's key and tensor names, the tokenizer (tokens, types, merges, pre-tokenizer\n"
        "qwen2, special ids, chat template), and the reward head as an f32 array under\n"
        "sentinel.score.weight with qwen2.pooling_type = LAST: llama.cpp's last-token embedding\n"
        "dotted with that head is the reward. The file also records what scoring needs to match\n"
        "training: prompt template id, system prompt, max length, history settings, the hash of\n"
        "the tokenizer the shards were built with, the base's name.\n"
        "\n"
        "options:\n"
        "  --base DIR           Hugging Face Qwen2 directory: config.json, model.safetensors (or\n"
        "                       shards + index), tokenizer.json (+ tokenizer_config.json)\n"
        "  --checkpoint DIR     instead of --base/--adapter: a training output directory\n"
        "                       (`sentinel train -o`; its best checkpoint, or with --last its\n"
        "                       last) or one checkpoint; a PEFT adapter goes on the run's\n"
        "                       base, a full model is the base (docs/run.md \"Which checkpoint\")\n"
        "  --last               with --checkpoint RUN_DIR: the last checkpoint, not the best\n"
        "  --adapter DIR        PEFT adapter checkpoint (adapter_config.json +\n"
        "                       adapter_model.safetensors), e.g. written by `sentinel train`;\n"
        "                       its head replaces the base's score.weight\n"
        "  -o, --output FILE    the GGUF to write (atomically)\n"
        "  --type T             f32 (default), f16, bf16 or q8_0 for the matrices (1-D stay\n"
        "                       f32; q8_0: llama.cpp's 8-bit blocks, -o only). The detector\n"
        "                       keeps them in this type in memory: q8_0 takes ~27%% of f32's\n"
        "                       memory, bf16 50%%; on CPUs with AVX512-BF16 both also score\n"
        "                       faster than f32 (docs/export.md \"Weight formats and kernels\")\n"
        "  --head-as-logit      also write output.weight with row 0 = head, other rows 0, so\n"
        "                       llama.cpp's logit 0 of the last token is the reward\n"
        "  --adapter-only       -o gets a LoRA adapter GGUF in llama.cpp's convention instead\n"
        "                       (needs --adapter): apply it to a base GGUF exported with\n"
        "                       --head-as-logit from the same --base; the head rides along as\n"
        "                       a rank-1 pair on output.weight (rsLoRA folded into alpha)\n"
        "  --peft DIR           also write the PEFT adapter directory (needs --adapter):\n"
        "                       adapter_config.json + adapter_model.safetensors, validated\n"
        "                       against --base, head under base_model.model.score.weight\n"
        "  --hf DIR             also write a merged Hugging Face directory:\n"
        "                       Qwen2ForSequenceClassification, num_labels 1, pad_token_id,\n"
        "                       score.weight, the tokenizer files (--type sets its dtype)\n"
        "  --max-len N          tokens per scored sequence (default 1024, as `sentinel build`)\n"
        "  --history-sentences N, --history-chars N\n"
        "                       the tuple builder's history settings (default 2 and 300)\n"
        "  --system TEXT        system prompt of the template (default: the built-in one)\n"
        "  --tokenizer-hash HEX the tokenizer hash the shards record (default: SHA-256 of the\n"
        "                       base's tokenizer.json, which is what `sentinel build` records)\n"
        "  --name NAME          general.name (default: the base directory's name)\n"
        "  --progress MODE      auto (default: a bar on a terminal, plain lines otherwise),\n"
        "                       bar, plain or none: layers converted, rate and ETA (one\n"
        "                       display each for -o, --peft and --hf)\n"
        "  -h, --help           this help\n");
    fprintf(f,
        "\n"
        "At least one of -o, --peft and --hf is needed.\n"
        "Exit status: 0 ok, 1 failure, 2 usage error.\n");
}

static int parse_u32(const char *s, uint32_t *out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < 1 || v > (1L << 24))
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* The progress display of the GGUF conversion (common.h sn_progress, as train's), created at
** the first layer, when the number of layers is known. */
struct export_bar {
    struct sn_progress_params pp;
    struct sn_progress *bar;
};

static void on_layer(void *user, uint64_t done, uint64_t total)
{
    struct export_bar *b = user;
    if (!b->bar) {
        struct sn_err e = {0};
        b->pp.total = total;
        b->pp.initial = done;
        if (sn_progress_create(&b->pp, &b->bar, &e))
            return;
    }
    sn_progress_update(b->bar, done, NULL);
}

/* One output (GGUF, PEFT directory, merged HF directory) written with its own progress display
** labelled `label`: every writer reports layers converted (export/write.h). */
static int write_one(struct sn_export_params *p, int progress_mode, const char *label,
                     int (*write)(const struct sn_export_params *, const char *,
                                  struct sn_err *),
                     const char *out, struct sn_err *err)
{
    struct export_bar eb = {sn_progress_default_params(), NULL};
    eb.pp.label = label;
    eb.pp.unit = "layers";
    eb.pp.force_mode = progress_mode;
    p->progress = on_layer;
    p->progress_user = &eb;
    int rc = write(p, out, err);
    if (eb.bar)
        sn_progress_finish(eb.bar, rc ? "stopped" : "written");
    p->progress = NULL;
    p->progress_user = NULL;
    return rc;
}

int sn_cmd_export(int argc, char **argv)
{
    static const struct option opts[] = {
        {"base", required_argument, NULL, 'b'},        {"adapter", required_argument, NULL, 'a'},
        {"output", required_argument, NULL, 'o'},      {"type", required_argument, NULL, 't'},
        {"head-as-logit", no_argument, NULL, 'L'},     {"max-len", required_argument, NULL, 'm'},
        {"system", required_argument, NULL, 's'},      {"name", required_argument, NULL, 'n'},
        {"tokenizer-hash", required_argument, NULL, 'H'},
        {"history-sentences", required_argument, NULL, 'S'},
        {"history-chars", required_argument, NULL, 'C'},
        {"adapter-only", no_argument, NULL, 'A'},      {"peft", required_argument, NULL, 'P'},
        {"hf", required_argument, NULL, 'F'},          {"help", no_argument, NULL, 'h'},
        {"progress", required_argument, NULL, 'G'},
        {"checkpoint", required_argument, NULL, 'K'},  {"last", no_argument, NULL, 'Z'},
        {NULL, 0, NULL, 0},
    };
    struct sn_export_params p = sn_export_default_params();
    const char *out = NULL, *peft = NULL, *hf = NULL, *ckpt_path = NULL;
    bool adapter_only = false, last = false;
    static struct sn_ckpt_choice ck; /* --checkpoint: p's base_dir and adapter_dir point here */
    int progress_mode = 0;
    optind = 1;
    opterr = 0;
    for (;;) {
        int c = getopt_long(argc, argv, "ho:", opts, NULL);
        if (c == -1)
            break;
        switch (c) {
        case 'b': p.base_dir = optarg; break;
        case 'a': p.adapter_dir = optarg; break;
        case 'o': out = optarg; break;
        case 'L': p.head_as_logit = true; break;
        case 's': p.system = optarg; break;
        case 'n': p.name = optarg; break;
        case 'H': p.tokenizer_hash = optarg; break;
        case 't':
            if (!strcmp(optarg, "f32"))
                p.type = SN_GGML_F32;
            else if (!strcmp(optarg, "f16"))
                p.type = SN_GGML_F16;
            else if (!strcmp(optarg, "bf16"))
                p.type = SN_GGML_BF16;
            else if (!strcmp(optarg, "q8_0"))
                p.type = SN_GGML_Q8_0;
            else
                return sn_cli_usage_error("export", "--type must be f32, f16, bf16 or q8_0 (got "
                                          "'%s')", optarg);
            break;
        case 'm':
            if (parse_u32(optarg, &p.max_len))
                return sn_cli_usage_error("export", "--max-len must be a positive integer");
            break;
        case 'S':
            if (parse_u32(optarg, &p.history_sentences))
                return sn_cli_usage_error("export", "--history-sentences must be a positive "
                                          "integer");
            break;
        case 'C':
            if (parse_u32(optarg, &p.history_chars))
                return sn_cli_usage_error("export", "--history-chars must be a positive "
                                          "integer");
            break;
        case 'A': adapter_only = true; break;
        case 'P': peft = optarg; break;
        case 'F': hf = optarg; break;
        case 'G':
            if (sn_cli_progress_mode("export", optarg, &progress_mode))
                return SN_EXIT_USAGE;
            break;
        case 'K': ckpt_path = optarg; break;
        case 'Z': last = true; break;
        case 'h': usage(stdout); return SN_EXIT_OK;
        default:
            return sn_cli_bad_option("export", argv[optind - 1], opts);
        }
    }
    if (optind < argc)
        return sn_cli_usage_error("export", "unexpected argument '%s'", argv[optind]);
    if (ckpt_path && (p.base_dir || p.adapter_dir))
        return sn_cli_usage_error("export", "--checkpoint decides --base and --adapter from its "
                                  "files: give one or the other");
    if (last && !ckpt_path)
        return sn_cli_usage_error("export", "--last needs --checkpoint RUN_DIR");
    if (ckpt_path) { /* the one place that choice is made: train/recipe.h */
        struct sn_err cerr = {0};
        if (sn_train_checkpoint_pick(ckpt_path, last ? SN_CKPT_LAST : SN_CKPT_BEST, &ck, &cerr))
            return sn_cli_fail("export", &cerr);
        p.base_dir = ck.base;
        p.adapter_dir = ck.kind == SN_CKPT_ADAPTER ? ck.dir : NULL;
        fprintf(stderr, "sentinel export: %s checkpoint %s (%s)\n", ck.best ? "best" : "last",
                ck.dir, ck.kind == SN_CKPT_ADAPTER ? "PEFT adapter" : "full model");
    }
    if (!p.base_dir)
        return sn_cli_usage_error("export", "--base MODEL_DIR (or --checkpoint) is required");
    if (!out && !peft && !hf)
        return sn_cli_usage_error("export", "nothing to write: give -o OUT.gguf, --peft DIR "
                                  "or --hf DIR");
    if (adapter_only && !out)
        return sn_cli_usage_error("export", "--adapter-only needs -o OUT.gguf");
    if ((adapter_only || peft) && !p.adapter_dir)
        return sn_cli_usage_error("export", "%s needs --adapter CKPT_DIR",
                                  adapter_only ? "--adapter-only" : "--peft");
    struct sn_err err = {0};
    if (out) {
        int rc = write_one(&p, progress_mode, "export", adapter_only ? sn_export_adapter_gguf
                           : sn_export_gguf, out, &err);
        if (rc)
            return sn_cli_fail("export", &err);
        fprintf(stderr, "sentinel export: wrote %s%s\n", out,
                adapter_only ? " (LoRA adapter)" : "");
    }
    if (peft) {
        if (write_one(&p, progress_mode, "export --peft", sn_export_peft, peft, &err))
            return sn_cli_fail("export", &err);
        fprintf(stderr, "sentinel export: wrote the PEFT adapter directory %s\n", peft);
    }
    if (hf) {
        if (write_one(&p, progress_mode, "export --hf", sn_export_hf, hf, &err))
            return sn_cli_fail("export", &err);
        fprintf(stderr, "sentinel export: wrote the merged Hugging Face directory %s\n", hf);
    }
    return SN_EXIT_OK;
}
