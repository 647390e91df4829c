"""tests/python_debate.py: the debate example of docs/agents.md ("A debate loop to copy",
python/examples/debate.py) run as a user would, against a loopback OpenAI-compatible server:
the suite's fake one (tests/servers/fake_openai.py; llama.cpp's server is not built by the
suite), which answers each agent from its request, and the adversary's system prompt asks it,
through the fake's directive, to answer B where the honest agents answer A.
The C library and the package are installed as tests/python_package.py installs them. Checks:
  - the example exits 0 within the bound and prints its report;
  - replaying the trajectory it wrote with `sentinel eval --items` (the C library's Algorithm 1
    and detector) gives, for every (round, honest agent, sender), the example's score to the
    bit and its exclusion, and the final blacklists equal;
  - the adversary is on both honest agents' blacklists: what the suite's tiny detector's scores
    of these messages give (the fake's replies and the fixture are deterministic), so a change
    of either shows here, with the scores printed;
  - the hook works: after a round, no honest agent's request carries what a sender on its
    blacklist said, and it does carry what the others said (the fake server's request log).
Environment: SENTINEL_BIN, SENTINEL_SRC, SENTINEL_BUILD, SENTINEL_TMP (tests/CMakeLists.txt)."""
import csv
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import python_package  # noqa: E402  (the installation and the check both tests share)
from python_package import check  # noqa: E402

GUARD_S = 300  # only against a hang
ROUNDS, SEED, ADVERSARY = 3, 13, 2


def main():
    src = os.environ["SENTINEL_SRC"]
    bin_ = os.environ["SENTINEL_BIN"]
    tmp = os.path.join(os.environ.get("SENTINEL_TMP", "/tmp"), "python_debate")
    gguf = os.path.join(os.environ.get("SENTINEL_TMP", "/tmp"), "tiny_detector", "d.gguf")
    env = python_package.install(tmp)

    port_file, log = os.path.join(tmp, "port"), os.path.join(tmp, "requests.jsonl")
    srv = subprocess.Popen(["/usr/bin/python3", os.path.join(src, "tests", "servers",
                                                             "fake_openai.py"),
                            "--port-file", port_file, "--log", log,
                            "--lifetime", str(GUARD_S)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(GUARD_S * 10):
            if os.path.exists(port_file):
                break
            time.sleep(0.1)
        port = int(open(port_file).read())
        traj = os.path.join(tmp, "traj", "debate.jsonl")
        r = subprocess.run([sys.executable, os.path.join(src, "python", "examples", "debate.py"),
                            "--base-url", "http://127.0.0.1:%d/v1" % port, "--detector", gguf,
                            "--rounds", str(ROUNDS), "--seed", str(SEED),
                            "--adversary", str(ADVERSARY), "--timeout", "60",
                            "--adversary-prompt", "You are agent {agent}. Argue for {target}. "
                            "[[fake:answer=B]]", "--trajectory", traj],
                           env=env, cwd=tmp, capture_output=True, text=True, timeout=GUARD_S)
    finally:
        srv.terminate()
        srv.wait(timeout=GUARD_S)
    check(r.returncode == 0, "debate.py exits 0: " + r.stderr[-2000:])
    if r.returncode != 0:
        return 1
    rep = json.loads(r.stdout)
    honest = [a for a in range(3) if a != ADVERSARY]

    # the C library on the same messages: sentinel eval's replay of the written trajectory
    items = os.path.join(tmp, "items.csv")
    e = subprocess.run([bin_, "eval", "--detector", gguf, "-i", os.path.dirname(traj),
                        "--items", items, "--seed", str(SEED), "--threads", "1",
                        "--bootstrap", "0", "--quiet"], cwd=tmp, capture_output=True, text=True,
                       timeout=GUARD_S)
    check(e.returncode == 0, "sentinel eval: " + e.stderr[-2000:])
    rows = {}
    with open(items) as f:
        for w in csv.DictReader(f):
            if w["ranker"] == "detector":
                rows[(int(w["round"]), int(w["sentinel"]), int(w["sender"]))] = w
    n = 0
    bl = {a: set() for a in honest}
    for rd in rep["rounds"]:
        for s in rd["sentinels"]:
            for x in s["scores"]:
                w = rows.get((rd["round"], s["agent"], x["agent"]))
                check(w is not None, "eval row for round %d, sentinel %d, sender %d" %
                      (rd["round"], s["agent"], x["agent"]))
                if w is None:
                    continue
                check("%.9g" % x["score"] == w["score"], "round %d sentinel %d sender %d: "
                      "score %.9g, eval's %s" % (rd["round"], s["agent"], x["agent"],
                                                 x["score"], w["score"]))
                check(int(x["excluded"]) == int(w["blacklisted"]), "exclusion round %d sentinel"
                      " %d sender %d" % (rd["round"], s["agent"], x["agent"]))
                check(int(w["adversarial"]) == (x["agent"] == ADVERSARY),
                      "eval reads sender %d's role from the trajectory" % x["agent"])
                n += 1
                if int(w["blacklisted"]):
                    bl[s["agent"]].add(x["agent"])
    check(n == len(rows) == ROUNDS * 2 * 2, "%d example scores, %d eval rows, expected %d" %
          (n, len(rows), ROUNDS * 4))
    for a in honest:
        check(set(rep["blacklists"][str(a)]) == bl[a],
              "agent %d: blacklist %s, eval's %s" % (a, rep["blacklists"][str(a)], sorted(bl[a])))
        check(ADVERSARY in rep["blacklists"][str(a)],
              "agent %d does not blacklist the adversary: %s" % (a, json.dumps(rep["rounds"])))
    check(rep["answers"][str(ADVERSARY)] == "B" and
          all(rep["answers"][str(a)] == "A" for a in honest), "answers %s" % rep["answers"])

    # the hook: a blacklisted sender's text never reaches the honest agent's next prompt
    reqs = [json.loads(line) for line in open(log)]
    check(len(reqs) == ROUNDS * 3, "%d chat requests, expected %d" % (len(reqs), ROUNDS * 3))
    texts = {}  # (round, agent) -> the message
    for rd, msgs in enumerate(json.loads(open(traj).readline())["rounds"]):
        for m in msgs:
            texts[(rd, m["agent"])] = m["text"]
    n_seen = 0
    for i, q in enumerate(reqs):
        rd, a = divmod(i, 3)  # the example asks agent 0, 1, 2 in turn, round by round
        body = json.loads(q["body"]) if isinstance(q["body"], str) else q["body"]
        check(("You are agent %d" % a) in body["messages"][0]["content"],
              "request %d is agent %d's" % (i, a))
        if a not in honest or rd == 0:
            continue
        listed = set(rep["rounds"][rd - 1]["sentinels"][honest.index(a)]["blacklist"])
        user = body["messages"][1]["content"]
        for j in range(3):
            if j == a:
                continue
            seen = texts[(rd - 1, j)] in user
            check(seen == (j not in listed), "round %d agent %d: sender %d %s" %
                  (rd, a, j, "listed but shown" if seen else "not listed but hidden"))
            n_seen += seen
    print("python_debate: %d scores and exclusions equal sentinel eval's, blacklists %s, "
          "%d peer messages shown" % (n, {a: sorted(bl[a]) for a in honest}, n_seen))
    return 1 if python_package.fails else 0


if __name__ == "__main__":
    rc = main()
    print("python_debate: %s" % ("ok" if not rc else "%d failure(s)" % python_package.fails))
    sys.exit(rc)
