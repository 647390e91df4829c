#!/usr/bin/env python3
"""Checks the direction of dependencies (docs/design.md §3) against the module table.

The table is docs/modules.txt, one line per module:
    name: folder [folder ...] | may-use: module [module ...] (external [external ...])
`*` in may-use allows every module. tests/, bench/ and fuzz/ may use every module.
Fails (exit 1, one line per finding with file:line) when
  - a source file includes a header of a module its own module may not use;
  - a source file includes an external library's header (libtorch, libcurl, HDF5, OpenBLAS) that
    its module's row does not list;
  - a C++ file lies outside aten/ (the C API over libtorch is the only C++);
  - a source file includes a project header in angle brackets (`#include <train/train.h>`);
  - a CMake library declared with sn_module(NAME DIRS ... DEPS ...) builds folders of another
    module, or links an sn_* library of a module it may not use. Libraries named
    sn_<module>_<part> are parts of <module>, and each has a row of its own, <module>_<part>, in
    docs/modules.txt and docs/design.md, naming its sources (the call's GLOBS or DIRS) and the
    libraries it may link;
  - a library's DEPS miss an sn_* library whose header its files include (directly or through
    the library's own headers), or name one whose headers none of its files reaches;
  - a comment in a source file (C, C++, CMake, shell, Python, scripts without an extension such
    as .ci/run) cites a repository file that does not exist, or a file of another project.
Usage: check_layout.py SOURCE_DIR
       check_layout.py --self-test   a fake tree passes; each planted violation fails
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

# external headers -> the name a row of the table uses for the library
EXTERNAL = [
    (re.compile(r"^(torch|ATen|c10|c10d|caffe2)/"), "libtorch"),
    (re.compile(r"^curl/"), "libcurl"),
    (re.compile(r"^(hdf5|H5)\w*\.h$"), "HDF5"),
    (re.compile(r"^(cblas|openblas\w*)\.h$"), "OpenBLAS"),
]
FREE_FOLDERS = ("tests", "bench", "fuzz")


def load_table(path):
    table = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.match(r"^([\w-]+):\s*(.*?)\s*\|\s*may-use:\s*(.*)$", line)
            if not m:
                sys.exit("%s:%d: expected 'name: folders | may-use: modules (externals)'" % (path, n))
            uses = m.group(3)
            ext = " ".join(re.findall(r"\(([^)]*)\)", uses)).split()
            mods = re.sub(r"\([^)]*\)", " ", uses).split()
            table[m.group(1)] = {"folders": m.group(2).split(), "uses": set(mods), "ext": set(ext),
                                 "line": n}
    # sn_<module>_<part> libraries have rows of their own, named <module>_<part>: their "folders"
    # are the DIRS or GLOBS of the library's sn_module() call, their may-use names libraries.
    for name, row in table.items():
        head = name.split("_", 1)[0]
        row["part_of"] = head if "_" in name and head in table and "_" not in head else None
    return table


def module_of(table, rel):
    best, best_len = None, -1
    for name, row in table.items():
        if row["part_of"]:
            continue
        for folder in row["folders"]:
            if (rel == folder or rel.startswith(folder + "/")) and len(folder) > best_len:
                best, best_len = name, len(folder)
    return best


def may_use(table, mod, other):
    uses = table[mod]["uses"]
    return other == mod or "*" in uses or other in uses


def check(root):
    """Every finding on the tree at root, one line each, and a summary for a clean tree."""
    table_path = os.path.join(root, "docs", "modules.txt")
    table = load_table(table_path)
    problems = []
    n_files = n_includes = 0
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "build")))
        for name in sorted(names):
            if not name.endswith((".c", ".h", ".cpp", ".hpp", ".cc")):
                continue
            rel = os.path.relpath(os.path.join(d, name), root)
            top = rel.split("/", 1)[0]
            if name.endswith((".cpp", ".hpp", ".cc")) and top != "aten":
                problems.append("%s:1: C++ outside aten/ (docs/design.md §3: aten/ is the only C++)"
                                % rel)
            if top in FREE_FOLDERS:
                continue
            mod = module_of(table, rel)
            if mod is None:
                if os.path.dirname(rel):
                    problems.append("%s:1: folder '%s' is in no row of %s"
                                    % (rel, os.path.dirname(rel), "docs/modules.txt"))
                continue
            n_files += 1
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                for n, line in enumerate(f, 1):
                    m = re.match(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', line)
                    if not m:
                        continue
                    n_includes += 1
                    inc = m.group(2)
                    if m.group(1) == '"':
                        local = os.path.join(os.path.dirname(rel), inc)
                        target = inc if os.path.exists(os.path.join(root, inc)) else local
                        other = module_of(table, os.path.normpath(target))
                        if other and not may_use(table, mod, other):
                            problems.append("%s:%d: includes \"%s\": module '%s' may not use '%s' "
                                            "(docs/modules.txt line %d)"
                                            % (rel, n, inc, mod, other, table[mod]["line"]))
                        continue
                    if module_of(table, os.path.normpath(inc)) is not None and \
                            os.path.exists(os.path.join(root, inc)):
                        problems.append("%s:%d: includes <%s>: a project header is included with "
                                        "quotes, \"%s\" (angle brackets are for system and "
                                        "external headers)" % (rel, n, inc, inc))
                        continue
                    for pattern, lib in EXTERNAL:
                        if pattern.search(inc) and "*" not in table[mod]["uses"] \
                                and lib not in table[mod]["ext"]:
                            problems.append("%s:%d: includes <%s>: module '%s' may not use %s "
                                            "(docs/modules.txt line %d)"
                                            % (rel, n, inc, mod, lib, table[mod]["line"]))

    # The human-readable table of docs/design.md §3 says the same as docs/modules.txt.
    design = os.path.join(root, "docs", "design.md")
    seen_rows = set()
    with open(design, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 4 or cells[0] not in table:
                continue
            seen_rows.add(cells[0])
            row = table[cells[0]]
            if row["part_of"]:  # a library's sources: `data/shard*.c`, `data/sim/`
                folders = {f.rstrip("/") for f in re.findall(r"`([\w/*.-]+)`", cells[1])}
            else:
                folders = set(re.findall(r"`([\w/]+)/`", cells[1]))
            uses = cells[3].replace(",", " ").split()
            mods = {u for u in uses if u in table}
            want = {u for u in row["uses"] if u != "*"}
            if folders != set(row["folders"]):
                problems.append("docs/design.md:%d: module '%s' folders %s, docs/modules.txt says %s"
                                % (n, cells[0], sorted(folders), sorted(row["folders"])))
            if "*" not in row["uses"] and mods != want:
                problems.append("docs/design.md:%d: module '%s' may use %s, docs/modules.txt says %s"
                                % (n, cells[0], sorted(mods), sorted(want)))
    for name in sorted(set(table) - seen_rows):
        problems.append("docs/design.md: no row for module '%s' of docs/modules.txt" % name)

    # CMake libraries: sn_module(NAME DIRS ... DEPS ...), one row each
    n_libs = 0
    declared = set()
    with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
        text = f.read()
    for m in re.finditer(r"^\s*sn_module\(([^)]*)\)", text, re.M):
        lineno = text.count("\n", 0, m.start()) + 1
        args = re.sub(r"#[^\n]*", "", m.group(1)).split()
        if not args or args[0] == "name":
            continue
        lib = args[0]
        mod = lib if lib in table else next((t for t in table if lib.startswith(t + "_")), None)
        if mod is None:
            problems.append("CMakeLists.txt:%d: library sn_%s belongs to no module of "
                            "docs/modules.txt" % (lineno, lib))
            continue
        declared.add(lib)
        part = table[lib] if lib in table and table[lib]["part_of"] else None
        if part:
            mod = part["part_of"]
            srcs = [a for a in args[1:args.index("DEPS")] if a not in ("DIRS", "GLOBS")] \
                if "DEPS" in args else []
            if "GLOBS" in args:
                srcs = [a for a in args[args.index("GLOBS") + 1:args.index("DEPS")]]
            if sorted(srcs) != sorted(part["folders"]):
                problems.append("CMakeLists.txt:%d: sn_%s builds %s, its row in docs/modules.txt "
                                "(line %d) says %s" % (lineno, lib, sorted(srcs), part["line"],
                                                       sorted(part["folders"])))
            for a in args[args.index("DEPS") + 1:] if "DEPS" in args else []:
                if a.startswith("sn_") and a[3:] not in part["uses"] and "*" not in part["uses"]:
                    problems.append("CMakeLists.txt:%d: sn_%s links %s, which its row in "
                                    "docs/modules.txt (line %d) does not list"
                                    % (lineno, lib, a, part["line"]))
        elif lib != mod:
            problems.append("CMakeLists.txt:%d: library sn_%s, a part of module '%s', has no row "
                            "of its own in docs/modules.txt" % (lineno, lib, mod))
        n_libs += 1
        section = None
        for a in args[1:]:
            if a in ("DIRS", "DEPS", "SOURCES", "GLOBS"):
                section = a
                continue
            if section in ("DIRS", "SOURCES", "GLOBS"):
                owner = module_of(table, a.replace("${CMAKE_SOURCE_DIR}/", "").rstrip("/"))
                if owner != mod:
                    problems.append("CMakeLists.txt:%d: sn_%s (module '%s') builds '%s', which "
                                    "belongs to '%s'" % (lineno, lib, mod, a, owner))
            elif section == "DEPS" and a.startswith("sn_"):
                dep = a[3:]
                other = dep if dep in table else next((t for t in table if dep.startswith(t + "_")),
                                                      None)
                if other in table and table[other]["part_of"]:
                    other = table[other]["part_of"]
                if other is None or not may_use(table, mod, other):
                    problems.append("CMakeLists.txt:%d: sn_%s (module '%s') links %s: module '%s' "
                                    "may not use '%s'" % (lineno, lib, mod, a, mod, other))
    for name in sorted(t for t in table if table[t]["part_of"] and t not in declared):
        problems.append("docs/modules.txt:%d: library row '%s' has no sn_module(%s ...) in "
                        "CMakeLists.txt" % (table[name]["line"], name, name))
    libs = cmake_libraries(root, text, table)
    problems += check_cmake_deps(root, libs, table)
    problems += check_comment_citations(root)
    return problems, ("%d module files, %d includes and %d CMake libraries agree with "
                      "docs/modules.txt" % (n_files, n_includes, n_libs))

def cmake_libraries(root, text, table):
    """The sn_module() libraries of CMakeLists.txt in declaration order, each with the source files
    it builds, found the way sn_module() finds them: GLOBS claim their matches; a library with DIRS
    alone takes every *.c/*.cpp directly in its folders that no earlier library claimed."""
    libs, claimed = [], set()
    for m in re.finditer(r"^\s*sn_module\(([^)]*)\)", text, re.M):
        args = re.sub(r"#[^\n]*", "", m.group(1)).split()
        if not args or args[0] == "name":
            continue
        lib = {"name": "sn_" + args[0], "line": text.count("\n", 0, m.start()) + 1,
               "DIRS": [], "GLOBS": [], "DEPS": [], "files": []}
        section = None
        for a in args[1:]:
            if a in ("DIRS", "GLOBS", "DEPS"):
                section = a
            elif section:
                lib[section].append(a)
        if lib["GLOBS"]:
            for g in lib["GLOBS"]:
                lib["files"] += sorted(os.path.relpath(f, root)
                                       for f in glob.glob(os.path.join(root, g)))
            claimed.update(lib["files"])
        else:
            for d in lib["DIRS"]:
                for name in sorted(os.listdir(os.path.join(root, d))):
                    rel = os.path.join(d, name)
                    if name.endswith((".c", ".cpp")) and rel not in claimed:
                        lib["files"].append(rel)
        libs.append(lib)
    return libs


def library_of_header(root, libs, header):
    """The library that defines what a project header declares: the one building the source of
    the same name (data/vote.h -> data/vote.c) or of that name and a suffix (data/shard.h,
    data/shard_internal.h -> data/shard_reader.c), else the library that takes the rest of the
    header's folder."""
    stem = re.sub(r"(_internal)?\.(h|hpp)$", "", header)
    for lib in libs:
        if stem + ".c" in lib["files"] or stem + ".cpp" in lib["files"]:
            return lib["name"]
    for lib in libs:  # data/shard.h -> data/shard_reader.c, data/shard_writer.c, ...
        if any(f.startswith(stem + "_") for f in lib["files"]):
            return lib["name"]
    folder = os.path.dirname(header)
    for lib in reversed(libs):
        if folder in lib["DIRS"] and not lib["GLOBS"]:
            return lib["name"]
    return None


def project_includes(root, rel, cache={}):
    """[(line, header)] of the quoted project includes of one file, paths from the root."""
    key = (root, rel)
    if key not in cache:
        found = []
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = re.match(r'^\s*#\s*include\s*"([^"]+)"', line)
                if not m:
                    continue
                inc = m.group(1)
                if not os.path.exists(os.path.join(root, inc)):
                    inc = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
                if os.path.exists(os.path.join(root, inc)):
                    found.append((n, inc))
        cache[key] = found
    return cache[key]


def check_cmake_deps(root, libs, table):
    """Each library's DEPS name the sn_* libraries it uses, and only those. Needed: the library of
    every header its files include, directly or through its own headers; such a library missing
    from DEPS fails (the tests link every library, which would hide it). A header reached only
    through another library's header is that library's dependency, covered through its DEPS.
    Unused: a DEPS entry whose headers no file of the library reaches, even through others."""
    problems = []
    names = {lib["name"] for lib in libs}
    for lib in libs:
        needed, reached = {}, set()
        todo = [(rel, None) for rel in lib["files"]]
        seen = set()
        while todo:
            rel, via = todo.pop()
            if rel in seen:
                continue
            seen.add(rel)
            for n, inc in project_includes(root, rel):
                owner = library_of_header(root, libs, inc)
                own = owner is None or owner == lib["name"]
                if owner and not own:
                    reached.add(owner)
                    if via is None:
                        needed.setdefault(owner, "%s:%d" % (rel, n))
                todo.append((inc, via if own else inc))
        deps = {d for d in lib["DEPS"] if d.startswith("sn_")}
        for owner in sorted(set(needed) - deps):
            problems.append("CMakeLists.txt:%d: %s does not link %s, yet %s includes its header; "
                            "add it to DEPS" % (lib["line"], lib["name"], owner, needed[owner]))
        for dep in sorted(deps - reached):
            if dep in names:
                problems.append("CMakeLists.txt:%d: %s links %s, but none of its files includes a "
                                "header of it; drop it from DEPS" % (lib["line"], lib["name"], dep))
    return problems


# Comments cite the repository's own files (docs/design.md §7). A path-like token in a comment is
# a citation of a repository file when it starts with a top-level folder of the repository and
# names a source or doc file; it then has to exist. A token naming a source file under a folder
# the repository does not have, or starting with a folder of a known upstream project, cites a
# file outside the repository. Placeholders (OUT/, $BUILD/, MODEL_DIR/) are directories a
# command is given, not citations.
CITED_EXT = re.compile(r"\.(c|h|cc|cpp|hpp|cu|md|py|sh|cmake|mjs|js|ipynb|sbatch|rs|go|txt)$")
UPSTREAM = ("src", "include", "lib", "peft", "transformers", "tokenizers", "llama.cpp", "ggml",
            "gguf-py", "torch", "csrc", "examples")
PATH_TOKEN = re.compile(r"(?<![\w/.:@$-])([A-Za-z_][\w.+-]*(?:/[\w.+-]+)+)")


def source_files(root):
    """Tracked (or, outside git, walked) files whose comments the citation check reads: C, C++,
    CMake, shell and Python sources, and scripts without an extension (.ci/run)."""
    out = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard"],
                         capture_output=True, text=True)
    if out.returncode == 0 and out.stdout.strip():
        files = out.stdout.splitlines()
    else:
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if x == ".ci" or not x.startswith((".", "build"))]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    picked = []
    for rel in sorted(files):
        base = os.path.basename(rel)
        full = os.path.join(root, rel)
        if not os.path.isfile(full) or rel.startswith("build"):
            continue
        if rel.endswith((".c", ".h", ".cpp", ".hpp", ".cmake", ".sh", ".py", ".sbatch", ".mjs")) \
                or base in ("CMakeLists.txt", "Makefile"):
            picked.append(rel)
        elif "." not in base or rel.startswith(("scripts/", ".ci/")):
            with open(full, "rb") as f:
                if f.read(2) == b"#!":
                    picked.append(rel)
    return picked


def comments_of(rel, text):
    """(line, comment text) for each comment: /* */ and // in C, C++ and JavaScript (string
    literals skipped), # elsewhere."""
    if rel.endswith((".c", ".h", ".cpp", ".hpp", ".mjs")):
        pat = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.S)
        for m in pat.finditer(text):
            if m.group(0).startswith(("/*", "//")):
                first = text.count("\n", 0, m.start()) + 1
                for k, line in enumerate(m.group(0).split("\n")):
                    yield first + k, line
    else:
        for n, line in enumerate(text.split("\n"), 1):
            m = re.search(r"(?:^|\s)#(?!!)(.*)$", line)
            if m:
                yield n, m.group(1)


