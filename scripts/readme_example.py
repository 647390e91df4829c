#!/usr/bin/python3
"""scripts/readme_example.py: README.md's worked example, written from a finished run.

    scripts/readme_example.py RUN_DIR [--readme README.md] [--as out/quickstart] [--check]

RUN_DIR is a finished `sentinel run recipes/quickstart.json -o RUN_DIR` (make demo writes
out/quickstart). The block between the markers

    <!-- worked-example:begin -->
    <!-- worked-example:end -->

of the README is replaced by: what the run is (its counts), the summary `sentinel run` printed
at the end, verbatim (RUN_DIR/summary.txt, docs/run.md "Summary"), and a short "Read plainly"
list whose every number is read from RUN_DIR/eval/report.json (docs/formats.md "Eval report";
groups, rankers and figures selected by name, never by position, so extra groups or rankers
change nothing here). Paths under RUN_DIR are written as under --as (default out/quickstart),
the directory make demo writes.

--check writes nothing: it exits 1 listing every number of the README's block that differs
from the block this run gives (and any other text that differs), 0 when they agree. Timings
are not compared, since they vary from run to run and machine to machine; a number is a timing
when it is followed by a time unit (`41 s`, `24 ms`, `2 min`, `1 h`) or stands inside a "took"
phrase (from the word `took` to the end of its sentence: the next `. `, `;`, `)` or the end of
the block). The block puts every timing-derived figure (scoring time, overhead share) in such a
phrase and nothing else there. tests/readme.cmake runs the quickstart and this check.
"""
import argparse
import difflib
import json
import os
import re
import sys

BEGIN = "<!-- worked-example:begin -->"
END = "<!-- worked-example:end -->"

# figures of the report: the table's name (best_baseline keys) and the row's key
BACC = ("balanced accuracy (agents)", "agent_balanced_accuracy")
AUROC = ("AUROC (messages)", "auroc")
TASK = ("task accuracy, defended, tie-neutral", "task_accuracy_defended_tie_neutral")
TASK_UNDEF = "task_accuracy_undefended_tie_neutral"


def fail(msg):
    print("readme_example: " + msg, file=sys.stderr)
    sys.exit(2)


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail("%s: %s" % (path, e))


def f3(x):
    return "n/a" if x is None else "%.3f" % x


def rate(r):
    """'p [lo, hi]' of a rate object, or 'p', or 'n/a'"""
    if not r or r.get("p") is None:
        return "n/a"
    if r.get("lo") is None or r.get("hi") is None:
        return f3(r["p"])
    return "%s [%s, %s]" % (f3(r["p"]), f3(r["lo"]), f3(r["hi"]))


class Report:
    def __init__(self, rep):
        self.rep = rep
        self.rankers = {r["ranker"]: r for r in rep.get("rankers", [])}
        self.oracle = rep.get("oracle")

    def row(self, ranker, group, row):
        r = self.oracle if ranker == "oracle" else self.rankers.get(ranker)
        if not r:
            return None
        return r.get("groups", {}).get(group, {}).get(row)

    def p(self, ranker, group, row, key):
        rw = self.row(ranker, group, row)
        v = rw.get(key) if rw else None
        return v.get("p") if isinstance(v, dict) else None

    def best(self, group, row, fig):
        """(name, p) of the best baseline of a figure, as eval named it"""
        table = self.rep.get("best_baseline_last_round" if row == "last_round"
                             else "best_baseline_pooled", {})
        name = table.get(group, {}).get(fig[0])
        return (name, self.p(name, group, row, fig[1])) if name else (None, None)

    def has(self, group):
        return self.row("detector", group, "last_round") is not None


def vs(rep, group, row, fig, what):
    """'<what> d vs b (name): beats it' for the detector against the best baseline"""
    d = rep.p("detector", group, row, fig[1])
    name, b = rep.best(group, row, fig)
    if d is None or b is None:
        return None
    verdict = "above" if d > b else "equal to" if d == b else "below"
    return "%s %s, %s the best baseline's %s (%s)" % (what, f3(d), verdict, f3(b), name)


