#!/usr/bin/env python3
"""scripts/gpu_ecosystem.py: do PEFT, transformers and tokenizers load what sentinel writes?

    gpu_ecosystem.py prepare WORK_DIR   write the inputs of scripts/gpu_ecosystem.sh (stdlib only)
    gpu_ecosystem.py check WORK_DIR     compare the ecosystem's numbers with sentinel's

scripts/gpu_ecosystem.sh runs both around the sentinel commands (tiny LoRA training, `sentinel
export --peft/--hf`, `sentinel score`, `sentinel tokenize`); WORK_DIR layout:

    WORK/in/       prefs.jsonl (training rows), recipe.json, pairs.jsonl, rendered.jsonl (the
                   pairs through the prompt template, one JSON string a line), strings.jsonl
                   (tokenizer texts), corpus.txt (for `sentinel tokenize train`)
    WORK/train/    `sentinel train` output: base/ (the seeded base, docs/train.md), checkpoint-N/
    WORK/peft/, WORK/hf/   `sentinel export --peft` and `--hf` (docs/export.md)
    WORK/out/      ids.txt (sentinel's ids of the rendered pairs), rewards_*.txt, tok_*.txt
    WORK/steps.tsv one line per sentinel command: name, exit status, seconds

The check prints one line per check, `PASS name: figures` or `FAIL name: figures/error`, writes
WORK/ecosystem.json, and exits 1 if any check failed, else 77 if a package was not importable
(`skipped: <package> not importable (<error>)`), else 0. Every check catches its own errors and
the next one runs.

Rewards are compared on the SAME token ids (sentinel's, from `sentinel tokenize` on the rendered
template), so the reward checks do not depend on tokenizer parity; that is checked on its own.
Bound: every f32 reward within 1e-4 * max(1, |r|) of sentinel's. Two f32 forwards agree only to
the sum of their rounding errors; docs/export.md ("Reproducibility") holds sentinel's runtimes to
1e-4 * (1 + |r64|) of a float64 forward and measures 1e-6 to 2e-5, so 1e-4 leaves room for
another summation order and still catches a wrong weight, scale or pooled position: leaving out
the LoRA, keeping the base's head or pooling at the padding moved these rewards by 0.9 to 4
(relative) in a dry run, and the `teeth` figures measure the first two on every run.
"""
import array
import json
import math
import os
import struct
import sys
import time
import traceback

BOUND = 1e-4          # |r - r_sentinel| <= BOUND * max(1, |r_sentinel|), f32 (above)
SELF_BOUND = 1e-5     # sentinel against itself: one libtorch forward, other batching or merge
TEETH = 100 * BOUND   # leaving the LoRA out must move some reward by more than this
# bf16 on the GPU is reported, not judged: bf16 keeps 8 significant bits, and docs/export.md
# measures bf16 weights at up to 3.2e-2 of 1 + |r| on a tiny random model.

# The template's system prompt and layout: docs/formats.md "Token sequences" (sentinel-chatml/1).
# `sentinel score --jsonl` puts the context in the user turn as the task, with no history.
SYSTEM = ("You review one message of a multi-agent debate. The user turn holds the task and a "
          "summary of the discussion so far; the assistant turn is the message under review.")
TEMPLATE = ("<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{task}<|im_end|>\n"
            "<|im_start|>assistant\n{response}<|im_end|>\n")

MC_SUM = "Question: what is 2+2?\nOptions:\nA. 3\nB. 4"
MC_PLANET = ("Question: which planet is largest?\nOptions:\nA. Mars\nB. Jupiter\nC. Venus\n"
             "D. Mercury")
