#!/usr/bin/env python3
"""Fails when two source files of one built target need each other (docs/design.md §3).

A file A needs file B when A's object leaves a symbol undefined that B's object defines. A circle
(A needs B and B, directly or through others, needs A) means the two files are one idea split in
two, or share a helper that belongs in a file below both. The graph is read from the built
objects with `nm`, per target (a library, or an executable such as `sentinel`): every object under
BUILD/CMakeFiles/<target>.dir/. Only strong definitions count: the weak ones C++ templates and
inline functions leave in every object that uses them belong to no file.
Fails (exit 1) naming each circle as a chain of source files, with one symbol per step.
Usage: check_cycles.py BUILD_DIR   (default: $SENTINEL_BUILD)
       check_cycles.py --self-test [CC]   the checker finds a planted circle: on synthetic symbol
                                          tables, and, given a C compiler, on two objects it builds
"""
import os
import subprocess
import sys
import tempfile

# nm's one-letter types of a definition that the linker resolves other objects' references to
STRONG = set("TDBRGSC")


def read_symbols(obj):
    """(defined, undefined) symbol names of one object file, from nm -P."""
    out = subprocess.run(["nm", "-P", obj], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit("check_cycles: nm %s failed: %s" % (obj, out.stderr.strip()))
    defined, undefined = set(), set()
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in STRONG:
            defined.add(name)
    return defined, undefined


def source_of(target_dir, obj):
    """build/CMakeFiles/sn_data_core.dir/data/datasets.c.o -> data/datasets.c"""
    rel = os.path.relpath(obj, target_dir)
    return rel[:-2] if rel.endswith(".o") else rel


def edges_of(tables):
    """tables: {file: (defined, undefined)} -> {file: {other: symbol}}, the files each one needs."""
    owner = {}
    for f in sorted(tables):
        for s in tables[f][0]:
            owner.setdefault(s, f)
    edges = {f: {} for f in tables}
    for f in sorted(tables):
        for s in sorted(tables[f][1]):
            g = owner.get(s)
            if g is not None and g != f:
                edges[f].setdefault(g, s)
    return edges


def circles(edges):
    """Strongly connected components of more than one file (Tarjan, iterative), each as one
    closed chain [a, b, ..., a] through the component, found by breadth-first search."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = [0]
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(sorted(comp))
    chains = []
    for comp in comps:
        members = set(comp)
        start = comp[0]
        prev = {start: None}
        queue = [start]
        end = None
        while queue and end is None:
            nxt = []
            for v in queue:
                for w in sorted(edges[v]):
                    if w not in members:
                        continue
                    if w == start:
                        end = v
                        break
                    if w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if end is not None:
                    break
            queue = nxt
        path = [start]
        v = end
        while v is not None and v != start:
            path.append(v)
            v = prev[v]
        chain = [start] + list(reversed(path[1:])) + [start]
        chains.append((comp, chain))
    return chains


def describe(target, edges, comp, chain):
    steps = ["%s -(%s)-> " % (a, edges[a][b]) for a, b in zip(chain, chain[1:])]
    return ("%s: circle between %d files: %s%s" % (target, len(comp), "".join(steps), chain[-1])
            + ("" if len(comp) == len(chain) - 1 else " (all of them: %s)" % ", ".join(comp)))


def check_build(build):
    base = os.path.join(build, "CMakeFiles")
    if not os.path.isdir(base):
        raise SystemExit("check_cycles: %s has no CMakeFiles/; build first" % build)
    problems, n_targets, n_objects = [], 0, 0
    for entry in sorted(os.listdir(base)):
        if not entry.endswith(".dir"):
            continue
        target_dir = os.path.join(base, entry)
        tables = {}
        for d, dirs, names in os.walk(target_dir):
            dirs.sort()
            for name in sorted(names):
                if name.endswith(".o"):
                    obj = os.path.join(d, name)
                    tables[source_of(target_dir, obj)] = read_symbols(obj)
        if len(tables) < 2:
            continue
        n_targets += 1
        n_objects += len(tables)
        edges = edges_of(tables)
        for comp, chain in circles(edges):
            problems.append(describe(entry[:-4], edges, comp, chain))
    return problems, n_targets, n_objects


def self_test(cc):
    failures = []
    # synthetic tables: a -> b -> c -> a is a circle; d -> a is not part of it
    tables = {
        "x/a.c": ({"a_f"}, {"b_f", "printf"}),
        "x/b.c": ({"b_f"}, {"c_f"}),
        "x/c.c": ({"c_f"}, {"a_f"}),
        "x/d.c": ({"d_f"}, {"a_f"}),
    }
    found = circles(edges_of(tables))
    if [c for c, _ in found] != [["x/a.c", "x/b.c", "x/c.c"]] or \
            found[0][1] != ["x/a.c", "x/b.c", "x/c.c", "x/a.c"]:
        failures.append("synthetic a -> b -> c -> a: found %r" % found)
    del tables["x/c.c"]
    if circles(edges_of(tables)):
        failures.append("synthetic chain without a circle reported one")
    if cc:
        with tempfile.TemporaryDirectory() as tmp:
            tdir = os.path.join(tmp, "CMakeFiles", "sn_planted.dir", "planted")
            os.makedirs(tdir)
            srcs = {"one.c": "int two(int);\nint one(int x) { return x > 0 ? two(x - 1) : 0; }\n",
                    "two.c": "int one(int);\nint two(int x) { return x > 0 ? one(x - 1) : 1; }\n",
                    "three.c": "int one(int);\nint three(void) { return one(3); }\n"}
            for name, text in srcs.items():
                with open(os.path.join(tdir, name), "w") as f:
                    f.write(text)
                rc = subprocess.run([cc, "-c", "-o", os.path.join(tdir, name + ".o"),
                                     os.path.join(tdir, name)]).returncode
                if rc != 0:
                    failures.append("%s could not compile the planted %s" % (cc, name))
            problems, _, _ = check_build(tmp)
            if len(problems) != 1 or "planted/one.c" not in problems[0] \
                    or "planted/two.c" not in problems[0] or "three" in problems[0]:
                failures.append("planted one.c <-> two.c in built objects: found %r" % problems)
    for f in failures:
        print("check_cycles self-test FAILED: " + f)
    if not failures:
        print("check_cycles self-test: planted circles found%s" % (" (synthetic and built with %s)"
                                                                  % cc if cc else ""))
    return 1 if failures else 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        return self_test(sys.argv[2] if len(sys.argv) > 2 else None)
    build = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SENTINEL_BUILD")
    if not build:
        raise SystemExit("usage: check_cycles.py BUILD_DIR (or SENTINEL_BUILD=BUILD_DIR)")
    problems, n_targets, n_objects = check_build(build)
    for p in problems:
        print(p)
    if problems:
        print("check_cycles: %d circle(s); move what both files use into a file below both"
              % len(problems))
        return 1
    print("check_cycles: %d targets, %d objects, no circle between source files"
          % (n_targets, n_objects))
    return 0


if __name__ == "__main__":
    sys.exit(main())