def plainly(rep, out_json):
    """The 'Read plainly' bullets: every number from report.json."""
    lines = []
    if not rep.has("all"):
        return ["- The detector is not in this report (`sentinel eval` without --detector)."]
    # 1. against the weak baselines, pooled AUROC
    d = rep.p("detector", "all", "pooled", AUROC[1])
    weak = [(n, rep.p(n, "all", "pooled", AUROC[1])) for n in ("random", "shortest")
            if n in rep.rankers]
    o = rep.p("oracle", "all", "pooled", AUROC[1])
    lines.append("- AUROC over every message of every round (pooled, group all): detector %s; %s; "
                 "the oracle (ceiling) %s." % (f3(d), ", ".join("%s %s" % (n, f3(p))
                                                             for n, p in weak) or "no baseline",
                                                f3(o)))
    # 1b. by message type, pooled (docs/eval.md "By message type")
    mt = ((rep.rankers["detector"].get("groups", {}).get("all") or {}).get("message_types")
          or {}).get("auroc", {})
    said = [("an adversary's", "honest_correct_above_adversary"),
            ("a tampered AITM copy's", "honest_correct_above_tampered"),
            ("a misled honest agent's", "honest_correct_above_misled"),
            ("another wrong honest answer's", "honest_correct_above_honest_wrong")]
    cells = ["%s %s" % (what, f3((mt.get(key) or {}).get("p"))) for what, key in said
             if (mt.get(key) or {}).get("p") is not None]
    if cells:
        s = ("- By message type (every round pooled, group all; 0.5 = chance): the detector "
             "scores a correct honest message above %s" % "; above ".join(cells))
        ma = (mt.get("misled_above_adversary") or {}).get("p")
        if ma is not None:
            s += "; a misled honest agent's above an adversary's %s" % f3(ma)
        lines.append(s + ".")
    # 2. in and out of domain, last round, against the best baseline of each figure
    for group, what in (("domain=in", "In domain (the attacks it was trained on)"),
                        ("domain=out", "Out of domain (an attack never seen in training)")):
        if not rep.has(group):
            continue
        parts = [vs(rep, group, "last_round", BACC, "balanced accuracy"),
                 vs(rep, group, "last_round", AUROC, "AUROC")]
        parts = [x for x in parts if x]
        if parts:
            lines.append("- %s, last round: %s." % (what, "; ".join(parts)))
    # 2b. content: the evaluation-only style-matched attack (honest wording, wrong content), by
    # the fact base's groups (docs/eval.md "Content, not wording")
    sm = "scenario=style_matched"
    if rep.has(sm):
        groups = [sm] + sorted(g for g in rep.rankers["detector"].get("groups", {})
                               if g.startswith(sm + ",dataset="))
        cells = []
        for g in groups:
            r = rep.row("detector", g, "overall") or {}
            others = ["%s %s" % (n, f3(rep.p(n, g, "overall", AUROC[1])))
                      for n in ("ngram", "disagree") if rep.p(n, g, "overall", AUROC[1])
                      is not None]
            cells.append("%s %s (%s)" % ("all" if g == sm else g.split("dataset=")[1],
                                         rate(r.get(AUROC[1])), ", ".join(others)))
        lines.append("- Content (the evaluation-only style-matched attack: honest wording, wrong "
                     "content), AUROC every round pooled, detector [interval] (baselines): %s."
                     % "; ".join(cells))
    # 3. the replay's vote after the exclusions, tie-neutral, last round
    u = rep.p("detector", "all", "last_round", TASK_UNDEF)
    t = rep.p("detector", "all", "last_round", TASK[1])
    name, b = rep.best("all", "last_round", TASK)
    o = rep.p("oracle", "all", "last_round", TASK[1])
    lines.append("- Replaying the recorded debates with the bottom-ranked agent excluded, the last "
                 "round's task accuracy (tie-neutral) goes from %s to %s with the detector "
                 "(best baseline, %s: %s; oracle: %s)." % (f3(u), f3(t), name or "none", f3(b),
                                                           f3(o)))
    # 4. defended debates
    dfd = rep.rep.get("defended")
    groups = dfd.get("groups", {}) if dfd else {}
    lr = groups.get("all", {}).get("last_round")
    if lr:
        acc = lr.get("accuracy_tie_neutral", {})
        rec = lr.get("recovery", {})
        s = ("- Defended debates (the eval debates re-run with the detector inside every honest "
             "agent), last round, tie-neutral accuracy: attacked %s, defended %s, clean %s, "
             "the oracle's exclusions %s; recovery %s" % (
                 f3((acc.get("attacked") or {}).get("p")), f3((acc.get("defended") or {}).get("p")),
                 f3((acc.get("clean") or {}).get("p")), f3((acc.get("oracle") or {}).get("p")),
                 rate(rec)))
        if rec.get("na"):
            s += " (%s)" % rec["na"]
        s += ", the oracle's %s, share of the oracle's %s" % (
            rate(lr.get("recovery_oracle")), rate(lr.get("recovery_share_of_oracle")))
        out = groups.get("domain=out", {}).get("last_round")
        if out and out.get("recovery"):
            s += "; out of domain: recovery %s" % rate(out["recovery"])
        lines.append(s + ".")
        cost = lr.get("cost_of_defence")
        if cost is not None:
            s = ("- The cost of the defence when nobody attacks (the same debates clean, with and "
                 "without the detector), last round, tie-neutral accuracy: clean %s, "
                 "clean-defended %s: cost %s" % (
                     f3((acc.get("clean") or {}).get("p")),
                     f3((acc.get("clean_defended") or {}).get("p")), rate(cost)))
            if cost.get("na"):
                s += " (%s)" % cost["na"]
            elif cost.get("lo") is not None and cost["lo"] <= 0 <= cost["hi"]:
                s += " (its interval holds 0: no cost measured at this size)"
            elif cost.get("p") is not None and cost["p"] < 0:
                s += " (negative: the defence raised accuracy)"
            lines.append(s + ".")
        tm = lr.get("timing") or {}
        if tm.get("scoring_ms_per_sentinel") is not None:
            spd = dfd.get("gen_tokens_per_s")
            lines.append("- Overhead (the paper's Table 1), generation modelled at %s tokens/s "
                         "(an assumption: sim agents have no generation time): one sentinel's "
                         "scoring took %.2f ms per round, %.2f%% of the round's time." % (
                             "%g" % spd if spd is not None else "n/a",
                             tm["scoring_ms_per_sentinel"], tm.get("overhead_pct") or 0.0))
    lines.append("- Every table (per round, per group, the strict tie rule, intervals): `%s`." %
                 out_json.replace("report.json", "report.txt"))
    return lines


