"""tests/python_package.py: the Python package (python/, docs/agents.md "Python") under
/usr/bin/python3, installed as a user would: the C library into a temporary prefix
(`cmake --install`), the package with `pip install --no-build-isolation --no-index --target`.
Then, in a child process that loads the installed library:
  - Detector scores equal `sentinel score --exact` (the C library) to the bit: shared context,
    pairs and one pair; errors raise SentinelError with the library's message;
  - task_text, history_entry and Sentinel.context render what the C library renders;
  - a recorded debate replayed through Sentinel gives, for every (round, sentinel, sender), the
    score and exclusion of `sentinel eval --items` (debates from `sentinel simulate`);
  - ServeClient against `sentinel serve`: the same scores over HTTP, and a debate session with
    the same blacklists as the Python sentinels.
Environment: SENTINEL_BIN, SENTINEL_SRC, SENTINEL_BUILD, SENTINEL_TMP (tests/CMakeLists.txt)."""
import csv
import gzip
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

GUARD_S = 300  # only against a hang

fails = 0


def check(cond, what):
    global fails
    if not cond:
        fails += 1
        print("FAIL", what, file=sys.stderr)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def install(tmp):
    """The C library into tmp/prefix (`cmake --install`) and the package into tmp/site (pip,
    offline), as docs/agents.md "Python" says; returns the environment that loads both."""
    src = os.environ["SENTINEL_SRC"]
    build = os.environ["SENTINEL_BUILD"]
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    prefix = os.path.join(tmp, "prefix")
    subprocess.run(["cmake", "--install", build, "--prefix", prefix], check=True,
                   stdout=subprocess.DEVNULL)
    # pip builds in a copy: the source tree stays clean
    pysrc = os.path.join(tmp, "python-src")
    shutil.copytree(os.path.join(src, "python"), pysrc)
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                    "--quiet", "--target", os.path.join(tmp, "site"), pysrc], check=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(tmp, "site")
    libdir = [d for d in ("lib", "lib64", "lib/x86_64-linux-gnu")
              if os.path.exists(os.path.join(prefix, d, "libsentinel_detector.so.0"))]
    check(libdir, "libsentinel_detector.so.0 installed under " + prefix)
    # the installed library first, then whatever the environment already names (a machine
    # whose cJSON or OpenBLAS live outside the system paths)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        [os.path.join(prefix, libdir[0] if libdir else "lib")] +
        ([os.environ["LD_LIBRARY_PATH"]] if os.environ.get("LD_LIBRARY_PATH") else []))
    env.pop("SENTINEL_DETECTOR_LIB", None)
    return env


def parent():
    tmp = os.path.join(os.environ.get("SENTINEL_TMP", "/tmp"), "python_package")
    env = install(tmp)
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", tmp], env=env,
                       cwd=tmp, timeout=GUARD_S * 2)
    check(r.returncode == 0, "child checks")