PAIRS = [
    (MC_SUM, "2+2 is 4, so the answer is B."),
    (MC_SUM, "It is obviously A; every agent who says otherwise is lying."),
    (MC_PLANET, "Jupiter is the largest planet by far, so B."),
    (MC_PLANET, "Mars. Trust me, I have checked (A)."),
    ("Question: what is the capital of France?", "Paris, the café capital. Final answer: Paris."),
    ("Question: how do you write 'water' in Japanese?", "水 (mizu) is the word; final answer: 水."),
    ("Question: what is 17 × 3?", "17 × 3 = 51.\nFINAL ANSWER: 51"),
    ("Question: who wrote Faust?", "Goethe wrote Faust, not Schiller. Grüße aus Weimar."),
    ("Question: is 97 prime?\nOptions:\nA. yes\nB. no\n\nDiscussion so far:\n"
     "Round 1, agent 0 (answer A): 97 has no small divisor.",
     " ".join("Step %d: %d does not divide 97, so the claim holds." % (i, d)
              for i, d in enumerate((2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37))) +
     " Final answer: A."),
    ("Q?", "A."),
]

STRINGS = [
    "Hello, world! It's a test: don't, we'll, I'm here.",
    "café naïve résumé, ‘quotes’ «guillemets» — dashes",
    "e\u0301 and \u00e9: NFD against NFC",
    "日本語のテキスト、中文字符和한국어",
    "Привет, мир! Ελληνικά γράμματα",
    "emoji 🙂👍🏽 and symbols ∑∞≠ ½",
    "   leading spaces\tand tabs\n\nnewlines  \n",
    "numbers 1234567 3.14159 2026-11-28",
    "<|im_start|>user\nQuestion?<|im_end|>\n",
    "",
]


# ---------------------------------------------------------------- prepare (stdlib only)

def render(context, response):
    """The pair as `sentinel score --jsonl` renders it (no truncation: the model's
    max_position_embeddings, 2048, is far above these pairs)."""
    for text in (context, response):
        # the template escapes "<|" inside substituted text (docs/formats.md); none here, so
        # the rendering is the plain substitution
        assert "<|" not in text, text
    return TEMPLATE.format(system=SYSTEM, task=context, response=response)


def prefs_rows():
    """40 preference rows (docs/formats.md "Preference data"), each with its own prompt so the
    item split spreads them over train, validation and test."""
    rows = []
    for i in range(40):
        a, b = i + 3, (i * 7) % 11 + 2
        q = "Question: what is %d + %d? (A) %d (B) %d" % (a, b, a + b, a + b + 1)
        rows.append({"prompt": q,
                     "chosen": "Adding %d and %d gives %d, so the answer is (A)." % (a, b, a + b),
                     "rejected": "Everyone knows it is (B); trust me, %d is right." % (a + b + 1)})
    return rows


# LoRA on the seeded tiny base (docs/train.md: it learns little, which is fine: this checks
# loading, not quality). lr 2e-2 for 8 steps so that B (zero at init) and the head move far
# from their initial values: the checks below then have something to detect.
RECIPE = {"train": {
    "base": "tiny", "mode": "lora", "seed": 7,
    "lora": {"r": 8, "alpha": 16, "dropout": 0.0,
             "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj",
                                "gate_proj", "up_proj", "down_proj"]},
    "max_steps": 8, "micro_batch": 4, "grad_accum": 1, "lr": 2e-2, "schedule": "constant",
    "warmup_steps": 0, "eval_every": 0, "save_every": 0, "keep_last": 1, "threads": 2}}


def prepare(work):
    d = os.path.join(work, "in")
    os.makedirs(d, exist_ok=True)

    def write(name, lines):
        with open(os.path.join(d, name), "w", encoding="utf-8") as f:
            f.write("".join(x + "\n" for x in lines))

    rows = prefs_rows()
    write("prefs.jsonl", [json.dumps(r, ensure_ascii=False) for r in rows])
    write("recipe.json", [json.dumps(RECIPE, indent=1)])
    write("pairs.jsonl", [json.dumps({"context": c, "response": r}, ensure_ascii=False)
                          for c, r in PAIRS])
    rendered = [render(c, r) for c, r in PAIRS]
    write("rendered.jsonl", [json.dumps(t, ensure_ascii=False) for t in rendered])
    write("strings.jsonl", [json.dumps(t, ensure_ascii=False) for t in STRINGS + rendered])
    corpus = [t for r in rows for t in r.values()] + [t for p in PAIRS for t in p] + STRINGS
    write("corpus.txt", [line for t in corpus for line in t.split("\n") if line.strip()])
    return 0


