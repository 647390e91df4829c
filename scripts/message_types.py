#!/usr/bin/env python3
"""scripts/message_types.py: what a ranker learned, by message type (docs/eval.md "Content, not
wording").

    scripts/message_types.py --items OUT/eval/items.csv -i OUT/eval/trajectories \
        [--ranker detector] [--json OUT/eval/message_types.json]

Reads the scores `sentinel eval --items` wrote (one row per message a sentinel scored, in the
context the paper's Algorithm 1 gives it) and types each scored message from the debates, as
the tuple builder types them (docs/formats.md "Tuple selection"): an honest agent whose answer
is gold (`honest_correct`), an honest agent misled (`misled`: its wrong answer is the
adversarial target, or it held gold in an earlier round), another honest wrong answer
(`honest_wrong`), an unparsed honest answer (`honest_unparsed`), an adversary's message
(`adversary`) and an AITM copy rewritten by an interceptor (`tampered`). For each group (all,
scenario, dataset, scenario x dataset) and each type T the figure is
AUROC(honest_correct above T): the probability that a correct honest message scores above a
message of type T, ties counting one half. 0.5 is chance; below 0.5 the ranker puts that type
above correct honest messages. `auroc_messages` is eval's message-level AUROC (non-adversarial
above adversarial messages, every scored row, all rounds pooled) for the same groups, crossed
groups (scenario x dataset) included, which `sentinel eval` does not report.
"""
import argparse
import csv
import gzip
import json
import os
import sys
from collections import defaultdict


def auroc(pos, neg):
    """P(pos > neg) + 0.5 P(pos = neg), from average ranks."""
    if not pos or not neg:
        return None
    allv = sorted([(v, 1) for v in pos] + [(v, 0) for v in neg])
    rank_sum, i, n = 0.0, 0, len(allv)
    while i < n:
        j = i
        while j < n and allv[j][0] == allv[i][0]:
            j += 1
        mid = (i + j + 1) / 2.0
        rank_sum += mid * sum(1 for k in range(i, j) if allv[k][1] == 1)
        i = j
    npos, nneg = len(pos), len(neg)
    return (rank_sum - npos * (npos + 1) / 2.0) / (npos * nneg)


def read_trajectories(paths):
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, n) for n in sorted(names)
                          if n.endswith(".jsonl.gz") or n.endswith(".jsonl")]
        else:
            files.append(p)
    out = {}
    for f in sorted(files):
        op = gzip.open if f.endswith(".gz") else open
        with op(f, "rt") as fh:
            for line in fh:
                if line.strip():
                    t = json.loads(line)
                    out[t["id"]] = t
    return out


def msg_type(t, rnd, sender):
    roles = {a["id"]: a["role"] for a in t["agents"]}
    if roles.get(sender) != "honest":
        return "adversary"
    msgs = t["rounds"][rnd] if rnd < len(t["rounds"]) else []
    m = next((x for x in msgs if x["agent"] == sender), None)
    if m is None or not m.get("parsed") or m.get("answer") is None:
        return "honest_unparsed"
    if m["answer"] == t["gold"]:
        return "honest_correct"
    misled = m["answer"] == t.get("adversarial_target")
    for q in range(rnd):
        e = next((x for x in t["rounds"][q] if x["agent"] == sender), None)
        misled = misled or (e is not None and e.get("answer") == t["gold"])
    return "misled" if misled else "honest_wrong"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", required=True)
    ap.add_argument("-i", "--input", required=True, nargs="+")
    ap.add_argument("--ranker", default="detector")
    ap.add_argument("--json")
    a = ap.parse_args()
    trajs = read_trajectories(a.input)
    groups = defaultdict(lambda: defaultdict(list))
    labels = defaultdict(lambda: {False: [], True: []})  # eval's message labels, per group
    missing = 0
    with open(a.items, newline="") as fh:
        for row in csv.DictReader(fh):
            if row["ranker"] != a.ranker:
                continue
            t = trajs.get(row["debate"])
            if t is None:
                missing += 1
                continue
            rnd, sender = int(row["round"]), int(row["sender"])
            kind = msg_type(t, rnd, sender)
            if kind != "adversary" and row["adversarial"] == "1":
                kind = "tampered"  # an honest sender's copy an interceptor rewrote
            s = float(row["score"])
            scen, ds = row["scenario"], row["dataset"]
            for g in ("all", f"scenario={scen}", f"dataset={ds}",
                      f"scenario={scen},dataset={ds}"):
                groups[g][kind].append(s)
                labels[g][row["adversarial"] == "1"].append(s)
    if missing:
        sys.exit(f"{missing} scored rows name debates that are not in the trajectories given")
    report = {}
    for g in sorted(groups):
        by = groups[g]
        hc = by.get("honest_correct", [])
        report[g] = {"auroc_messages": auroc(labels[g][False], labels[g][True]),
                     "n": {t: len(v) for t, v in sorted(by.items())},
                     "auroc_honest_correct_above": {
                         t: auroc(hc, v) for t, v in sorted(by.items()) if t != "honest_correct"}}
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"ranker": a.ranker, "groups": report}, f, indent=1, sort_keys=True)
            f.write("\n")
    for g, r in report.items():
        cells = ", ".join(f"{t} {v:.3f} (n={r['n'][t]})" for t, v in
                          r["auroc_honest_correct_above"].items() if v is not None)
        am = r["auroc_messages"]
        print(f"{g}: messages {am:.3f}; honest_correct n={r['n'].get('honest_correct', 0)}; "
              f"{cells}" if am is not None else
              f"{g}: honest_correct n={r['n'].get('honest_correct', 0)}; {cells}")


if __name__ == "__main__":
    main()
