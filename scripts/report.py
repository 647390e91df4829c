#!/usr/bin/python3
"""scripts/report.py RUN_DIR: the figures of a `sentinel run` directory, without Jupyter.

Run by `sentinel report RUN_DIR` (cli/cmd_report.c) and at the end of `sentinel run`
(docs/run.md, "Report"). Reads what the run wrote:
  train/metrics.jsonl   training curves (loss, accuracy, learning rate; eval_* points)
  eval/report.json      detection per round: every ranker, the oracle, the best baseline
  eval/items.csv        score histograms of adversarial vs honest messages per ranker
  summary.txt           the run's summary, shown as text
and writes RUN_DIR/figures/{training,detection,scores}.png (the ones whose input exists) and
RUN_DIR/report.html, self-contained (the PNGs inlined as data: URIs). Same inputs, same bytes:
the Agg backend, fixed size and dpi, no Software/date metadata, sorted iteration, no time
stamps. Without matplotlib the HTML says what to install and the exit status is still 0.
"""
import base64
import csv
import html
import io
import json
import logging
import math
import os
import sys

INSTALL = "apt-get install python3-matplotlib (Debian/Ubuntu; scripts/deps.sh installs it)"
METRIC = "agent_detection_accuracy"


def load_jsonl(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    pass  # a partial last line of a killed run
    return rows


def png_bytes(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, metadata={"Software": None})
    return buf.getvalue()


def fig_training(plt, rows):
    train = [r for r in rows if "loss" in r]
    ev = [r for r in rows if "eval_loss" in r]
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.6))
    for a, key, title in ((ax[0], "loss", "loss"), (ax[1], "accuracy", "pairwise accuracy")):
        xs = [r["step"] for r in train if isinstance(r.get(key), (int, float))]
        ys = [r[key] for r in train if isinstance(r.get(key), (int, float))]
        a.plot(xs, ys, label="train", color="tab:blue", linewidth=1)
        xe = [r["step"] for r in ev if isinstance(r.get("eval_" + key), (int, float))]
        ye = [r["eval_" + key] for r in ev if isinstance(r.get("eval_" + key), (int, float))]
        if xe:
            a.plot(xe, ye, "o-", label="validation", color="tab:orange")
        a.set_title(title)
        a.set_xlabel("step")
        a.legend()
    xs = [r["step"] for r in train if isinstance(r.get("learning_rate"), (int, float))]
    ax[2].plot(xs, [r["learning_rate"] for r in train
                    if isinstance(r.get("learning_rate"), (int, float))], color="tab:green")
    ax[2].set_title("learning rate")
    ax[2].set_xlabel("step")
    fig.tight_layout()
    return fig


def per_round(group, key=METRIC):
    out = []
    for r in group.get("rounds", []):
        m = r.get(key) or {}
        out.append(m.get("p") if isinstance(m.get("p"), (int, float)) else float("nan"))
    return out


