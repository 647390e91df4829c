#!/usr/bin/env python3
"""Independent check of sentinel's n-gram baseline (eval/detect_ngram.c; docs/eval.md
"Baselines", "ngram") with scikit-learn, for tests/test_eval_ngram_sklearn.c.

The features are re-derived here from the texts with the documented tokenisation, written
afresh in Python (a token is a run of ASCII letters, digits and bytes >= 0x80, ASCII-lower-cased,
or one other printable ASCII character; the terms are each token and each pair of neighbouring
tokens "a b"), vectorised by TfidfVectorizer(use_idf=False, sublinear_tf=True, norm="l2")
(x = 1 + ln tf, divided by the true L2 norm), and fitted by
LogisticRegression(C, class_weight="balanced") twice: with its default solver "lbfgs" (the
accuracy figure) and with "newton-cg" at tol 1e-8, the tight reference for the logits (scipy's
L-BFGS-B behind "lbfgs" also stops on a relative decrease of the objective below 2.2e-9, which
can leave its logits 1e-4 away from the minimiser).

Input: DIR/ngram_set.json, written by the C test:
  {"train": [{"text", "label"}...], "test": [...],
   "terms": [[term...] per train text, by sn_ngram_terms],
   "fits": [{"c", "logit": [per test text]}...]}
Checks, per C: our test accuracy within 0.01 of scikit-learn's (lbfgs; the acceptance bound
of the baseline), and our logits within 1e-4 of the newton-cg decision function (both minimise
one strictly convex objective, so they meet up to the solvers' tolerances: ours stops at a mean
gradient of 1e-7, whose error in the weights is at most that over the objective's smallest
curvature, 1/(C n)); also that our terms equal the ones derived here. Prints the figures. Exit 0 pass, 1 fail, 77 when
scikit-learn is not importable (ctest skips).
Usage: /usr/bin/python3 tests/ref/ngram_sklearn.py DIR
"""
import json
import math
import re
import sys

try:
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
except ImportError as e:  # Debian: apt-get install python3-sklearn (scripts/deps.sh)
    print("SKIP: scikit-learn is not importable (%s)" % e)
    sys.exit(77)

TOKEN = re.compile(rb"[A-Za-z0-9\x80-\xff]+|[!-/:-@\[-`{-~]")


def terms(text):
    toks = [t.lower().decode("utf-8", "surrogateescape") for t in TOKEN.findall(text.encode("utf-8"))]
    out = []
    for i, t in enumerate(toks):
        out.append(t)
        if i:
            out.append(toks[i - 1] + " " + t)
    return out


def main():
    with open(sys.argv[1] + "/ngram_set.json", encoding="utf-8") as f:
        s = json.load(f)
    train_x = [e["text"] for e in s["train"]]
    train_y = np.array([1 if e["label"] else 0 for e in s["train"]])
    test_x = [e["text"] for e in s["test"]]
    test_y = np.array([1 if e["label"] else 0 for e in s["test"]])
    bad = 0
    for i, (text, ours) in enumerate(zip(train_x, s["terms"])):
        if terms(text) != ours:
            print("FAIL terms of train text %d %r:\n  ours   %r\n  python %r" % (i, text, ours, terms(text)))
            bad += 1
            if bad > 3:
                break
    vec = TfidfVectorizer(analyzer=terms, use_idf=False, sublinear_tf=True, norm="l2")
    Xtr = vec.fit_transform(train_x)
    Xte = vec.transform(test_x)
    print("set: %d train texts (%d trusted), %d test texts, %d terms"
          % (len(train_x), int(train_y.sum()), len(test_x), Xtr.shape[1]))
    for fit in s["fits"]:
        c = fit["c"]
        ours = np.array(fit["logit"])
        lr = LogisticRegression(C=c, class_weight="balanced", solver="lbfgs", tol=1e-10,
                                max_iter=100000).fit(Xtr, train_y)
        nt = LogisticRegression(C=c, class_weight="balanced", solver="newton-cg", tol=1e-8,
                                max_iter=1000).fit(Xtr, train_y)
        theirs, tight = lr.decision_function(Xte), nt.decision_function(Xte)
        acc_ours = float(np.mean((ours > 0) == (test_y == 1)))
        acc_sk = float(np.mean((theirs > 0) == (test_y == 1)))
        agree = float(np.mean((ours > 0) == (theirs > 0)))
        dmax = float(np.max(np.abs(ours - tight)))
        print("C = %g: test accuracy ours %.4f, scikit-learn (lbfgs) %.4f, difference %.4f; "
              "predictions agree on %.4f; max |logit difference| %.2e to newton-cg, %.2e to lbfgs"
              % (c, acc_ours, acc_sk, abs(acc_ours - acc_sk), agree, dmax,
                 float(np.max(np.abs(ours - theirs)))))
        if not abs(acc_ours - acc_sk) <= 0.01:
            print("FAIL C = %g: accuracy differs by more than 0.01" % c)
            bad += 1
        if not dmax <= 1e-4 or math.isnan(dmax):
            print("FAIL C = %g: logits differ from newton-cg's by more than 1e-4" % c)
            bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
