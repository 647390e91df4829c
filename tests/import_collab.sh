#!/usr/bin/env bash
# tests/import_collab.sh: `sentinel import collab-attack` on real logs, checked by the independent
# Python re-derivation tests/import_collab_ref.py (texts byte for byte, roles, gold, options,
# targets, replicate, item ids, answers by the source rule, the source vote, one trajectory per
# source line), plus a byte-identical re-run.
#   import_collab.sh vendored   the subset shipped in data/collab-attack/logs
#   import_collab.sh full       $SENTINEL_COLLAB_ATTACK_DIR/logs (the full stored set); skips,
#                               saying so, when the variable is unset or the folder is absent
set -euo pipefail
mode=${1:?vendored or full}
bin=${SENTINEL_BIN:?}
src=${SENTINEL_SRC:?}
tmp=${SENTINEL_TMP:-/tmp}/import_collab_$mode
rm -rf "$tmp" && mkdir -p "$tmp"
if [ "$mode" = vendored ]; then
  logs=$src/data/collab-attack/logs
else
  if [ -z "${SENTINEL_COLLAB_ATTACK_DIR:-}" ] || [ ! -d "${SENTINEL_COLLAB_ATTACK_DIR}/logs" ]; then
    echo "SKIP: SENTINEL_COLLAB_ATTACK_DIR is not set to a copy of the full collab-attack set" \
         "(a folder with logs/); only the vendored subset was checked"
    exit 0
  fi
  logs=$SENTINEL_COLLAB_ATTACK_DIR/logs
fi
"$bin" import collab-attack --skip-unsupported --progress none -o "$tmp/a.jsonl.gz" "$logs" \
  2> "$tmp/summary.txt"
cat "$tmp/summary.txt"
"$bin" import collab-attack --skip-unsupported --progress none -o "$tmp/b.jsonl.gz" "$logs" \
  2> /dev/null
cmp "$tmp/a.jsonl.gz" "$tmp/b.jsonl.gz"
echo "re-run: byte-identical"
"${SENTINEL_PYTHON:-/usr/bin/python3}" "$src/tests/import_collab_ref.py" "$tmp/a.jsonl.gz" "$logs"
# stats reads every imported line, and --majority source reproduces the source's published
# per-round majority accuracies (tests/import_stats_check.py names the runs and numbers)
"$bin" stats --quiet --progress none --majority source --by experiment \
  --json "$tmp/stats.json" "$tmp/a.jsonl.gz"
"${SENTINEL_PYTHON:-/usr/bin/python3}" "$src/tests/import_stats_check.py" "$tmp/stats.json" "$mode"
if [ "$mode" = full ]; then
  # the full set: 10,070 debates from 102 supported files (one empty), 2 unsupported files
  # (math, mquake) skipped; the legacy multi-adversary files show the source's prompt-leak bug
  # in 400 (adv2) + 1,200 (adv3) peer views
  grep -q "10070 trajectories from 102 files" "$tmp/summary.txt"
  grep -q "empty files: 1, unsupported files skipped: 2" "$tmp/summary.txt"
  grep -q "visibility anomalies: 1600" "$tmp/summary.txt"
else
  grep -q "3800 trajectories from 38 files" "$tmp/summary.txt"
  grep -q "visibility anomalies: 0" "$tmp/summary.txt"
fi
# --answers sentinel runs, records its rule, and reports how many answers differ
"$bin" import collab-attack --answers sentinel --skip-unsupported --progress none \
  -o "$tmp/s.jsonl.gz" "$logs" 2> "$tmp/summary_s.txt"
grep -q "answers differing between the source rule and sentinel's extractor: [1-9]" \
  "$tmp/summary_s.txt"
n_rule=$(gzip -dc "$tmp/s.jsonl.gz" | grep -c '"answer_rule":"sentinel"')
n_all=$(gzip -dc "$tmp/s.jsonl.gz" | wc -l)
[ "$n_rule" -eq "$n_all" ]
echo "import_collab.sh $mode: ok"
