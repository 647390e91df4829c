#!/bin/bash
# tests/reliability_cli.sh: the command line under bad input and failed writes (README "Errors
# and exit codes"). Each check names what it holds; any failure makes the script exit 1.
# Usage: reliability_cli.sh SHIM  (SHIM: libsn_enospc.so, tests/shim/enospc.c)
set -u
S="$SENTINEL_BIN"
SHIM="$1"
T="$SENTINEL_TMP/reliability_cli"
rm -rf "$T" && mkdir -p "$T"
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
# expect DESC RC PATTERN -- command...: exit status RC and PATTERN (grep -E) in stderr
expect() {
    local desc="$1" want="$2" pat="$3"
    shift 4
    "$@" > "$T/out" 2> "$T/err"
    local rc=$?
    if [ "$rc" -eq "$want" ] && grep -Eq -- "$pat" "$T/err"; then ok "$desc"; else
        bad "$desc (exit $rc, want $want; stderr: $(head -c 400 "$T/err"))"; fi
}

"$S" simulate --recipe "$SENTINEL_SRC/recipes/quickstart.json" -o "$T/run" --progress none \
    --set 'simulate.defaults.dataset={"kind":"synthetic","n":3}' 2> /dev/null || bad "simulate"
"$S" tokenize --write-demo "$T/tok.json" || bad "demo tokenizer"
TRAJ="$T/run/trajectories-0of1.jsonl.gz"

# ---- results written to a full device never exit 0 ----
"$S" stats "$TRAJ" --progress none > /dev/full 2> "$T/err"
[ $? -eq 1 ] && grep -q "standard output: write failed" "$T/err" && ok "stats > /dev/full" \
    || bad "stats > /dev/full ($(cat "$T/err"))"
"$S" inspect "$TRAJ" > /dev/full 2> "$T/err"
[ $? -eq 1 ] && grep -q "No space left on device" "$T/err" && ok "inspect > /dev/full" || bad "inspect > /dev/full"
echo hello | "$S" tokenize --tokenizer "$T/tok.json" > /dev/full 2> /dev/null
[ $? -ne 0 ] && ok "tokenize > /dev/full" || bad "tokenize > /dev/full"
"$S" --help > /dev/full 2> /dev/null; [ $? -ne 0 ] && ok "--help > /dev/full" || bad "--help > /dev/full"

# ---- run directories: empty, an errors file, duplicate ids ----
mkdir -p "$T/empty"
expect "stats on an empty directory" 2 "no trajectory files .* in $T/empty" -- "$S" stats "$T/empty"
expect "build on an empty directory" 2 "no trajectory files .* in $T/empty" -- \
    "$S" build -i "$T/empty" -o "$T/e-out" --tokenizer "$T/tok.json" --progress none
echo '{"id":"x","experiment":"e","item_id":"i","replicate":0,"error":"boom"}' > "$T/run/errors-0of1.jsonl"
expect "stats skips and mentions the errors file" 0 "skipping 1 errors-" -- \
    "$S" stats "$T/run" --progress none
expect "build skips and mentions the errors file" 0 "skipping 1 errors-" -- \
    "$S" build -i "$T/run" -o "$T/shards" --tokenizer "$T/tok.json" --shard-size 4 --progress none
gzip -dc "$TRAJ" > "$T/dup.jsonl" && gzip -dc "$TRAJ" | head -n 2 >> "$T/dup.jsonl"
n=$(gzip -dc "$TRAJ" | wc -l)
expect "stats warns on duplicate ids" 0 "duplicate debate id '.*': .*dup.jsonl:1 and .*dup.jsonl:$((n + 1))" -- \
    "$S" stats "$T/dup.jsonl" --progress none
"$S" inspect --json "$T/dup.jsonl" > "$T/dup.json" 2> "$T/err"
python3 -c "import json,sys; d=json.load(open('$T/dup.json')); sys.exit(not (d['count']==$n and d['duplicate_ids']==2))" \
    && grep -q "duplicate debate id" "$T/err" && ok "inspect counts duplicates once" || bad "inspect duplicates"

# ---- command-line numbers parse whole ----
expect "--shard 3/" 2 "--shard '3/'" -- "$S" simulate --recipe "$SENTINEL_SRC/recipes/quickstart.json" -o "$T/x" --shard 3/
expect "--shard 0/+4" 2 "--shard '0/\+4'" -- "$S" simulate --recipe "$SENTINEL_SRC/recipes/quickstart.json" -o "$T/x" --shard 0/+4
expect "inspect -n overflow" 2 "-n '99999999999999999999'" -- "$S" inspect -n 99999999999999999999 "$TRAJ"
expect "--set rounds=3x" 2 "rounds: expected an integer" -- "$S" simulate \
    --recipe "$SENTINEL_SRC/recipes/quickstart.json" -o "$T/x" --set simulate.defaults.rounds=3x

