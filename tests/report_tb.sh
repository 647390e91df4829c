#!/usr/bin/env bash
# tests/report_tb.sh MODE: what a Hugging Face / TRL user reads from a run (docs/train.md
# "Logging", docs/run.md "Report"), on the suite's trained fixture (tests/run.cmake, never
# modified: its files are copied). Env (from ctest): SENTINEL_BIN, SENTINEL_SRC, SENTINEL_TMP.
#   tensorboard  `sentinel train` with train.report_to "tensorboard" on the fixture's shards:
#                the event files read by an independent reader match metrics.jsonl scalar for
#                scalar (tests/tb_events.py; exit 77 = skipped without protoc/python3-protobuf),
#                and trainer_state.json is transformers' TrainerState (hf_trainer_state.py)
#   figures      `sentinel report` on a copy of the fixture's run: non-empty PNGs, a
#                report.html whose images resolve, identical bytes from the same input twice
set -euo pipefail
bin=${SENTINEL_BIN:?}
src=${SENTINEL_SRC:?}
fx="${SENTINEL_TMP:-/tmp}/run_pipeline/a"
tmp="${SENTINEL_TMP:-/tmp}/report_tb_$1"
rm -rf "$tmp" && mkdir -p "$tmp"
fail() { echo "FAIL: $*"; exit 1; }
py="${SENTINEL_PYTHON:-/usr/bin/python3}"

case "$1" in
tensorboard)
  cat > "$tmp/r.json" <<'J'
{"train": {"base": "tiny", "max_steps": 6, "micro_batch": 4, "grad_accum": 1, "lr": 1e-3,
           "warmup_steps": 2, "seed": 3, "eval_every": 3, "save_every": 3, "threads": 2,
           "report_to": ["jsonl", "tensorboard"]}}
J
  "$bin" train -r "$tmp/r.json" -i "$fx/shards" -o "$tmp/t" --tokenizer "$fx/tokenizer.json" \
    --progress none > "$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; fail "train"; }
  $py "$src/tests/hf_trainer_state.py" check "$tmp/t/checkpoint-6" || fail "trainer_state.json"
  set +e
  $py "$src/tests/tb_events.py" "$tmp/t/runs" "$tmp/t/metrics.jsonl"
  st=$?
  set -e
  [ $st -eq 0 ] || [ $st -eq 77 ] || fail "event files"
  exit $st
  ;;
figures)
  mkdir -p "$tmp/run/train" "$tmp/run/eval"
  cp "$fx/train/metrics.jsonl" "$tmp/run/train/"
  cp "$fx/eval/report.json" "$fx/eval/items.csv" "$tmp/run/eval/"
  [ ! -f "$fx/summary.txt" ] || cp "$fx/summary.txt" "$tmp/run/"
  # the fixture's own run drew them at its end
  [ -s "$fx/report.html" ] || fail "sentinel run wrote no report.html"
  "$bin" report "$tmp/run" > "$tmp/1.log" 2>&1 || { cat "$tmp/1.log"; fail "report"; }
  for f in figures/training.png figures/detection.png figures/scores.png report.html; do
    [ -s "$tmp/run/$f" ] || fail "missing $f"
    cp "$tmp/run/$f" "$tmp/first.$(basename "$f")"
  done
  "$bin" report "$tmp/run" > "$tmp/2.log" 2>&1 || fail "second report"
  for f in figures/training.png figures/detection.png figures/scores.png report.html; do
    cmp -s "$tmp/run/$f" "$tmp/first.$(basename "$f")" || fail "$f differs between two reports"
  done
  $py - "$tmp/run" <<'PY' || fail "report.html"
import base64, html.parser, os, sys
run = sys.argv[1]
class P(html.parser.HTMLParser):
    srcs = []
    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.srcs.append(dict(attrs)["src"])
p = P()
p.feed(open(os.path.join(run, "report.html"), encoding="utf-8").read())
assert len(p.srcs) == 3, p.srcs
for s, name in zip(p.srcs, ("training", "detection", "scores")):
    if s.startswith("data:image/png;base64,"):
        data = base64.b64decode(s.split(",", 1)[1])
    else:
        data = open(os.path.join(run, s), "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", name
    assert data == open(os.path.join(run, "figures", name + ".png"), "rb").read(), name
print("ok: report.html inlines the 3 PNGs")
PY
  # without matplotlib: the page says what to install, exit 0
  mkdir -p "$tmp/nomp" && printf 'raise ImportError("hidden for the test")\n' > "$tmp/nomp/matplotlib.py"
  PYTHONPATH="$tmp/nomp" "$bin" report "$tmp/run" > "$tmp/3.log" 2>&1 || fail "report without matplotlib"
  grep -q "python3-matplotlib" "$tmp/run/report.html" || fail "no install hint"
  ;;
*) fail "mode $1" ;;
esac
echo ok