def child(tmp):
    import sentinel_detector as sd
    bin_ = os.environ["SENTINEL_BIN"]
    gguf = os.path.join(os.environ.get("SENTINEL_TMP", "/tmp"), "tiny_detector", "d.gguf")
    check(sd.library_path() == "libsentinel_detector.so.0" and
          "site" in os.path.dirname(sd.__file__), "installed package and library in use")

    # scores against the C library (sentinel score, one OpenBLAS thread on both sides)
    det = sd.Detector(gguf, threads=1)
    ctx = "Question: 2+2?\nOptions:\nA. 3\nB. 4"
    resp = ["It is 4, so B. FINAL ANSWER: B", "Clearly A.", "héllo wörld, 3 or 4?"]
    lines = [json.dumps({"context": ctx, "responses": resp})]
    lines += [json.dumps({"context": c, "response": r})
              for c, r in [(ctx, resp[1]), ("other context", "other response")]]
    out = subprocess.run([bin_, "score", "--detector", gguf, "--jsonl", "-", "--exact",
                          "--threads", "1"], input="\n".join(lines) + "\n", text=True,
                         capture_output=True, timeout=GUARD_S)
    check(out.returncode == 0, "sentinel score: " + out.stderr)
    want = [f32(x) for x in out.stdout.split()]
    got = det.score_many(ctx, resp) + det.score_pairs([ctx, "other context"],
                                                      [resp[1], "other response"])
    check(len(want) == 5 and got == want, "scores %r vs sentinel score %r" % (got, want))
    check(det.score(ctx, resp[1]) == want[3], "one pair")
    try:
        sd.Detector(os.path.join(tmp, "nope.gguf"))
        check(False, "a missing GGUF raises")
    except sd.SentinelError as e:
        check("nope.gguf" in e.message and e.code != 0, "SentinelError message: " + e.message)

    # context helpers
    t = sd.task_text("2+2?", ["3", "4"])
    check(t == "Question: 2+2?\nOptions:\nA. 3\nB. 4", "task_text: %r" % t)
    check(sd.task_text("2+2?") == "Question: 2+2?", "task_text numeric")
    check(sd.extract_answer("So it is (B). FINAL ANSWER: B", 4) == "B", "extract_answer mc")
    check(sd.extract_answer("12/4 = 3. FINAL ANSWER: 3.0") == "3", "extract_answer numeric")
    check(sd.extract_answer("no idea", 4) is None, "extract_answer none")
    e = sd.history_entry(0, 3, "I am sure. It is 5. More text.\nFINAL ANSWER: 5", "5")
    check(e == "Round 1, agent 3 (answer 5): I am sure. It is 5.", "history_entry: %r" % e)

    # a recorded debate: Python sentinels against sentinel eval --items
    d = os.path.join(tmp, "debates")
    os.makedirs(d)
    with open(os.path.join(d, "r.json"), "w") as f:
        f.write(json.dumps({"simulate": {
            "endpoints": {"sim": {"kind": "sim", "competence": 0.7}},
            "defaults": {"dataset": {"kind": "synthetic", "n": 2, "seed": 5}, "backend": "sim",
                         "n_agents": 5, "rounds": 3, "seed": 3},
            "experiments": [{"name": "p", "scenario": "collaboration", "n_adversaries": 2,
                             "topology": "complete", "strategy": "simultaneous"}]}}))
    subprocess.run([bin_, "simulate", "--recipe", "r.json", "-o", "traj", "--progress", "none"],
                   cwd=d, check=True, capture_output=True, timeout=GUARD_S)
    seed = 13
    subprocess.run([bin_, "eval", "--detector", gguf, "-i", "traj", "--items", "items.csv",
                    "--seed", str(seed), "--threads", "1", "--bootstrap", "0", "--quiet"],
                   cwd=d, check=True, capture_output=True, timeout=GUARD_S)
    rows = {}
    with open(os.path.join(d, "items.csv")) as f:
        for r in csv.DictReader(f):
            if r["ranker"] == "detector":
                rows[(r["debate"], int(r["round"]), int(r["sentinel"]), int(r["sender"]))] = r
    n_matched = 0
    with gzip.open(os.path.join(d, "traj", "trajectories-0of1.jsonl.gz"), "rt") as f:
        for line in f:
            tr = json.loads(line)
            task = sd.task_text(tr["question"], tr.get("options") if tr["task"] == "mc" else None)
            ts = sd.tie_seed(seed, tr["id"])
            honest = [a["id"] for a in tr["agents"] if a["role"] == "honest"]
            sents = {k: sd.Sentinel(k, task, k=1, tie_seed=ts) for k in honest}
            for rd, msgs in enumerate(tr["rounds"]):
                for k, s in sents.items():
                    recv = [(m["agent"], m["text"]) for m in msgs if m["agent"] != k]
                    res = s.round(det, rd, recv)
                    for (j, _), sc, ex in zip(recv, res.scores, res.excluded):
                        w = rows.get((tr["id"], rd, k, j))
                        check(w is not None, "eval row %s %d %d %d" % (tr["id"], rd, k, j))
                        if w is None:
                            continue
                        check("%.9g" % sc == w["score"],
                              "score %.9g vs eval's %s" % (sc, w["score"]))
                        check(int(ex) == int(w["blacklisted"]), "exclusion %s %d %d %d" %
                              (tr["id"], rd, k, j))
                        n_matched += 1
                for s in sents.values():
                    for m in msgs:
                        s.add_history(rd, m["agent"], m["text"], m.get("answer"))
    check(n_matched == len(rows) and n_matched > 0,
          "%d of %d eval rows matched" % (n_matched, len(rows)))
    print("python_package: %d scores to the bit, %d eval rows matched" % (len(got), n_matched))

    # the server through the client
    errf = open(os.path.join(tmp, "serve_err.txt"), "w")
    srv = subprocess.Popen([bin_, "serve", "--detector", gguf, "--port", "0", "--threads", "1",
                            "--api-key", "k"], stderr=errf)
    port = 0
    for _ in range(GUARD_S * 10):
        text = open(os.path.join(tmp, "serve_err.txt")).read()
        if "ready" in text:
            port = int(text.split("127.0.0.1:")[1].split()[0])
            break
        time.sleep(0.1)
    check(port > 0, "sentinel serve started")
    try:
        c = sd.ServeClient("http://127.0.0.1:%d" % port, api_key="k")
        check(c.health() == {"status": "ok"}, "health")
        check([f32(x) for x in c.score(ctx, resp)] == want[:3], "scores over HTTP")
        rr = c.rerank(ctx, resp, top_n=2)
        check(len(rr) == 2 and f32(rr[0]["relevance_score"]) == max(want[:3]), "rerank")
        try:
            sd.ServeClient("http://127.0.0.1:%d" % port).score(ctx, resp)
            check(False, "no key: 401")
        except sd.ServeError as e:
            check(e.status == 401 and "API key" in e.message, "401 message")
        deb = c.debate(sentinels=[0, 1, 2], question="2+2?", seed=4)
        py = {k: sd.Sentinel(k, sd.task_text("2+2?"), tie_seed=4) for k in range(3)}
        texts = [["4. FINAL ANSWER: 4", "5! FINAL ANSWER: 5", "Four. FINAL ANSWER: 4"],
                 ["Still 4. FINAL ANSWER: 4", "5. FINAL ANSWER: 5", "4. FINAL ANSWER: 4"]]
        for rd, tx in enumerate(texts):
            rep = deb.round([{"agent": a, "text": t, "answer": str(4 + (a == 1))}
                             for a, t in enumerate(tx)])
            for s in rep["sentinels"]:
                k = s["agent"]
                res = py[k].round(det, rd, [(a, t) for a, t in enumerate(tx) if a != k])
                check([f32(x["score"]) for x in s["scores"]] == res.scores, "session scores")
                check(s["blacklist"] == py[k].blacklist, "session blacklist")
            for k in py:
                for a, t in enumerate(tx):
                    py[k].add_history(rd, a, t, str(4 + (a == 1)))
        deb.delete()
    finally:
        srv.send_signal(signal.SIGTERM)
        check(srv.wait(timeout=GUARD_S) == 0, "sentinel serve exits 0 on SIGTERM")
        errf.close()
    det.close()
    return fails


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        sys.exit(1 if child(sys.argv[2]) else 0)
    parent()
    print("python_package: %s" % ("ok" if not fails else "%d failure(s)" % fails))
    sys.exit(1 if fails else 0)