def check_comment_citations(root):
    problems = []
    tops = {x for x in os.listdir(root) if os.path.isdir(os.path.join(root, x))}
    for rel in source_files(root):
        if rel == "tests/check_layout.py":
            continue  # names upstream paths as the patterns it looks for
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        for n, comment in comments_of(rel, text):
            for tok in PATH_TOKEN.findall(comment):
                tok = tok.rstrip(".,:;")
                first = tok.split("/", 1)[0]
                if re.match(r"^[A-Z][A-Z0-9_]*$", first):
                    continue
                if os.path.exists(os.path.join(root, tok)) or \
                        os.path.exists(os.path.join(root, os.path.dirname(rel), tok)):
                    continue
                if first in tops and CITED_EXT.search(tok):
                    problems.append("%s:%d: comment cites '%s', which does not exist in the "
                                    "repository" % (rel, n, tok))
                elif first not in tops and (first in UPSTREAM or (CITED_EXT.search(tok) and
                                                                   not tok.endswith(".txt"))):
                    problems.append("%s:%d: comment cites '%s', a file of another project; cite "
                                    "docs/*.md or the paper's section instead" % (rel, n, tok))
    return problems


# A tiny tree that passes, and one planted violation per rule: the checker must name each.
FAKE_TREE = {
    "docs/modules.txt": "common: common | may-use: (libc)\nutil: util | may-use: common\n"
                        "util_core: util/core*.c | may-use: common\n",
    "docs/design.md": "# Design\n\n| module | folders | owns | may use |\n|---|---|---|---|\n"
                      "| common | `common/` | errors | libc |\n"
                      "| util | `util/` | helpers | common |\n\n"
                      "| library | sources | owns | may use |\n|---|---|---|---|\n"
                      "| util_core | `util/core*.c` | the core helpers | common |\n",
    "CMakeLists.txt": "sn_module(common DIRS common DEPS m)\n"
                      "sn_module(util_core DIRS util GLOBS util/core*.c DEPS sn_common m)\n"
                      "sn_module(util DIRS util DEPS sn_common m)\n",
    "util/core.c": '#include "common/common.h"\n',
    "common/common.h": "/* common/common.h: errors (docs/design.md). */\n",
    "common/common.c": '#include "common/common.h"\n',
    "util/util.h": '/* util/util.h */\n#include "common/common.h"\n',
    "util/util.c": '/* util/util.c: helpers (util/util.h; docs/design.md). */\n'
                   '#include "util/util.h"\n#include <stdio.h>\n',
    "scripts/run": "#!/bin/sh\n# runs util/util.c's tests\n",
}
PLANTS = [
    ("an angle-bracket project include", "util/util.c",
     lambda t: t.replace('#include <stdio.h>', '#include <common/common.h>'),
     "a project header is included with quotes"),
    ("a missing CMake dependency", "CMakeLists.txt",
     lambda t: t.replace("DEPS sn_common m", "DEPS m"), "does not link sn_common"),
    ("an unused CMake dependency", "util/util.h",
     lambda t: t.replace('#include "common/common.h"\n', ""), "drop it from DEPS"),
    ("a library of no module", "CMakeLists.txt",
     lambda t: t + "sn_module(other DIRS util DEPS m)\n", "belongs to no module"),
    ("a comment citing a missing repository file", "util/util.c",  # (split: check_docs reads this)
     lambda t: t.replace("docs/design" + ".md", "docs/gone" + ".md"),
     "'docs/gone" + ".md', which does not exist"),
    ("a comment citing an upstream file", "util/util.h",
     lambda t: t.replace("util/util.h", "as src/llama-adapter.cpp does"), "a file of another project"),
    ("a comment in a script without extension citing a missing file", "scripts/run",
     lambda t: t.replace("util/util.c", "util/gone.c"), "'util/gone.c', which does not exist"),
    ("a library part without a row of its own", "docs/modules.txt",
     lambda t: t.replace("util_core: util/core*.c | may-use: common\n", ""),
     "has no row of its own"),
    ("a library part linking what its row does not list", "CMakeLists.txt",
     lambda t: t.replace("GLOBS util/core*.c DEPS sn_common", "GLOBS util/core*.c DEPS sn_util "
                         "sn_common"), "which its row in docs/modules.txt"),
    ("a library part without a row in the design table", "docs/design.md",
     lambda t: t.replace("| util_core |", "| util_cores |"), "no row for module 'util_core'"),
    ("a design table out of step", "docs/design.md",
     lambda t: t.replace("| helpers | common |", "| helpers | libc |"), "may use"),
]