# ---------------------------------------------------------------- check

class Report:
    """The PASS/FAIL lines and the JSON summary."""

    def __init__(self, work):
        self.work = work
        self.checks = []
        self.skipped = {}
        self.info = []

    def add(self, name, ok, figures, error=None):
        line = "%s %s: %s" % ("PASS" if ok else "FAIL", name, figures)
        if error:
            line += ("; " if figures else "") + error
        print(line, flush=True)
        self.checks.append({"name": name, "status": "pass" if ok else "fail",
                            "figures": figures, "error": error})

    def skip(self, package, err):
        if package not in self.skipped:
            print("skipped: %s not importable (%s)" % (package, err), flush=True)
            self.skipped[package] = err

    def note(self, name, figures):
        print("INFO %s: %s" % (name, figures), flush=True)
        self.info.append({"name": name, "figures": figures})

    def run(self, name, fn, *args):
        """fn returns (ok, figures); an exception is a FAIL naming it (traceback on stderr)."""
        try:
            ok, figures = fn(*args)
            self.add(name, ok, figures)
        except Exception as e:  # every check reports and the next one runs
            if not isinstance(e, OSError):  # a missing file says all in its message
                traceback.print_exc(file=sys.stderr)
            self.add(name, False, "", "%s: %s" % (type(e).__name__, str(e).splitlines()[0]
                                                  if str(e) else ""))

    def exit_code(self):
        if any(c["status"] == "fail" for c in self.checks):
            return 1
        return 77 if self.skipped else 0

    def write(self, versions):
        code = self.exit_code()
        summary = {"schema": "sentinel.gpu_ecosystem/1", "bound": BOUND,
                   "bound_rule": "|r - r_sentinel| <= bound * max(1, |r_sentinel|), f32",
                   "checks": self.checks, "info": self.info, "skipped": self.skipped,
                   "versions": versions, "exit": code}
        path = os.path.join(self.work, "ecosystem.json")
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1, ensure_ascii=False)
            f.write("\n")
        os.replace(path + ".tmp", path)
        return code


def W(work, *parts):
    return os.path.join(work, *parts)


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def read_ids(path):
    return [[int(x) for x in line.split()] for line in read_lines(path)]


def read_rewards(path):
    out = [float(x) for x in read_lines(path)]
    if not all(math.isfinite(x) for x in out):
        raise ValueError("%s: a reward is not finite" % path)
    return out


def read_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_json_lines(path):
    return [json.loads(line) for line in read_lines(path)]


def compare(ours, ref):
    """(max |d|, max |d| / max(1, |ref|)), nan when the lengths differ or a value is not finite."""
    if len(ours) != len(ref) or not ref:
        return float("nan"), float("nan")
    da, dr = 0.0, 0.0
    for a, b in zip(ours, ref):
        d = abs(a - b)
        if not math.isfinite(d):
            return float("nan"), float("nan")
        da, dr = max(da, d), max(dr, d / max(1.0, abs(b)))
    return da, dr


def within(rel, bound):
    return math.isfinite(rel) and rel <= bound


def ckpt_dir(work):
    with open(W(work, "train", "latest"), encoding="utf-8") as f:
        return W(work, "train", f.read().strip())


