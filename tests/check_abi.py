#!/usr/bin/env python3
"""tests/check_abi.py: the runtime library's ABI (docs/api.md) as installed.

`cmake --install BUILD --prefix TMP`, then:
  - the headers installed under include/sentinel are exactly the public ones (common/base.h,
    export/detector.h, context/context.h, defense/defense.h), and each compiles alone as C11
    (-Wall -Wextra -Wpedantic -Werror) and, when a C++ compiler is there, as C++ (extern "C");
  - the functions those headers declare and the symbols the installed library exports
    (`nm -D --defined-only`) are the same set, in both directions: nothing exported that is not
    declared public, no public declaration missing; every export carries the default version
    SENTINEL_DETECTOR_0 of export/sentinel_detector.map, and the map lists the same names;
  - the library's SONAME is libsentinel_detector.so.<major> (CMakeLists.txt SOVERSION);
  - every sn_* function the Python package (python/sentinel_detector) binds is exported.
The comparison has teeth: a planted extra declaration and a planted extra export must each be
reported (self-check at the end).
Usage: check_abi.py SOURCE_DIR BUILD_DIR TMP_DIR CC [CXX]"""
import os
import re
import shutil
import subprocess
import sys

PUBLIC = ["common/base.h", "export/detector.h", "context/context.h", "defense/defense.h"]
NODE = "SENTINEL_DETECTOR_0"


def strip_c(text):
    """The text without comments, string literals and preprocessor lines."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    return "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))


def declared(paths):
    """{name: header} of the sn_* functions declared in the headers: an identifier followed by
    '(' at file scope (a function pointer field is written (*name), and so is not taken)."""
    out = {}
    for p in paths:
        with open(p, encoding="utf-8") as f:
            for name in re.findall(r"\b(sn_\w+)\s*\(", strip_c(f.read())):
                out.setdefault(name, os.path.basename(os.path.dirname(p)) + "/" +
                               os.path.basename(p))
    return out


def exported(lib):
    """{name: version} of the defined dynamic symbols of lib, without the version nodes."""
    r = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("nm -D %s: %s" % (lib, r.stderr.strip()))
    out = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] == "A":  # A: the version node itself
            continue
        name, _, ver = parts[2].partition("@@")
        if not ver:
            name, _, ver = parts[2].partition("@")
            ver = "@" + ver if ver else ""
        out[name] = ver
    return out


def mapped(path):
    """The global names of the version script."""
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"/\*.*?\*/", " ", f.read(), flags=re.S)
    m = re.search(r"global:(.*?)local:", text, flags=re.S)
    return {n.strip() for n in m.group(1).split(";") if n.strip()} if m else set()


def compare(decl, exp):
    """Lines naming every difference between the declared and the exported names."""
    out = []
    for n in sorted(set(exp) - set(decl)):
        out.append("%s is exported but no installed header declares it: make it static or "
                   "local (export/sentinel_detector.map), or declare it public (docs/api.md)" % n)
    for n in sorted(set(decl) - set(exp)):
        out.append("%s (%s) is declared public but the library does not export it: add it to "
                   "export/sentinel_detector.map" % (n, decl[n]))
    return out


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__)
    src, build, tmp, cc = sys.argv[1:5]
    cxx = sys.argv[5] if len(sys.argv) == 6 else ""
    problems = []
    prefix = os.path.join(tmp, "check_abi")
    shutil.rmtree(prefix, ignore_errors=True)
    subprocess.run(["cmake", "--install", build, "--prefix", prefix], check=True,
                   stdout=subprocess.DEVNULL)
    inc = os.path.join(prefix, "include", "sentinel")
    got = sorted(os.path.relpath(os.path.join(d, f), inc)
                 for d, _, fs in os.walk(inc) for f in fs)
    if got != sorted(PUBLIC):
        problems.append("installed headers %s, expected the public ones %s" % (got, sorted(PUBLIC)))
    for h in PUBLIC:
        for comp, flags in ((cc, ["-x", "c", "-std=c11"]), (cxx, ["-x", "c++", "-std=c++11"])):
            if not comp:
                continue
            r = subprocess.run([comp] + flags + ["-Wall", "-Wextra", "-Wpedantic", "-Werror",
                                                 "-fsyntax-only", "-I", inc, "-"],
                               input='#include "%s"\n' % h, text=True, capture_output=True)
            if r.returncode != 0:
                problems.append("%s does not compile alone (%s): %s" %
                                (h, flags[1], r.stderr.strip().splitlines()[:3]))
    libs = [os.path.join(d, f) for d, _, fs in os.walk(prefix) for f in fs
            if f.startswith("libsentinel_detector.so.") and not os.path.islink(os.path.join(d, f))]
    if len(libs) != 1:
        sys.exit("check_abi: expected one installed libsentinel_detector.so.*, found %s" % libs)
    lib = libs[0]

    decl = declared([os.path.join(inc, h) for h in PUBLIC if os.path.exists(os.path.join(inc, h))])
    exp = exported(lib)
    problems += compare(decl, exp)
    for n, v in sorted(exp.items()):
        if v != NODE:
            problems.append("%s is exported with version '%s', expected the default %s" %
                            (n, v, NODE))
    mp = mapped(os.path.join(src, "export", "sentinel_detector.map"))
    for n in sorted(mp ^ set(decl)):
        problems.append("%s: %s" % (n, "in export/sentinel_detector.map, not in a public header"
                                    if n in mp else "public, not in export/sentinel_detector.map"))

    with open(os.path.join(src, "CMakeLists.txt"), encoding="utf-8") as f:
        major = re.search(r"project\(sentinel VERSION (\d+)\.", f.read()).group(1)
    r = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True)
    soname = re.search(r"SONAME\)\s+Library soname: \[([^\]]+)\]", r.stdout)
    if not soname or soname.group(1) != "libsentinel_detector.so." + major:
        problems.append("SONAME %s, expected libsentinel_detector.so.%s" %
                        (soname.group(1) if soname else "missing", major))

    pkg = os.path.join(src, "python", "sentinel_detector")
    used = set()
    for f in sorted(os.listdir(pkg)):
        if f.endswith(".py"):
            with open(os.path.join(pkg, f), encoding="utf-8") as fh:
                text = fh.read()  # the names it looks up: "sn_x" keys and lib.sn_x
                used |= set(re.findall(r'"(sn_\w+)"', text) + re.findall(r"\blib\.(sn_\w+)", text))
    for n in sorted(used - set(exp)):
        problems.append("python/sentinel_detector binds %s, which the library does not export"
                        % n)

    # teeth: one planted difference in each direction is reported
    planted = dict(decl, sn_planted_public="x.h")
    if not any("sn_planted_public" in p for p in compare(planted, exp)):
        problems.append("self-check: a declared function missing from the library went unnoticed")
    if not any("sn_planted_export" in p for p in compare(decl, dict(exp, sn_planted_export=NODE))):
        problems.append("self-check: an undeclared export went unnoticed")

    for p in problems:
        print("check_abi: " + p, file=sys.stderr)
    if problems:
        return 1
    print("check_abi: %d public functions in %d headers = %d exports of %s (%s), "
          "python binds %d" % (len(decl), len(PUBLIC), len(exp), os.path.basename(lib),
                               soname.group(1), len(used)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
