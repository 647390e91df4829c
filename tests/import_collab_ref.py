#!/usr/bin/env python3
"""Independent check of `sentinel import collab-attack` (docs/formats.md "Imported trajectories").

usage: import_collab_ref.py TRAJ.jsonl[.gz] LOGS_DIR [--answers source|sentinel]

Re-reads every source line named by each trajectory's provenance (import.path, import.line) from
LOGS_DIR (a copy of the source's results/ tree, files gzip'd) and recomputes, with Python's own
`re`, str.upper/lower/strip and hashlib, everything the importer derives: texts byte for byte,
roles (a system message marks an adversary), gold, options, adversarial target, replicate,
item id, answers by the source's extraction rule, and the final decision by the source's vote.
Also checks that every source line of every supported file became exactly one trajectory.
Exit 0 when everything agrees; prints the first disagreements and exits 1 otherwise.
"""
import collections
import gzip
import hashlib
import json
import os
import re
import sys

SUPPORTED = {"mmlu", "medmcqa", "truthfulqa", "scalr"}
PAT = re.compile(r"\((\w+)\)|(\w+)\)")


def source_answer(dataset, text, options):
    last = "D" if dataset == "mmlu" else chr(ord("A") + len(options) - 1)
    by_re = None
    for g1, g2 in reversed(PAT.findall(text)):
        s = (g1 or g2).upper()
        if "A" <= s <= last:
            by_re = s
            break
    pos = []
    for o in options:
        needle = o.lower().strip() if dataset == "mmlu" else o.lower().strip("., ")
        pos.append(text.lower().rfind(needle))
    if max(pos) >= 0:
        return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[pos.index(max(pos))]
    return by_re


def vote(answers):
    c = collections.Counter(answers)
    top = max(c.values())
    winners = [a for a, k in c.items() if k == top]
    if top == 1 or len(winners) != 1:
        return None
    return winners[0]


def open_any(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rt", encoding="utf-8") if magic == b"\x1f\x8b" else open(
        path, encoding="utf-8")


def dataset_of(rel):
    parts = rel.split("/")
    return parts[1] if parts[0] == "archive" else parts[0]


def rows(dataset, d):
    raw = d["raw_task"]
    if dataset == "mmlu":
        return raw[0], raw[1:5], d["answer"].upper(), None, None
    if dataset == "medmcqa":
        exp = raw.get("exp")
        return (raw["question"], [raw[k] for k in ("opa", "opb", "opc", "opd")],
                d["answer"].upper(), raw.get("subject_name"), exp if exp else None)
    if dataset == "scalr":
        return (raw["question"], [raw["choice_%d" % i] for i in range(5)], d["answer"].upper(),
                None, None)
    return raw["question"], list(raw["mc1_targets"].keys()), d["answer"][0][0].upper(), None, None


def main():
    traj_path, logs = sys.argv[1], sys.argv[2]
    mode = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--answers" else "source"
    bad = []

    def check(cond, what):
        if not cond and len(bad) < 20:
            bad.append(what)

    cache = {}
    seen = collections.Counter()
    n = n_msgs = n_unparsed = 0
    with open_any(traj_path) as f:
        for line in f:
            t = json.loads(line)
            imp = t["import"]
            rel, ln = imp["path"], imp["line"]
            seen[rel] += 1
            if rel not in cache:
                with open_any(os.path.join(logs, rel + ".gz")) as g:
                    cache = {rel: [json.loads(x) for x in g if x.strip()]}
            d = cache[rel][ln]
            ds = dataset_of(rel)
            where = "%s:%d" % (rel, ln + 1)
            stem, options, gold, subject, exp = rows(ds, d)
            check(t["dataset"] == ds, where + ": dataset")
            check(t["question"] == stem, where + ": question")
            check(t["options"] == options, where + ": options")
            check(t["gold"] == gold, where + ": gold")
            check(t["subject"] == subject, where + ": subject")
            check(t["gold_explanation"] == exp, where + ": gold_explanation")
            check(t["item_id"].startswith(ds + "-" + hashlib.sha256(
                d["question"].encode("utf-8")).hexdigest()[:16]), where + ": item_id")
            stem_name = os.path.basename(rel)[:-len(".jsonl")].split("-")[0].split("_")
            adv_name = stem_name[0] == "adv"
            nums = [x for x in stem_name if x.isdigit()]
            want_rep = int(nums[-1]) if len(nums) == (5 if adv_name else 4) else 0
            check(t["replicate"] == want_rep, where + ": replicate %s" % t["replicate"])
            convs = d["agent_responses"]
            roles = ["adversary" if any(m["role"] == "system" for m in c) else "honest"
                     for c in convs]
            check([a["role"] for a in t["agents"]] == roles, where + ": roles")
            replies = [[m["content"] for m in c if m["role"] == "assistant"] for c in convs]
            R = len(replies[0])
            check(len(t["rounds"]) == R, where + ": rounds")
            targets = set()
            for c, r in zip(convs, roles):
                if r == "adversary":
                    users = [m["content"] for m in c if m["role"] == "user"]
                    m = re.findall(r"Your answer: \(([A-Za-z])\)", users[0], re.I)
                    if m:
                        targets.add(m[-1].upper())
            want_target = targets.pop() if len(targets) == 1 else None
            check(t["adversarial_target"] == want_target, where + ": target")
            last_raw = []
            for r in range(R):
                for k in range(len(convs)):
                    msg = t["rounds"][r][k]
                    n_msgs += 1
                    check(msg["agent"] == k, where + ": agent order")
                    check(msg["text"] == replies[k][r], where + ": text r%d k%d" % (r, k))
                    raw = source_answer(ds, replies[k][r], options)
                    if r == R - 1:
                        last_raw.append(raw)
                    if mode == "source":
                        want = raw if raw is not None and len(raw) == 1 and \
                            "A" <= raw < chr(ord("A") + len(options)) else None
                        check(msg["answer"] == want, where + ": answer r%d k%d: %r want %r" % (
                            r, k, msg["answer"], want))
                        check(msg["answer_rule"] == "collab-attack", where + ": answer_rule")
                    n_unparsed += msg["answer"] is None
            fin = vote(last_raw)
            want_final = fin if fin is not None and len(fin) == 1 and fin < chr(
                ord("A") + len(options)) else None
            check(t["final"]["answer"] == want_final, where + ": final %r want %r" % (
                t["final"]["answer"], want_final))
            check(t["final"]["correct"] == (want_final == gold), where + ": final.correct")
            n += 1
    # every line of every supported, non-empty source file became one trajectory
    for dirpath, _, files in os.walk(logs):
        for fn in files:
            if not fn.endswith(".jsonl.gz"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, fn), logs)[:-3]
            if dataset_of(rel) not in SUPPORTED:
                continue
            with open_any(os.path.join(dirpath, fn)) as g:
                lines = sum(1 for x in g if x.strip())
            check(seen.get(rel, 0) == lines, "%s: %d trajectories, %d source lines" % (
                rel, seen.get(rel, 0), lines))
    print("import_collab_ref: %d trajectories, %d messages, %d unparsed, %d files" % (
        n, n_msgs, n_unparsed, len(seen)))
    for b in bad:
        print("MISMATCH " + b)
    return 1 if bad or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