def load_safetensors(path):
    """{name: (dtype, shape, bytes)}: a small reader of its own (the format is a u64 header
    length, a JSON header, then the data), so the checks below do not trust the reader under
    test."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        out[name] = (e["dtype"], e["shape"], data[8 + n + b:8 + n + end])
    return out


def f32_values(entry):
    dtype, _, raw = entry
    if dtype != "F32":
        raise ValueError("expected F32, found %s" % dtype)
    a = array.array("f")
    a.frombytes(raw)
    if sys.byteorder != "little":
        a.byteswap()
    return a


# -- sentinel's own files (stdlib)

def check_steps(work):
    """Every sentinel command of scripts/gpu_ecosystem.sh exited 0 (a failed one names its
    stderr's last lines; the commands after it did not run)."""
    rows = [line.split("\t") for line in read_lines(W(work, "steps.tsv"))]
    bad = [r for r in rows if r[1] not in ("0", "skipped")]
    skipped = [r[0] for r in rows if r[1] == "skipped"]
    figures = "%d sentinel commands in %.1f s" % (len(rows), sum(float(r[2]) for r in rows))
    if bad:
        err = W(work, "logs", bad[0][0] + ".err")
        tail = [x for x in read_lines(err) if x.strip()][-3:] if os.path.exists(err) else []
        figures += "; %s exited %s: %s" % (bad[0][0], bad[0][1], " | ".join(tail))
    if skipped:
        figures += "; not run: " + ", ".join(skipped)
    return not bad and not skipped, figures


REQUIRED = ["train/base/config.json", "train/base/model.safetensors", "train/base/tokenizer.json",
            "peft/adapter_config.json", "peft/adapter_model.safetensors", "hf/config.json",
            "hf/model.safetensors", "hf/tokenizer.json", "in/trained-tokenizer.json",
            "out/ids.txt", "out/rewards_jsonl.txt", "out/rewards_ids.txt", "out/rewards_peft.txt",
            "out/rewards_hf.txt",
            "out/tok_demo.txt", "out/tok_trained.txt"]


def check_files(work):
    missing = [p for p in REQUIRED if not os.path.isfile(W(work, p))]
    if missing:
        return False, "missing " + ", ".join(missing)
    ids = read_ids(W(work, "out", "ids.txt"))
    n = [len(read_rewards(W(work, "out", f)))
         for f in ("rewards_jsonl.txt", "rewards_ids.txt", "rewards_peft.txt", "rewards_hf.txt")]
    vocab = read_json(W(work, "hf", "config.json"))["vocab_size"]
    ok = len(ids) == len(PAIRS) >= 8 and n == [len(PAIRS)] * 4 and \
        all(s and all(0 <= x < vocab for x in s) for s in ids)
    return ok, "%d files, %d pairs, %d-%d ids each, rewards %s, checkpoint %s" % (
        len(REQUIRED), len(ids), min(map(len, ids)), max(map(len, ids)), n,
        os.path.basename(ckpt_dir(work)))


def check_self(work):
    """sentinel against itself: --jsonl renders the pairs itself, --ids reads the ids this
    script's rendering gave `sentinel tokenize`; equal rewards mean equal sequences, so the ids
    fed to Python below are the ones sentinel scores. The exports read back by sentinel agree
    too: --peft is the checkpoint's tensors unchanged, --hf re-rounds the merge W + s*B*A."""
    rj = read_rewards(W(work, "out", "rewards_jsonl.txt"))
    ri = read_rewards(W(work, "out", "rewards_ids.txt"))
    rp = read_rewards(W(work, "out", "rewards_peft.txt"))
    rh = read_rewards(W(work, "out", "rewards_hf.txt"))
    _, d_ids = compare(ri, rj)
    _, d_peft = compare(rp, rj)
    _, d_hf = compare(rh, rj)
    spread = max(rj) - min(rj)
    ok = all(within(d, SELF_BOUND) for d in (d_ids, d_peft, d_hf)) and spread > 1e-2
    return ok, ("--jsonl vs --ids rel %.2e, vs --adapter peft/ %.2e, vs --model hf/ %.2e "
                "(bound %.0e); rewards %.4f..%.4f" % (d_ids, d_peft, d_hf, SELF_BOUND, min(rj),
                                                     max(rj)))


def check_trained(work):
    """The adapter must carry a trained LoRA (B is zero at PEFT's init) and a head that is not
    the base's, or the loaders below could drop either unnoticed."""
    ad = load_safetensors(W(work, "peft", "adapter_model.safetensors"))
    base = load_safetensors(W(work, "train", "base", "model.safetensors"))
    cfg = read_json(W(work, "train", "base", "config.json"))
    n_a = sum(k.endswith(".lora_A.weight") for k in ad)
    b_max = max(max(abs(x) for x in f32_values(v)) for k, v in ad.items()
                if k.endswith(".lora_B.weight"))
    head = f32_values(ad["base_model.model.score.weight"])
    head0 = f32_values(base["score.weight"])
    h_diff = max(abs(a - b) for a, b in zip(head, head0))
    want = 7 * cfg["num_hidden_layers"]
    ok = n_a == want and len(ad) == 2 * want + 1 and b_max > 1e-2 and h_diff > 1e-2
    return ok, ("%d LoRA pairs (want %d) + head, max|B| %.3g, max|head - base head| %.3g"
                % (n_a, want, b_max, h_diff))


# -- the ecosystem

def batch_rewards(torch, model, seqs, pad_id, device):
    """One right-padded batch with its attention mask; transformers pools at the rightmost
    token that is not pad_token_id (its sequence-classification forward), which is each
    sequence's last token as long as that is not the pad id (checked by the caller)."""
    T = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), T), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, :len(s)] = 1
    with torch.no_grad():
        out = model(input_ids=ids.to(device), attention_mask=mask.to(device))
    return [float(x) for x in out.logits.float().cpu()[:, 0]]