def wrap(line, width=100, indent="  "):
    """A paragraph or Markdown bullet wrapped at width, continuation lines indented by indent."""
    words, out, cur = line.split(" "), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            out.append(cur)
            cur = indent + w
        else:
            cur = cur + " " + w if cur else w
    out.append(cur)
    return "\n".join(out)


def block(run_dir, as_dir):
    summ_path = os.path.join(run_dir, "summary.txt")
    try:
        with open(summ_path, encoding="utf-8") as f:
            summ = f.read().rstrip("\n")
    except OSError as e:
        fail("%s: %s (a finished `sentinel run` writes it)" % (summ_path, e))
    m = re.search(r"^  detector +(\S+)/detector\.gguf$", summ, re.M)
    if not m:
        fail("%s: no '  detector  .../detector.gguf' line" % summ_path)
    prefix = m.group(1)
    summ = summ.replace(prefix + "/", as_dir + "/")
    rep = Report(load_json(os.path.join(run_dir, "eval", "report.json")))
    fm = load_json(os.path.join(run_dir, "train", "final_metrics.json"))
    man = load_json(os.path.join(run_dir, "shards", "manifest.json"))
    lr = rep.row("detector", "all", "last_round") or rep.row("random", "all", "last_round") or {}
    intro = ("This run simulated %d training debates, trained for %d steps and evaluated on %d "
             "fresh debates over %d items (clustered by %s). What it printed at the end "
             "(`%s/summary.txt`):" % (
                 man.get("stats", {}).get("trajectories", 0), fm.get("step", 0),
                 rep.rep.get("debates", 0), lr.get("clusters", 0), lr.get("cluster_by", "?"),
                 as_dir))
    out_json = as_dir + "/eval/report.json"
    text = [BEGIN, wrap(intro, indent=""), "", "```", summ, "```", "",
            "Read plainly, on this run (every number from `%s`):" % out_json]
    text += [wrap(x) for x in plainly(rep, out_json)]
    text.append(END)
    return "\n".join(text)