def fig_detection(plt, rep):
    fig, ax = plt.subplots(figsize=(7, 4))
    rankers = rep.get("rankers", [])
    for rk in rankers:
        ys = per_round(rk.get("groups", {}).get("all", {}))
        name = rk.get("ranker", "?")
        style = {"linewidth": 2.5, "color": "black"} if name == "detector" else {"linewidth": 1}
        ax.plot(range(len(ys)), ys, "o-", label=name, **style)
    orc = rep.get("oracle")
    if isinstance(orc, dict):
        ys = per_round(orc.get("groups", {}).get("all", {}))
        ax.plot(range(len(ys)), ys, "--", color="grey", label="oracle")
    n = max([len(per_round(rk.get("groups", {}).get("all", {}))) for rk in rankers] + [1])
    ax.set_xticks(range(n))
    ax.set_xlabel("round")
    ax.set_ylabel("detection accuracy (agents)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("detection per round (all debates)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def fig_scores(plt, items):
    by = {}
    for r in items:
        try:
            s = float(r["score"])
        except (KeyError, ValueError):
            continue
        if math.isfinite(s):
            by.setdefault(r.get("ranker", "?"), {}).setdefault(r.get("adversarial") == "1",
                                                               []).append(s)
    names = sorted(by)
    fig, ax = plt.subplots(1, len(names), figsize=(3.6 * len(names), 3.2), squeeze=False)
    for a, name in zip(ax[0], names):
        for adv, color, label in ((False, "tab:blue", "honest"), (True, "tab:red", "adversarial")):
            v = by[name].get(adv, [])
            if v:
                a.hist(v, bins=30, alpha=0.6, color=color, label=label)
        a.set_title(name)
        a.set_xlabel("score")
        a.legend(fontsize=7)
    fig.tight_layout()
    return fig


def main(run):
    inputs = {
        "training": os.path.join(run, "train", "metrics.jsonl"),
        "detection": os.path.join(run, "eval", "report.json"),
        "scores": os.path.join(run, "eval", "items.csv"),
    }
    captions = {
        "training": "Training curves: loss and pairwise accuracy per step (validation points "
                    "where evaluated) and the learning rate (train/metrics.jsonl).",
        "detection": "Detection accuracy of the agents per round for every ranker, the oracle "
                     "(dashed) and the trained detector (black) (eval/report.json).",
        "scores": "Scores of adversarial and honest messages per ranker (eval/items.csv).",
    }
    summary = ""
    sp = os.path.join(run, "summary.txt")
    if os.path.exists(sp):
        with open(sp, encoding="utf-8") as f:
            summary = f.read()
    figs, note = [], ""
    # matplotlib's notes (a font cache built on first use) would follow `sentinel run`'s
    # summary on the terminal: only its errors are shown
    logging.getLogger("matplotlib").setLevel(logging.ERROR)
    try:
        import matplotlib
        matplotlib.use("Agg")
        matplotlib.rcParams["svg.hashsalt"] = "sentinel"
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
        note = "No figures: matplotlib is not installed for %s; %s, then run `sentinel report " \
               "%s`." % (sys.executable, INSTALL, run)
        print("sentinel report: " + note, file=sys.stderr)
    if plt is not None:
        os.makedirs(os.path.join(run, "figures"), exist_ok=True)
        for name in ("training", "detection", "scores"):
            path = inputs[name]
            if not os.path.exists(path):
                continue
            if name == "training":
                rows = load_jsonl(path)
                fig = fig_training(plt, rows) if rows else None
            elif name == "detection":
                with open(path, encoding="utf-8") as f:
                    fig = fig_detection(plt, json.load(f))
            else:
                with open(path, encoding="utf-8", newline="") as f:
                    items = list(csv.DictReader(f))
                fig = fig_scores(plt, items) if items else None
            if fig is None:
                continue
            data = png_bytes(fig)
            plt.close(fig)
            out = os.path.join(run, "figures", name + ".png")
            with open(out + ".tmp", "wb") as f:
                f.write(data)
            os.replace(out + ".tmp", out)
            figs.append((name, data))
    parts = ["<!DOCTYPE html>", "<html><head><meta charset=\"utf-8\">",
             "<title>sentinel run report</title>",
             "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
             "img{max-width:100%}pre{background:#f4f4f4;padding:1em;overflow-x:auto}</style>",
             "</head><body>", "<h1>sentinel run report</h1>"]
    if note:
        parts.append("<p><strong>%s</strong></p>" % html.escape(note))
    for name, data in figs:
        parts.append("<h2>%s</h2>" % name)
        parts.append("<p>%s</p>" % html.escape(captions[name]))
        parts.append("<img alt=\"%s\" src=\"data:image/png;base64,%s\">"
                     % (name, base64.b64encode(data).decode("ascii")))
    if summary:
        parts.append("<h2>summary</h2>")
        parts.append("<pre>%s</pre>" % html.escape(summary))
    parts.append("</body></html>")
    out = os.path.join(run, "report.html")
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(parts) + "\n")
    os.replace(out + ".tmp", out)
    print("report: %d figure(s) -> %s" % (len(figs), out))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: report.py RUN_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