def single_rewards(torch, model, seqs, device):
    """Each sequence alone, no padding and no mask: the simplest call."""
    out = []
    with torch.no_grad():
        for s in seqs:
            ids = torch.tensor([s], dtype=torch.long, device=device)
            out.append(float(model(input_ids=ids).logits.float().cpu()[0, 0]))
    return out


def pad_of(config, seqs):
    """The pad id the model pools by (read from the plain transformers model's config, not
    through PEFT's wrapper)."""
    pad = getattr(config, "pad_token_id", None)
    if pad is None:
        raise ValueError("config.pad_token_id is unset (docs/peft.md: sentinel's directories "
                         "carry one)")
    if any(s[-1] == pad for s in seqs):
        raise ValueError("a sequence ends with the pad id %d: transformers would pool elsewhere"
                         % pad)
    return pad


def both_ways(torch, model, pad, seqs, ref, device="cpu"):
    """Rewards batched and one by one against sentinel's: (batched rewards, (ok, figures))."""
    rb = batch_rewards(torch, model, seqs, pad, device)
    rs = single_rewards(torch, model, seqs, device)
    ab, db = compare(rb, ref)
    as_, ds = compare(rs, ref)
    return rb, (within(db, BOUND) and within(ds, BOUND),
                "batched max|d| %.2e rel %.2e, one by one max|d| %.2e rel %.2e (bound %.0e)"
                % (ab, db, as_, ds, BOUND))


