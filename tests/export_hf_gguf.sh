#!/usr/bin/env bash
# tests/export_hf_gguf.sh: Hugging Face's own GGUF parser (npm @huggingface/gguf, pinned) reads
# the detectors `sentinel export` writes (f32, f16, q8_0, --head-as-logit; from the suite's
# trained fixture) and sees the same metadata and tensor list as `sentinel inspect --json`:
# every key name, every scalar value, every array's length and first element, and every
# tensor's name, shape, type and offset. Exit 77 (skip) when node/npm or the registry is missing.
# Env (from ctest): SENTINEL_BIN, SENTINEL_SRC, SENTINEL_BUILD, SENTINEL_TMP.
set -uo pipefail
bin=${SENTINEL_BIN:?}; src=${SENTINEL_SRC:?}; build=${SENTINEL_BUILD:?}
tmp="${SENTINEL_TMP:-/tmp}/export_hf_gguf"
run="${SENTINEL_TMP:-/tmp}/run_pipeline/a"   # the trained_run fixture (tests/run.cmake)
PKG="@huggingface/gguf@0.4.6"
npm_dir="$build/npm-gguf"
rm -rf "$tmp" && mkdir -p "$tmp" || exit 1
command -v node >/dev/null && command -v npm >/dev/null || { echo "SKIP: node/npm not found"; exit 77; }
stamp="$npm_dir/.installed-0.4.6"
if [ ! -f "$stamp" ]; then
    mkdir -p "$npm_dir" && echo '{"name": "sentinel-gguf-ref", "private": true}' > "$npm_dir/package.json"
    if ! timeout 600 npm install --prefix "$npm_dir" --no-audit --no-fund --loglevel=error "$PKG" \
            > "$npm_dir/npm-install.log" 2>&1; then
        timeout 60 npm ping >/dev/null 2>&1 || { echo "SKIP: npm registry unreachable"; exit 77; }
        echo "FAIL: npm install $PKG"; tail -20 "$npm_dir/npm-install.log"; exit 1
    fi
    touch "$stamp"
fi
ckpt=$("${SENTINEL_PYTHON:-/usr/bin/python3}" -c "import json,sys; print(json.load(open(sys.argv[1]))['best_checkpoint'])" \
       "$run/train/final_metrics.json") || { echo "FAIL: no trained fixture in $run"; exit 1; }
fail=0
for v in "f32" "f16" "q8_0" "f32 --head-as-logit"; do
    set -- $v
    out="$tmp/d-$1${2:+-logit}.gguf"
    "$bin" export --base "$run/train/$ckpt" --type "$@" -o "$out" > "$tmp/export.log" 2>&1 \
        || { cat "$tmp/export.log"; echo "FAIL: export $v"; exit 1; }
    node "$src/tests/ref/hf_gguf_dump.mjs" "$npm_dir" "$out" > "$out.hf.json" \
        || { echo "FAIL: @huggingface/gguf could not parse $out"; fail=1; continue; }
    "$bin" inspect "$out" --json > "$out.ours.json" || { echo "FAIL: inspect $out"; exit 1; }
    "${SENTINEL_PYTHON:-/usr/bin/python3}" - "$out.hf.json" "$out.ours.json" "$v" <<'PY' || fail=1
import json, math, re, sys
hf = json.load(open(sys.argv[1])); ours = json.load(open(sys.argv[2])); what = sys.argv[3]
meta = {k: v for k, v in hf["metadata"].items() if k not in ("version", "tensor_count", "kv_count")}
bad = []
if set(meta) != set(ours["keys"]):
    bad.append("key sets differ: only HF %s, only ours %s" % (sorted(set(meta) - set(ours["keys"])),
                                                             sorted(set(ours["keys"]) - set(meta))))
for k in sorted(set(meta) & set(ours["keys"])):
    hv, d = meta[k], ours["keys"][k]
    m = re.match(r"^\[(\w+) x (\d+)\] ?(.*)$", d, re.S)
    if m:   # our description of an array: its type, length and leading elements
        if not isinstance(hv, list) or len(hv) != int(m.group(2)):
            bad.append("%s: length %s vs ours %s" % (k, len(hv) if isinstance(hv, list) else hv, m.group(2)))
            continue
        if hv:
            first = json.loads("[" + m.group(3).split(", ...")[0].rstrip(", .") + "]")[0]
            h0 = float(hv[0]) if isinstance(first, float) else hv[0]
            if isinstance(first, float) and not math.isclose(first, h0, rel_tol=1e-6, abs_tol=1e-9):
                bad.append("%s[0]: %r vs ours %r" % (k, hv[0], first))
            elif not isinstance(first, float) and str(h0) != str(first):
                bad.append("%s[0]: %r vs ours %r" % (k, hv[0], first))
        continue
    if d.endswith('"...'):   # a long string our text view cuts: its start must agree
        ok = isinstance(hv, str) and len(json.loads(d[:-3])) >= 64 and hv.startswith(json.loads(d[:-3]))
        if not ok:
            bad.append("%s: HF %r does not start with ours %r" % (k, hv[:80], d[:80]))
        continue
    ov = json.loads(d)
    if isinstance(ov, bool) or isinstance(ov, str):
        ok = hv == ov
    else:
        ok = math.isclose(float(hv), float(ov), rel_tol=1e-6, abs_tol=0)
    if not ok:
        bad.append("%s: HF %r vs ours %r" % (k, hv, ov))
types = {"F32": 0, "F16": 1, "Q8_0": 8, "BF16": 30}
ot = [(t["name"], t["ne"], types.get(t["type"], -1), t["offset"]) for t in ours["tensors"]]
ht = [(t["name"], t["shape"], t["dtype"], t["offset"]) for t in hf["tensors"]]
if ot != ht:
    diff = [(a, b) for a, b in zip(ht, ot) if a != b][:3]
    bad.append("tensor lists differ (%d vs %d tensors): %s" % (len(ht), len(ot), diff))
if bad:
    print("FAIL (%s):\n  " % what + "\n  ".join(bad)); sys.exit(1)
print("ok (%s): %d keys, %d tensors agree" % (what, len(meta), len(ht)))
PY
done
exit $fail
