#!/usr/bin/python3
"""Checks that what the README and docs point at exists.

Run by Debian's /usr/bin/python3 (standard library only) from the test
command (the CTest test check_docs): scripts/check_docs.py [--root DIR].
Exits 1 naming every broken reference, 0 when there is none.

Checked, in every tracked Markdown file:
  - relative links [text](path#anchor): the file exists and, for a Markdown
    target, the anchor is one of its headings (GitHub's slug rules);
  - repository paths named in backticks (`scripts/x.sh`, `src/train/`): they
    exist (a glob or placeholder such as <step> or * is skipped);
  - binaries named as build/bin/NAME: an executable target of the build;
and in every tracked file of any kind:
  - docs/NAME.md mentioned in prose or comments exists, and a section quoted
    right after it (docs/x.md, "Title") is one of that page's headings or
    bold paragraph leads.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if len(sys.argv) == 3 and sys.argv[1] == "--root":
    ROOT = os.path.abspath(sys.argv[2])
elif len(sys.argv) != 1:
    sys.exit("usage: scripts/check_docs.py [--root DIR]")


def tracked_files():
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=ROOT, check=True,
                             capture_output=True).stdout.decode().strip()
        if os.path.realpath(top) != os.path.realpath(ROOT):
            raise OSError("not the root of a git checkout")
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                             capture_output=True).stdout.decode()
        return [f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        # Not the root of a git checkout (an unpacked archive, a machine
        # without git): every file but the build's and the caches'.
        found = []
        for dirpath, dirs, names in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith((".git", "build",
                                                            ".cache"))]
            found += [os.path.relpath(os.path.join(dirpath, n), ROOT)
                      for n in names]
        return found


def read(path):
    try:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
        return None


def headings(path, cache={}):
    """The heading texts of a Markdown file and their GitHub anchors."""
    if path not in cache:
        text = read(path) or ""
        titles, slugs, seen = [], set(), {}
        in_code = False
        for line in text.splitlines():
            if line.startswith("```"):
                in_code = not in_code
            if in_code:
                continue
            lead = re.match(r"\*\*([^*]+)\*\*", line)
            if lead:  # a bold paragraph lead names a section too
                titles.append(lead.group(1))
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            title = m.group(1)
            titles.append(title)
            slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            slugs.add(slug if n == 0 else f"{slug}-{n}")
        cache[path] = (titles, slugs)
    return cache[path]


def executables():
    names = set()
    for cm in [f for f in tracked_files() if f.endswith("CMakeLists.txt")]:
        text = read(cm) or ""
        names.update(re.findall(r"add_executable\((\w+)", text))
        names.update(re.findall(r"fastnn_test\((\w+)", text))
        for fuzz in re.findall(r"foreach\(target ([^)]*)\)", text):
            names.update("fuzz_" + t for t in fuzz.split())
    return names


def plain(title):
    return re.sub(r"[`*_]", "", title).lower()


def main():
    files = tracked_files()
    present = set(files)
    folders = {os.path.dirname(f) for f in files}
    while "" not in folders and folders:
        folders |= {os.path.dirname(f) for f in folders}
    top = {f.split("/")[0] for f in files if "/" in f}
    binaries = executables()
    problems = []

    def exists(path):
        path = path.rstrip("/")
        return path in present or path in folders or os.path.exists(
            os.path.join(ROOT, path))

    for f in files:
        # The checker and its test: their examples are not references.
        if f in ("scripts/check_docs.py", "tests/docs/check_docs_test.sh"):
            continue
        text = read(f)
        if text is None:
            continue
        base = os.path.dirname(f)
        markdown = f.endswith(".md")
        for n, line in enumerate(text.splitlines(), 1):
            where = f"{f}:{n}"
            # docs/x.md, "Section" in any file.
            for m in re.finditer(r"(?<![\w/.])(?<!\]\()(docs/[\w/.-]+?\.md)(#[\w-]+)?"
                                 r"(?:\)?,? \"([^\"]+)\")?", line):
                page, anchor, section = m.groups()
                if page not in present:
                    problems.append(f"{where}: {page} does not exist")
                    continue
                if anchor and anchor[1:] not in headings(page)[1]:
                    problems.append(f"{where}: {page} has no heading {anchor}")
                if section and not any(plain(section) in plain(t)
                                       for t in headings(page)[0]):
                    problems.append(
                        f"{where}: {page} has no section \"{section}\"")
            if not markdown:
                continue
            for m in re.finditer(r"\]\(([^)\s]+)\)", line):
                target = m.group(1)
                if re.match(r"[a-z]+:", target):
                    continue
                path, _, anchor = target.partition("#")
                resolved = os.path.normpath(os.path.join(base, path)) \
                    if path else f
                if not exists(resolved):
                    problems.append(f"{where}: link to {target}: "
                                    f"{resolved} does not exist")
                elif anchor and resolved.endswith(".md") and \
                        anchor not in headings(resolved)[1]:
                    problems.append(f"{where}: link to {target}: no heading "
                                    f"#{anchor} in {resolved}")
            for m in re.finditer(r"`([^`\s]+)`", line):
                name = m.group(1).split(":")[0]
                if "/" not in name or re.search(r"[<>*{}$=|\[\]]", name) \
                        or re.search(r"(^|/)[A-Z_]{3,}(/|$)", name):
                    continue
                if name.startswith("build/bin/"):
                    exe = name[len("build/bin/"):]
                    if exe and exe not in binaries:
                        problems.append(f"{where}: {name}: no such binary")
                    continue
                if name.split("/")[0] not in top:
                    continue
                if not exists(name):
                    problems.append(f"{where}: `{name}` does not exist")
            for m in re.finditer(r"(?<![\w/])build/bin/(\w+)", line):
                if m.group(1) not in binaries:
                    problems.append(
                        f"{where}: build/bin/{m.group(1)}: no such binary")
    for p in sorted(set(problems)):
        print("check_docs:", p)
    if problems:
        print(f"check_docs: {len(set(problems))} broken references")
        return 1
    print(f"check_docs: {len(files)} files, every reference resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