# ---- recipes ----
printf '{"simulat": {}}' > "$T/r1.json"
expect "unknown top-level section" 2 "unknown key 'simulat' \(did you mean 'simulate'\?\)" -- \
    "$S" simulate --recipe "$T/r1.json" -o "$T/x"
printf '{"build": {"max_len": 64, "max_len": 128}}' > "$T/r2.json"
expect "duplicate key" 2 "duplicate key 'build.max_len'" -- \
    "$S" build --recipe "$T/r2.json" -i "$TRAJ" -o "$T/x" --tokenizer "$T/tok.json"
printf '{"simulate": {"endpoints": {"sim": {"kind": "sim"}, "unused": {"kind": "openai", "base_url": "ftp://x"}}, "defaults": {"backend": "sim", "dataset": {"kind": "synthetic", "n": 2}}, "experiments": [{"name": "a", "scenario": "none"}]}}' > "$T/r3.json"
expect "an unused endpoint with an invalid base_url" 2 "simulate.endpoints.unused: .*base_url must be" -- \
    "$S" simulate --recipe "$T/r3.json" -o "$T/x" --progress none
expect "a directory where a file is expected" 1 "$T/empty: is a directory" -- \
    "$S" build -i "$TRAJ" -o "$T/x" --tokenizer "$T/empty"

# ---- a full disk while a shard is written ----
LD_PRELOAD="$SHIM" SN_ENOSPC_AFTER=250000 SN_ENOSPC_MATCH=.h5 \
    "$S" build -i "$TRAJ" -o "$T/full" --tokenizer "$T/tok.json" --shard-size 4 --progress none \
    2> "$T/err"
rc=$?
[ $rc -eq 1 ] && grep -Eq "$T/full/[a-z]+-[0-9]+\.h5.*No space left on device" "$T/err" \
    && ok "full disk: exit 1 naming the shard and ENOSPC" || bad "full disk message (exit $rc: $(cat "$T/err"))"
ls "$T/full" | grep -q tmp && bad "full disk: temp file left" || ok "full disk: temp removed"
"$S" inspect --verify "$T/full" > /dev/null 2>&1 && ok "full disk: earlier shards + manifest intact" \
    || bad "full disk: manifest"
[ "$(ls "$T/full" | grep -c '\.h5$')" -ge 1 ] && ok "full disk: earlier shards kept" || bad "no shard kept"
"$S" build -i "$TRAJ" -o "$T/full" --tokenizer "$T/tok.json" --shard-size 4 --progress none \
    > /dev/null 2>&1 \
    && "$S" build -i "$TRAJ" -o "$T/whole" --tokenizer "$T/tok.json" --shard-size 4 \
    --progress none > /dev/null 2>&1 \
    && diff -r "$T/full" "$T/whole" > /dev/null && ok "full disk: resume gives the uninterrupted result" \
    || bad "full disk: resume"

# ---- a full disk during simulate: says so, stops, leaves whole records, and a re-run continues ----
SIM=("$S" simulate --recipe "$SENTINEL_SRC/recipes/quickstart.json" -o "$T/sim" --progress none
     --set 'simulate.defaults.dataset={"kind":"synthetic","n":3}')
LD_PRELOAD="$SHIM" SN_ENOSPC_AFTER=6000 SN_ENOSPC_MATCH=trajectories "${SIM[@]}" 2> "$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q "trajectories-0of1.jsonl.gz: write failed: No space left on device; stopped" "$T/err" \
    && ok "simulate on a full disk: exit 1 naming the file and ENOSPC" || bad "simulate full disk (exit $rc: $(cat "$T/err"))"
gzip -t "$T/sim/trajectories-0of1.jsonl.gz" 2> /dev/null && ok "simulate on a full disk: whole records only" \
    || bad "simulate full disk: partial record left"
"${SIM[@]}" 2> "$T/err"
[ $? -eq 0 ] && ! grep -q "dropping" "$T/err" && [ "$(gzip -dc "$T/sim/trajectories-0of1.jsonl.gz" | wc -l)" -eq "$n" ] \
    && ok "simulate after a full disk: the re-run completes" || bad "simulate re-run ($(cat "$T/err"))"

# ---- a manifest that lies ----
cp -r "$T/whole" "$T/lie"
python3 - "$T/lie/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["counts"]["train"] += 1
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
expect "manifest counts that lie" 1 "counts.train = .* but the shards listed hold" -- "$S" inspect --verify "$T/lie"
cp "$T/whole/manifest.json" "$T/lie/manifest.json"
python3 - "$T/lie/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["tokenizer_hash"] = "0" * 64
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
expect "manifest tokenizer hash differs from the shards'" 1 "tokenizer" -- "$S" inspect --verify "$T/lie"
expect "build resume refuses a lying manifest" 1 "cannot resume" -- \
    "$S" build -i "$TRAJ" -o "$T/lie" --tokenizer "$T/tok.json" --shard-size 4 --progress none

exit $fail
