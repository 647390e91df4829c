#!/usr/bin/python3
"""tests/ref/read_shard.py: sentinel shards read by h5py with no code of ours
(docs/formats.md#shard, written by `sentinel build`).

Usage: read_shard.py SENTINEL_BIN WORKDIR

Writes a few hand-made trajectories and the demo tokenizer, runs `sentinel build`, then for
every shard in the manifest:
  * checks the manifest's SHA-256 of each shard with hashlib;
  * reads attributes, /text, /ids, /offsets and /meta with h5py and compares them with
    `sentinel inspect --json --all` (our reader) field by field;
  * checks the layout invariants on its own (offsets start at 0, never decrease, end at the
    ids length, every sequence <= max_len);
  * decodes every token sequence with its own byte-level BPE decoder built from the
    tokenizer.json vocabulary (GPT-2 bytes_to_unicode, written here) and checks that it is the
    ChatML rendering of sentinel-chatml/1: system turn, user turn starting with the task, and an
    assistant turn that ends with the end of the stored response text, then <|im_end|>\\n.
Exit 0 when everything matches, 1 with a message otherwise, 77 when h5py is missing.
"""
import hashlib
import json
import os
import subprocess
import sys

try:
    import h5py
    import numpy as np
except ImportError as e:  # pragma: no cover
    print("SKIP: %s (install python3-h5py)" % e)
    sys.exit(77)

FAIL = []


def check(cond, msg):
    if not cond:
        FAIL.append(msg)
        print("FAIL:", msg)