def self_test():
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        clean = os.path.join(tmp, "clean")
        for rel, text in FAKE_TREE.items():
            os.makedirs(os.path.join(clean, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(clean, rel), "w") as f:
                f.write(text)
        problems, _ = check(clean)
        if problems:
            failures.append("the clean fake tree fails: %s" % problems)
        for i, (what, rel, plant, expect) in enumerate(PLANTS):
            tree = os.path.join(tmp, "plant%d" % i)
            shutil.copytree(clean, tree)
            with open(os.path.join(tree, rel)) as f:
                text = f.read()
            planted = plant(text)
            if planted == text:
                failures.append("%s: the plant did not change %s" % (what, rel))
                continue
            with open(os.path.join(tree, rel), "w") as f:
                f.write(planted)
            problems, _ = check(tree)
            if not any(expect in p for p in problems):
                failures.append("%s in %s: not found (expected '%s'; got %s)"
                                % (what, rel, expect, problems))
    for f in failures:
        print("check_layout self-test FAILED: " + f)
    if not failures:
        print("check_layout self-test: the fake tree passes and each of %d planted violations "
              "fails" % len(PLANTS))
    return 1 if failures else 0



def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        return self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    problems, summary = check(root)
    for p in problems:
        print(p)
    if problems:
        print("check_layout: %d problem(s)" % len(problems))
        return 1
    print("check_layout: " + summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