NUM = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")
UNIT = re.compile(r"\s?(?:s|ms|min|h)\b")
TOOK = re.compile(r"\btook\b.*?(?:\.(?=\s)|;|\)|$)", re.S)


def numbers(text):
    """[(value, line, start, end)] of the numbers that are not timings"""
    skip = [m.span() for m in TOOK.finditer(text)]
    out = []
    for m in NUM.finditer(text):
        a, b = m.span()
        if UNIT.match(text, b) or any(s <= a < e for s, e in skip):
            continue
        out.append((m.group(), text.count("\n", 0, a) + 1, a, b))
    return out


def skeleton(text):
    """the text with every number (timings included) replaced by #"""
    return [NUM.sub("#", ln) for ln in text.split("\n")]


def check(readme_block, run_block, first_line, name):
    """Every number of the README's block that differs from the run's (aligned as sequences,
    so one number added or dropped is reported alone), then any other text that differs."""
    got, want = numbers(readme_block), numbers(run_block)
    bad = []
    sm = difflib.SequenceMatcher(None, [g[0] for g in got], [w[0] for w in want],
                                 autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            g = got[i1 + k] if i1 + k < i2 else None
            w = want[j1 + k] if j1 + k < j2 else None
            line = g[1] if g else (got[i1 - 1][1] if i1 > 0 else 1)
            bad.append("%s:%d: %s (the run: %s)" % (name, line + first_line - 1,
                                                   g[0] if g else "(nothing)",
                                                   w[0] if w else "(nothing)"))
    diff = list(difflib.unified_diff(skeleton(readme_block), skeleton(run_block),
                                     name + " (numbers as #)", "the run (numbers as #)",
                                     lineterm="", n=0))
    if diff:
        bad.append("text differs besides the numbers:\n" + "\n".join(diff))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run_dir")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--readme", default=os.path.normpath(os.path.join(here, "..", "README.md")),
                    help="the README to write or check (default: the repository's)")
    ap.add_argument("--as", dest="as_dir", default="out/quickstart",
                    help="how RUN_DIR is written in the README (default out/quickstart)")
    ap.add_argument("--check", action="store_true",
                    help="compare the README's block with the run's; write nothing")
    a = ap.parse_args()
    new = block(a.run_dir, a.as_dir)
    try:
        with open(a.readme, encoding="utf-8") as f:
            readme = f.read()
    except OSError as e:
        fail("%s: %s" % (a.readme, e))
    i, j = readme.find(BEGIN), readme.find(END)
    if i < 0 or j < i or readme.count(BEGIN) != 1 or readme.count(END) != 1:
        fail("%s: expected one '%s' followed by one '%s'" % (a.readme, BEGIN, END))
    old = readme[i:j + len(END)]
    if a.check:
        bad = check(old, new, readme.count("\n", 0, i) + 1, a.readme)
        if bad:
            print("readme_example: %s: the worked example differs from the run in %s "
                  "(regenerate: scripts/readme_example.py %s):" % (a.readme, a.run_dir, a.run_dir))
            print("\n".join(bad))
            return 1
        print("readme_example: %s: every number of the worked example (%d, timings excluded) "
              "matches the run in %s" % (a.readme, len(numbers(new)), a.run_dir))
        return 0
    tmp = a.readme + ".tmp.%d" % os.getpid()
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(readme[:i] + new + readme[j + len(END):])
    os.replace(tmp, a.readme)
    print("readme_example: wrote the worked example of %s from %s" % (a.readme, a.run_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
