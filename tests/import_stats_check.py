#!/usr/bin/env python3
"""`sentinel stats --majority source` on imported Collaboration-attack runs against the per-round
majority-vote accuracies the source repository publishes.

usage: import_stats_check.py STATS.json vendored|full

The numbers below are copied from the authors' notebook multiagent_debate/plots_paper.ipynb
(github.com/amayuelas/multi-agent-attack, commit ce8ab36f7621914a51cb3b148368028a9979bd81):
the `results[...]["majority_vote_acc"]` arrays (per round, attacked GPT-3.5 runs) and the bar
data `gpt_3_5`, `llama3_instruct`, `qwen_chat` (clean) and `attack_gpt_3_5`,
`attack_llama3_instruct`, `attack_qwen_chat` (attacked), which are final-round (round 3)
majority accuracies. Each is the mean over the run's replicate files. Checked here: the
`rep_mean` of accuracy.panel.rR under --majority source, and for final-round numbers also of
accuracy.final_recorded (the importer records the source's final vote).
"""
import json
import sys

E = "collab-attack."
# experiment -> (per-round list or None, final-round value, replicates needed)
PUBLISHED_VENDORED = {
    E + "mmlu.adv_100_3_3_1-gpt-3.5-turbo-gpt-3.5-turbo": ([0.556, 0.434, 0.26], 0.260),
    E + "medmcqa.adv_100_3_3_1-gpt-3.5-turbo-gpt-3.5-turbo": ([0.432, 0.316, 0.232], 0.232),
    E + "truthfulqa.adv_100_3_3_1-gpt-3.5-turbo-gpt-3.5-turbo": (None, 0.214),
    E + "mmlu.100_3_3_gpt-3.5-turbo": (None, 0.65),
    E + "medmcqa.100_3_3_gpt-3.5-turbo": (None, 0.544),
    E + "truthfulqa.100_3_3": (None, 0.572),
}
PUBLISHED_FULL = dict(PUBLISHED_VENDORED)
PUBLISHED_FULL.update({
    E + "truthfulqa.adv_100_3_3_1": ([0.472, 0.344, 0.216], 0.216),
    E + "mmlu.100_3_3_meta-llama-3-8B-Instruct": (None, 0.538),
    E + "medmcqa.100_3_3_meta-llama-3-8B-Instruct": (None, 0.44),
    E + "mmlu.100_3_3_Qwen1.5-14B-Chat": (None, 0.636),
    E + "medmcqa.100_3_3_Qwen1.5-14B-Chat": (None, 0.36),
    E + "truthfulqa.100_3_3_Qwen1.5-14B-Chat": (None, 0.482),
    E + "mmlu.adv_100_3_3_1-Meta-Llama-3-8B-Instruct-Meta-Llama-3-8B-Instruct": (None, 0.188),
    E + "medmcqa.adv_100_3_3_1-Meta-Llama-3-8B-Instruct-Meta-Llama-3-8B-Instruct": (None, 0.11),
    E + "mmlu.adv_100_3_3_1-Qwen1.5-14B-Chat-Qwen1.5-14B-Chat": (None, 0.358),
    E + "medmcqa.adv_100_3_3_1-Qwen1.5-14B-Chat-Qwen1.5-14B-Chat": (None, 0.168),
    E + "truthfulqa.adv_100_3_3_1-Qwen1.5-14B-Chat-Qwen1.5-14B-Chat": (None, 0.324),
})


def main():
    stats = json.load(open(sys.argv[1]))
    table = PUBLISHED_FULL if sys.argv[2] == "full" else PUBLISHED_VENDORED
    if stats.get("majority") != "source":
        print("expected a stats run with --majority source")
        return 1
    rows = {}
    for r in stats["rows"]:
        rows[(r["group"].get("experiment"), r["metric"])] = r
    bad = 0
    n = 0
    for exp, (per_round, final) in sorted(table.items()):
        want = {}
        if per_round:
            for i, v in enumerate(per_round):
                want["accuracy.panel.r%d" % i] = v
        want["accuracy.panel.r2"] = final
        want["accuracy.final_recorded"] = final
        for metric, v in sorted(want.items()):
            row = rows.get((exp, metric))
            got = row and row.get("rep_mean")
            n += 1
            if got is None or abs(got - v) > 5e-4 or row.get("rep_n") != 5:
                bad += 1
                print("MISMATCH %s %s: got %s (over %s replicates), published %.3f" % (
                    exp, metric, got, row and row.get("rep_n"), v))
    if sys.argv[2] == "full":
        # the legacy all-adversary file has no honest slot: honest metrics are undefined, not 0
        r = rows.get((E + "mmlu.adv_mmlu_100_3_3_3", "accuracy.honest.r0"))
        if not r or r["value"] is not None or r["n"] != 0:
            bad += 1
            print("MISMATCH adv_mmlu_100_3_3_3 accuracy.honest.r0 should be undefined: %s" % r)
    print("import_stats_check: %d published numbers checked, %d mismatches" % (n, bad))
    return 1 if bad or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
