#!/usr/bin/env bash
# tests/run_cluster_array.sh: recipes/cluster/simulate-array.sbatch run as a Slurm array would run
# it (SLURM_ARRAY_TASK_ID = 0..N-1, one process each) on recipes/netsafe.json with the built-in
# agents and the synthetic dataset: the N shards are disjoint, and together they hold exactly
# the debates of one unsharded run, each debate byte-identical. A task id outside 0..N-1 is
# refused. Env (from ctest): SENTINEL_BIN, SENTINEL_SRC, SENTINEL_TMP.
set -euo pipefail
bin=${SENTINEL_BIN:?}
src=${SENTINEL_SRC:?}
tmp="${SENTINEL_TMP:-/tmp}/run_cluster_array"
rm -rf "$tmp" && mkdir -p "$tmp"
script="$src/recipes/cluster/simulate-array.sbatch"
sets=(--set 'simulate.defaults.dataset={"kind":"synthetic","n":7}' --set simulate.defaults.backend=sim)
fail() { echo "FAIL: $*"; exit 1; }

"$bin" simulate --recipe "$src/recipes/netsafe.json" -o "$tmp/whole" --progress none "${sets[@]}" \
  > "$tmp/whole.log" 2>&1 || { cat "$tmp/whole.log"; fail "unsharded run"; }
for i in 0 1 2; do
  SLURM_ARRAY_TASK_ID=$i SENTINEL="$bin" bash "$script" "$src/recipes/netsafe.json" "$tmp/arr" 3 \
    "${sets[@]}" > "$tmp/task$i.log" 2>&1 || { cat "$tmp/task$i.log"; fail "array task $i"; }
done
rc=0
SLURM_ARRAY_TASK_ID=3 SENTINEL="$bin" bash "$script" "$src/recipes/netsafe.json" "$tmp/arr" 3 \
  "${sets[@]}" > "$tmp/task3.log" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "task 3 of 3 shards: exit $rc, expected 2"
"${SENTINEL_PYTHON:-/usr/bin/python3}" - "$tmp/whole" "$tmp/arr" <<'PY'
import gzip, json, os, sys
def read(path):
    recs = {}
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            rid = json.loads(line)["id"]
            assert rid not in recs, ("twice", rid)
            recs[rid] = line
    return recs
whole = read(os.path.join(sys.argv[1], "trajectories-0of1.jsonl.gz"))
files = sorted(f for f in os.listdir(sys.argv[2]) if f.endswith(".jsonl.gz"))
assert files == [f"trajectories-{i}of3.jsonl.gz" for i in range(3)], files
shards = [read(os.path.join(sys.argv[2], f)) for f in files]
seen = {}
for i, s in enumerate(shards):
    assert s, f"shard {i} is empty"
    for rid, line in s.items():
        assert rid not in seen, (rid, "in shards", seen.get(rid), i)
        seen[rid] = i
        assert whole.get(rid) == line, ("differs from the unsharded run", rid)
assert set(seen) == set(whole), (len(seen), len(whole))
print(f"{len(whole)} debates: shards of {[len(s) for s in shards]}, disjoint, identical to one run")
PY
echo "ok: run_cluster_array"
