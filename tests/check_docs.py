#!/usr/bin/env python3
"""Checks that the project's docs and comments point only inside the repository.

docs/design.md §7: comments and docs cite a section of the project's own docs or a paper's section,
never a file outside the repository, a machine path or an issue number. This script fails (exit 1,
one line per finding with file:line) when
  - a Markdown link in README.md or docs/*.md names a file that does not exist in the repository,
    or an anchor (#section) that no heading of the target file produces;
  - a cited doc path (`docs/x.md`, `README.md`, `docs/x.md §N`, `docs/x.md#anchor`) in those docs or
    in any source comment does not resolve, or its §N is not a numbered section of that page;
  - any tracked text file cites DESIGN.md or STYLE.md (files a clone does not have), an absolute
    machine path under /work/, ../shared/, or "issue #N".
Usage: check_docs.py SOURCE_DIR
"""
import os
import re
import subprocess
import sys

SRC_EXT = (".c", ".h", ".cpp", ".hpp", ".cmake", ".sh", ".py", ".txt", ".md", ".json", ".ipynb")


def slug(heading):
    """GitHub's anchor for a heading: explicit {#id} wins; else lower case, punctuation dropped,
    spaces to hyphens."""
    m = re.search(r"\{#([^}]+)\}\s*$", heading)
    if m:
        return m.group(1)
    h = heading.strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors_of(path, cache={}):
    if path not in cache:
        found, sections = set(), set()
        seen = {}
        in_code = False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("```"):
                    in_code = not in_code
                    continue
                m = None if in_code else re.match(r"^(#{1,6})\s+(.*)$", line)
                if not m:
                    continue
                s = slug(m.group(2))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else "%s-%d" % (s, n))
                num = re.match(r"(\d+)\.", m.group(2).strip())
                if num:
                    sections.add(num.group(1))
        cache[path] = (found, sections)
    return cache[path]


def tracked_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard"],
                         capture_output=True, text=True)
    if out.returncode == 0 and out.stdout.strip():
        return [p for p in out.stdout.splitlines() if os.path.isfile(os.path.join(root, p))]
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".") and not x.startswith("build")]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return files


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    problems = []
    files = tracked_files(root)
    docs = [p for p in files if p == "README.md" or (p.startswith("docs/") and p.endswith(".md"))]

    def check_target(src, lineno, target, base_dir, section=None):
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(root, base_dir, path)) if path else \
            os.path.join(root, src)
        if not full.startswith(root) or not os.path.exists(full):
            problems.append("%s:%d: '%s' does not exist in the repository" % (src, lineno, target))
            return
        if full.endswith(".md") and (anchor or section):
            found, sections = anchors_of(full)
            if anchor and anchor not in found:
                problems.append("%s:%d: '%s': no heading of %s makes the anchor '#%s'"
                                % (src, lineno, target, os.path.relpath(full, root), anchor))
            if section and section not in sections:
                problems.append("%s:%d: '%s §%s': %s has no section %s"
                                % (src, lineno, path, section, os.path.relpath(full, root), section))

    link = re.compile(r"\]\(([^)\s]+)\)")
    cited = re.compile(r"(?<![\w/.-])((?:docs/[\w.-]+\.(?:md|txt))|README\.md)(#[\w-]+)?(?: §(\d+))?")
    forbidden = re.compile(r"(?<![\w/.-])(?:DESIGN|STYLE)\.md\b|/work/|\.\./shared/|\b[Ii]ssue #\d+")
    for rel in files:
        if not rel.endswith(SRC_EXT) or rel.startswith(("build", "tests/check_docs.py")):
            continue
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                lines = f.readlines()
        except (UnicodeDecodeError, OSError):
            continue
        is_doc = rel in docs
        for i, line in enumerate(lines, 1):
            m = forbidden.search(line)
            if m:
                problems.append("%s:%d: cites '%s', which a clone of the repository does not have; "
                                "cite docs/design.md §N or a page under docs/" % (rel, i, m.group(0)))
            if is_doc:
                for t in link.findall(line):
                    if re.match(r"^[a-z]+://|^mailto:", t):
                        continue
                    check_target(rel, i, t, os.path.dirname(rel))
            for path, anchor, sec in cited.findall(line):
                check_target(rel, i, path + (anchor or ""), "", sec or None)
    for p in problems:
        print(p)
    if problems:
        print("check_docs: %d problem(s)" % len(problems))
        return 1
    print("check_docs: %d files read, every link and cited doc path resolves" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