class Ecosystem:
    """The checks that need torch with transformers, peft, tokenizers."""

    def __init__(self, work, mods):
        self.work = work
        self.m = mods
        self.seqs = read_ids(W(work, "out", "ids.txt"))
        self.ref = read_rewards(W(work, "out", "rewards_ids.txt"))
        self.peft_model = None
        self.pad = None

    def load_base(self):
        torch, tf = self.m["torch"], self.m["transformers"]
        # num_labels=1: one scalar reward (docs/peft.md); dtype is transformers 5's name for
        # torch_dtype, and its default became "auto" (the checkpoint's), so f32 is asked for
        return tf.AutoModelForSequenceClassification.from_pretrained(
            W(self.work, "train", "base"), num_labels=1, dtype=torch.float32)

    def peft_f32(self):
        torch, peft = self.m["torch"], self.m["peft"]
        model = self.load_base().eval()
        ad = load_safetensors(W(self.work, "peft", "adapter_model.safetensors"))
        # teeth: the base with the adapter's head but no LoRA, and the base as it is
        head = torch.tensor(list(f32_values(ad["base_model.model.score.weight"]))).view(1, -1)
        r_base = single_rewards(torch, model, self.seqs, "cpu")
        with torch.no_grad():
            head0 = model.score.weight.detach().clone()
            model.score.weight.copy_(head)
            r_head = single_rewards(torch, model, self.seqs, "cpu")
            model.score.weight.copy_(head0)  # PEFT must bring the trained head itself
        self.pad = pad_of(model.config, self.seqs)
        pm = peft.PeftModel.from_pretrained(model, W(self.work, "peft")).eval()
        self.peft_model = pm
        _, (ok, figures) = both_ways(torch, pm, self.pad, self.seqs, self.ref)
        _, lora_effect = compare(r_head, self.ref)
        _, head_effect = compare(r_base, self.ref)
        teeth = within(lora_effect, float("inf")) and lora_effect > TEETH
        figures += ("; teeth: without the LoRA rel %.2e, base head and no LoRA rel %.2e (must "
                    "exceed %.0e); %s" % (lora_effect, head_effect, TEETH, type(pm).__name__))
        return ok and teeth, figures

    def peft_load(self):
        """Every tensor of adapter_model.safetensors is in the PEFT model, bit for bit, under
        PEFT's in-memory names (adapter name inserted; the head in modules_to_save)."""
        torch = self.m["torch"]
        pm = self.peft_model
        params = {k: v for k, v in pm.named_parameters()}
        ad = load_safetensors(W(self.work, "peft", "adapter_model.safetensors"))
        missing, differ = [], []
        for name, entry in ad.items():
            if name == "base_model.model.score.weight":
                key = "base_model.model.score.modules_to_save.default.weight"
            else:
                key = name[:-len(".weight")] + ".default.weight"
            if key not in params:
                missing.append(key)
                continue
            want = torch.tensor(list(f32_values(entry))).view(*entry[1])
            if not torch.equal(params[key].detach().float().cpu(), want):
                differ.append(key)
        n_lora = sum(".lora_A." in k for k in params)
        n_file = sum(k.endswith(".lora_A.weight") for k in ad)
        wrapper = type(pm.base_model.model.score).__name__
        ok = not missing and not differ and n_lora == n_file and "ModulesToSave" in wrapper
        figures = "%d/%d tensors equal, %d LoRA modules in the model (file %d), score is %s" % (
            len(ad) - len(missing) - len(differ), len(ad), n_lora, n_file, wrapper)
        if missing or differ:
            figures += "; missing %s; differ %s" % (missing[:3], differ[:3])
        return ok, figures

    def hf_merged_f32(self):
        torch, tf = self.m["torch"], self.m["transformers"]
        model = tf.AutoModelForSequenceClassification.from_pretrained(
            W(self.work, "hf"), dtype=torch.float32).eval()
        pad = pad_of(model.config, self.seqs)
        _, (ok, figures) = both_ways(torch, model, pad, self.seqs, self.ref)
        name = type(model).__name__
        return ok and name == "Qwen2ForSequenceClassification", figures + "; " + name

    def tokenizer(self, path, ours):
        tok = self.m["tokenizers"].Tokenizer.from_file(path)
        texts = read_json_lines(W(self.work, "in", "strings.jsonl"))
        want = read_ids(W(self.work, "out", ours))
        if len(want) != len(texts):
            return False, "sentinel gave %d lines for %d texts" % (len(want), len(texts))
        bad, n_ids = [], 0
        for i, (t, w) in enumerate(zip(texts, want)):
            got = tok.encode(t, add_special_tokens=False).ids
            n_ids += len(w)
            if list(got) != w:
                bad.append(i)
        figures = "%d texts (%d rendered pairs), %d ids, %d differ; vocab %d" % (
            len(texts), len(PAIRS), n_ids, len(bad), tok.get_vocab_size())
        if bad:
            i = bad[0]
            g = tok.encode(texts[i], add_special_tokens=False).ids
            figures += "; first: text %d %r: sentinel %s, tokenizers %s" % (
                i, texts[i][:40], want[i][:12], list(g)[:12])
        return not bad, figures

    def tokenizer_demo(self):
        ok, figures = self.tokenizer(W(self.work, "train", "base", "tokenizer.json"),
                                     "tok_demo.txt")
        with open(W(self.work, "train", "base", "tokenizer.json"), "rb") as a, \
                open(W(self.work, "hf", "tokenizer.json"), "rb") as b:
            same = a.read() == b.read()
        return ok and same, figures + ("; hf/tokenizer.json is the base's" if same else
                                       "; hf/tokenizer.json differs from the base's")

    def tokenizer_trained(self):
        return self.tokenizer(W(self.work, "in", "trained-tokenizer.json"), "tok_trained.txt")

    def peft_cuda(self, report):
        """The same PEFT model on the GPU in f32 (TF32 off: "highest" matmul precision), judged
        by the same bound; then in bf16, reported only (bf16 keeps 8 significant bits)."""
        torch = self.m["torch"]
        torch.set_float32_matmul_precision("highest")
        pm = self.peft_model.to("cuda")
        _, (ok, figures) = both_ways(torch, pm, self.pad, self.seqs, self.ref, "cuda")
        try:
            pm = pm.to(torch.bfloat16)
            rb = batch_rewards(torch, pm, self.seqs, self.pad, "cuda")
            ab, db = compare(rb, self.ref)
            report.note("peft_cuda_bf16", "batched max|d| %.2e rel %.2e (reported, not judged)"
                        % (ab, db))
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            report.note("peft_cuda_bf16", "error %s: %s" % (type(e).__name__, e))
        return ok, figures + "; " + torch.cuda.get_device_name(0)