def bytes_to_unicode():
    """GPT-2's reversible byte <-> printable-unicode map used by ByteLevel BPE vocabularies."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def make_decoder(tokenizer_json):
    tj = json.load(open(tokenizer_json, encoding="utf-8"))
    u2b = bytes_to_unicode()
    table = {}
    for tok, i in tj["model"]["vocab"].items():
        table[i] = bytes(u2b[ch] for ch in tok)
    for at in tj.get("added_tokens", []):
        table[at["id"]] = at["content"].encode("utf-8")

    def decode(ids):
        return b"".join(table[int(i)] for i in ids).decode("utf-8")
    return decode


def trajectory(i, scenario):
    agents = [{"id": k, "role": "honest" if k < 3 else "adversary", "model": "sim",
               "backend": "sim", "persona": None} for k in range(4)]
    rounds = []
    for r in range(2):
        msgs = []
        for k in range(4):
            ans = "B" if k == 3 or (k == 2 and r == 1) else "A"
            text = ("Agent %d thinks about caf\u00e9 prices in round %d. " % (k, r)) * (1 + (k * 7 + i) % 9)
            text += "\u2211 of evidence.\nFINAL ANSWER: %s" % ans
            msgs.append({"agent": k, "text": text, "answer": ans, "parsed": True})
        rounds.append(msgs)
    return {
        "schema": "sentinel.trajectory/1", "id": "py-%d" % i, "experiment": scenario,
        "scenario": scenario, "dataset": "synthetic", "item_id": "item-%d" % i, "subject": None,
        "task": "mc", "question": "Which answer is right for question %d? \u00bfQu\u00e9?" % i,
        "options": ["first", "second", "third"], "gold": "A",
        "gold_explanation": None if i % 2 else "Because the first is right.",
        "adversarial_target": "B", "strategy": "simultaneous",
        "topology": {"name": "complete", "n_agents": 4, "edges": []}, "agents": agents,
        "rounds": rounds, "final": {"rule": "majority", "answer": "A", "correct": True},
        "seed": i, "replicate": 0}


def main():
    sentinel, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    traj = os.path.join(work, "traj.jsonl")
    with open(traj, "w", encoding="utf-8") as f:
        for i in range(8):
            f.write(json.dumps(trajectory(i, ["collaboration", "netsafe"][i % 2])) + "\n")
    tok = os.path.join(work, "tok.json")
    out = os.path.join(work, "shards")
    subprocess.run(["rm", "-rf", out], check=True)
    subprocess.run([sentinel, "tokenize", "--write-demo", tok], check=True)
    recipe = os.path.join(work, "recipe.json")
    with open(recipe, "w") as f:
        json.dump({"build": {"validation_fraction": 0.3, "test_fraction": 0.3}}, f)
    subprocess.run([sentinel, "build", "--recipe", recipe, "-i", traj, "-o", out,
                    "--tokenizer", tok, "--max-len", "256", "--shard-size", "30",
                    "--progress", "none"], check=True, stdout=subprocess.DEVNULL)
    decode = make_decoder(tok)
    manifest = json.load(open(os.path.join(out, "manifest.json")))
    check(manifest["schema"] == "sentinel.manifest/1" and manifest["complete"], "manifest")
    total = 0
    n_cut = 0
    for sh in manifest["shards"]:
        path = os.path.join(out, sh["file"])
        check(hashlib.sha256(open(path, "rb").read()).hexdigest() == sh["sha256"],
              "%s: sha256 differs from the manifest" % sh["file"])
        ours = json.loads(subprocess.run([sentinel, "inspect", "--json", "--all", path],
                                         check=True, capture_output=True).stdout)
        with h5py.File(path, "r") as f:
            a = f.attrs
            for k in ("schema", "tokenizer_hash", "template_id", "split"):
                check(a[k] == ours["attrs"][k], "%s: attr %s" % (path, k))
            for k in ("max_len", "vocab_size", "count", "shard_index"):
                check(int(a[k]) == ours["attrs"][k], "%s: attr %s" % (path, k))
            check(a["schema"] == "sentinel.tuples/1", "schema")
            check(a["template_id"] == "sentinel-chatml/1", "template")
            count, max_len = int(a["count"]), int(a["max_len"])
            check(count == sh["count"] and count == len(ours["tuples"]), "count")
            total += count
            texts = {k: f["text/" + k].asstr()[:] for k in
                     ("context", "chosen", "rejected", "reference")}
            meta_s = {k: f["meta/" + k].asstr()[:] for k in
                      ("scenario", "dataset", "trajectory_id", "item_id", "chosen_role",
                       "rejected_role", "rejected_kind", "split", "sha256")}
            meta_i = {k: f["meta/" + k][:] for k in ("round", "chosen_agent", "rejected_agent")}
            for field in ("chosen", "rejected", "reference"):
                ids = f["ids/" + field][:]
                off = f["offsets/" + field][:]
                check(ids.dtype == np.int32 and off.dtype == np.int64, "dtypes")
                check(len(off) == count + 1 and off[0] == 0 and off[-1] == len(ids) and
                      bool(np.all(np.diff(off) >= 0)) and bool(np.all(np.diff(off) <= max_len)),
                      "%s: offsets/%s invariants" % (path, field))
                check(int(f["meta/cut_history/" + field].shape[0]) == count, "cut_history")
                for i in range(count):
                    seq = ids[off[i]:off[i + 1]]
                    t = ours["tuples"][i]
                    check(seq.tolist() == t["ids"][field], "%s[%d]: ids/%s" % (path, i, field))
                    check(int(f["meta/cut_history/" + field][i]) == t["meta"]["cut_history"][field]
                          and int(f["meta/cut_response/" + field][i]) ==
                          t["meta"]["cut_response"][field], "cuts")
                    text = decode(seq)
                    resp = texts[field][i]
                    task = texts["context"][i].split("\n\nDiscussion so far:")[0]
                    check(text.startswith("<|im_start|>system\n"), "system turn")
                    check("<|im_end|>\n<|im_start|>user\n" + task in text,
                          "%s[%d]: the task is in the %s sequence" % (path, i, field))
                    tail = resp[-30:] + "<|im_end|>\n"
                    check(text.endswith("<|im_end|>\n<|im_start|>assistant\n" + resp +
                                        "<|im_end|>\n") or
                          ("<|im_start|>assistant\n[...] " in text and text.endswith(tail)),
                          "%s[%d]: %s sequence does not end with its response" % (path, i, field))
                    n_cut += "<|im_start|>assistant\n[...] " in text
            for i in range(count):
                t = ours["tuples"][i]
                for k in texts:
                    check(texts[k][i] == t["text"][k], "%s[%d]: text/%s" % (path, i, k))
                for k in meta_s:
                    check(meta_s[k][i] == t["meta"][k], "%s[%d]: meta/%s" % (path, i, k))
                for k in meta_i:
                    check(int(meta_i[k][i]) == t["meta"][k], "%s[%d]: meta/%s" % (path, i, k))
                check(meta_s["split"][i] == a["split"], "split")
                # the content hash of the four texts, recomputed
                h = hashlib.sha256()
                for k in ("context", "chosen", "rejected", "reference"):
                    b = texts[k][i].encode("utf-8")
                    h.update(len(b).to_bytes(8, "little") + b)
                check(h.hexdigest() == meta_s["sha256"][i], "%s[%d]: sha256" % (path, i))
    check(total == manifest["counts"]["total"] and total > 20, "total %d" % total)
    check(n_cut > 0, "no response was truncated; the test lost its teeth")
    check(len({s["split"] for s in manifest["shards"]}) >= 2, "one split only")
    print("%d tuples in %d shards checked with h5py; %d truncated responses"
          % (total, len(manifest["shards"]), n_cut))
    sys.exit(1 if FAIL else 0)


if __name__ == "__main__":
    main()
