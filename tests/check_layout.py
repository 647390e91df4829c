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
  - a CMake library declared with sn_module(NAME DIRS ... DEPS ...) builds folders of another
    module, or links an sn_* library of a module it may not use. Libraries named
    sn_<module>_<part> are parts of <module>.
Usage: check_layout.py SOURCE_DIR
"""
import os
import re
import sys

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
    return table


def module_of(table, rel):
    best, best_len = None, -1
    for name, row in table.items():
        for folder in row["folders"]:
            if (rel == folder or rel.startswith(folder + "/")) and len(folder) > best_len:
                best, best_len = name, len(folder)
    return best


def may_use(table, mod, other):
    uses = table[mod]["uses"]
    return other == mod or "*" in uses or other in uses


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
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

    # CMake libraries: sn_module(NAME DIRS ... DEPS ...)
    n_libs = 0
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
                if other is None or not may_use(table, mod, other):
                    problems.append("CMakeLists.txt:%d: sn_%s (module '%s') links %s: module '%s' "
                                    "may not use '%s'" % (lineno, lib, mod, a, mod, other))
    for p in problems:
        print(p)
    if problems:
        print("check_layout: %d problem(s)" % len(problems))
        return 1
    print("check_layout: %d module files, %d includes and %d CMake libraries agree with "
          "docs/modules.txt" % (n_files, n_includes, n_libs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