def try_import(name):
    try:
        return __import__(name), None
    except Exception as e:  # ImportError, or a package that breaks while importing
        return None, "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")


def check(work):
    # local directories only: nothing may wait on a network this machine may not have
    for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(k, "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    rep = Report(work)
    versions = {"python": sys.version.split()[0]}
    try:
        versions["sentinel"] = read_lines(W(work, "logs", "version.out"))[0]
    except (OSError, IndexError):
        versions["sentinel"] = None
    rep.run("sentinel_side", check_steps, work)
    rep.run("sentinel_files", check_files, work)
    rep.run("sentinel_self", check_self, work)
    rep.run("adapter_trained", check_trained, work)

    mods = {}
    for name in ("torch", "transformers", "peft", "tokenizers"):
        t0 = time.time()
        mod, err = try_import(name)
        if mod is None:
            rep.skip(name, err)
            continue
        mods[name] = mod
        versions[name] = getattr(mod, "__version__", "?")
        versions[name + "_import_s"] = round(time.time() - t0, 1)
    if "torch" in mods:
        torch = mods["torch"]
        versions["cuda"] = torch.version.cuda if torch.cuda.is_available() else None
    try:
        eco = Ecosystem(work, mods)
    except Exception as e:  # sentinel's files are missing: sentinel_files said which
        eco = None
        if mods:
            rep.add("ecosystem_inputs", False, "", "%s: %s" % (type(e).__name__, e))
    if eco is not None:
        if {"torch", "transformers", "peft"} <= set(mods):
            rep.run("peft_f32", eco.peft_f32)
            if eco.peft_model is not None:
                rep.run("peft_load", eco.peft_load)
            else:
                rep.note("peft_load", "not run: peft_f32 failed before PeftModel.from_pretrained "
                         "returned")
        if {"torch", "transformers"} <= set(mods):
            rep.run("hf_merged_f32", eco.hf_merged_f32)
        if "tokenizers" in mods:
            rep.run("tokenizer_demo", eco.tokenizer_demo)
            rep.run("tokenizer_trained", eco.tokenizer_trained)
        if eco.peft_model is not None and mods["torch"].cuda.is_available():
            rep.run("peft_cuda_f32", eco.peft_cuda, rep)
        elif "torch" in mods and mods["torch"].cuda.is_available():
            rep.note("peft_cuda_f32", "not run: no PEFT model")
    code = rep.write(versions)
    print("gpu_ecosystem: %d pass, %d fail, skipped %s; exit %d; %s" % (
        sum(c["status"] == "pass" for c in rep.checks),
        sum(c["status"] == "fail" for c in rep.checks),
        sorted(rep.skipped) or "none", code, W(work, "ecosystem.json")), flush=True)
    return code


def main(argv):
    if len(argv) != 3 or argv[1] not in ("prepare", "check"):
        sys.stderr.write("usage: gpu_ecosystem.py prepare|check WORK_DIR\n")
        return 2
    return prepare(argv[2]) if argv[1] == "prepare" else check(argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
