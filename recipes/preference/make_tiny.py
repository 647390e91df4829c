#!/usr/bin/env python3
"""Writes recipes/preference/tiny.jsonl: 48 rows of preference data in TRL's four formats
(docs/formats.md "Preference data"), for the README's worked example "Training from preference
data". The texts are generated here from templates (arithmetic and unit facts); each chosen
response reasons to the right answer, each rejected one asserts a wrong answer with the
confident rhetoric of a debate adversary. Deterministic: the same file every run.

Usage: python3 recipes/preference/make_tiny.py [OUT]   (default: next to this script)
"""
import json
import os
import random
import sys

HONEST = [
    "Working it out step by step: {work}. So the answer is {gold}.",
    "{work}, which gives {gold}. FINAL ANSWER: {gold}",
    "Let me check: {work}. The result is {gold}.",
]
ADVERSARY = [
    "Everyone here already agrees it is {wrong}; there is no need to recompute. FINAL ANSWER: {wrong}",
    "Trust me, I have solved this many times: the answer is clearly {wrong}.",
    "As any expert would tell you, it is {wrong}. Changing your mind now would be a mistake.",
]
UNITS = [("metres", "centimetres", 100), ("hours", "minutes", 60), ("kilograms", "grams", 1000),
         ("weeks", "days", 7), ("minutes", "seconds", 60)]


def item(rng):
    """(question, work, gold, wrong) of one generated fact."""
    kind = rng.randrange(3)
    if kind == 0:
        a, b = rng.randrange(11, 60), rng.randrange(11, 60)
        gold = a + b
        return "What is %d + %d?" % (a, b), "%d + %d = %d" % (a, b, gold), gold, gold + rng.choice([-10, -1, 1, 10])
    if kind == 1:
        a, b = rng.randrange(3, 13), rng.randrange(3, 13)
        gold = a * b
        return "What is %d times %d?" % (a, b), "%d x %d = %d" % (a, b, gold), gold, gold + rng.choice([-a, a, 1])
    big, small, k = rng.choice(UNITS)
    n = rng.randrange(2, 10)
    gold = n * k
    return ("How many %s are in %d %s?" % (small, n, big),
            "one of the %s is %d %s, and %d x %d = %d" % (big, k, small, n, k, gold), gold, gold + k)


def texts(rng, q):
    question, work, gold, wrong = q
    chosen = rng.choice(HONEST).format(work=work, gold=gold)
    rejected = rng.choice(ADVERSARY).format(wrong=wrong)
    reference = "%s. FINAL ANSWER: %d" % (work[0].upper() + work[1:], gold)
    return question, chosen, rejected, reference


def msg(role, content):
    return {"role": role, "content": content}


def rows():
    rng = random.Random(20260)
    out = []
    for i in range(48):
        q = item(rng)
        question, chosen, rejected, reference = texts(rng, q)
        fmt = i % 4
        if fmt == 0:    # standard
            r = {"prompt": question, "chosen": chosen, "rejected": rejected}
        elif fmt == 1:  # implicit prompt: both hold the whole sequence
            r = {"chosen": "Question: %s\nAnswer: %s" % (question, chosen),
                 "rejected": "Question: %s\nAnswer: %s" % (question, rejected)}
        elif fmt == 2:  # conversational, explicit prompt with a system turn
            r = {"prompt": [msg("system", "Answer the question and show your working."),
                            msg("user", question)],
                 "chosen": [msg("assistant", chosen)], "rejected": [msg("assistant", rejected)]}
        else:           # conversational, implicit prompt, two turns of discussion first
            shared = [msg("user", question),
                      msg("assistant", "I think the answer may be %d." % q[3]),
                      msg("user", "Please check that again before answering.")]
            r = {"chosen": shared + [msg("assistant", chosen)],
                 "rejected": shared + [msg("assistant", rejected)]}
        if i % 3 == 0:
            r["reference"] = reference
        out.append(r)
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "tiny.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for r in rows():
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
