#!/usr/bin/env python3
"""check-links.py — every relative link and anchor in the documentation points at something.

  scripts/check-links.py              README.md, docs/*.md, results/*.md, examples/**/README.md
  scripts/check-links.py FILE...      these Markdown files
  scripts/check-links.py --self-test  the check can fail: a broken link and a broken anchor

A link to a file or folder must name one that exists (relative to the linking file; a path that
starts with '/' is relative to the repository root, as on GitHub). A link with '#anchor' into a
Markdown file (or into the linking file itself, '#anchor' alone) must match a heading there, spelt
as GitHub spells it: the heading's text lowercased, punctuation other than '-' and '_' removed,
each space a '-'; a repeated heading gets '-1', '-2', ... (an HTML `id=` or `name=` counts too).
http(s), mailto and other URLs with a scheme are not checked; nor is text in code (fenced blocks,
inline backticks). Python 3 standard library only.

Exits 0 when every link resolves, 1 naming each broken one (file:line), 2 on a usage problem.
"""
import argparse
import pathlib
import re
import sys
import tempfile
import urllib.parse

from kvcheck_lib import REPO

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
INLINE_CODE = re.compile(r"(`+)((?:(?!\n[ \t]*\n).)+?)\1", re.DOTALL)
# [text](target) or ![alt](target "title"); the target may be wrapped in <>.
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+[\"'(][^)]*)?\)")
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_ID = re.compile(r"<[a-zA-Z][^>]*\s(?:id|name)=[\"']([^\"']+)[\"']")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def default_files(root):
    files = [root / "README.md"]
    files += sorted((root / "docs").glob("*.md"))
    files += sorted((root / "results").glob("*.md"))
    files += sorted((root / "examples").rglob("README.md"))
    return [f for f in files if f.is_file()]


def prose_lines(text):
    """(line number, line) of every line, those inside fenced code blocks blanked."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
            yield number, ""
            continue
        if fence is not None:
            if m and m.group(1).startswith(fence) and not line.strip()[len(m.group(1)):].strip():
                fence = None
            yield number, ""
            continue
        yield number, line


def github_slug(heading):
    """The anchor GitHub gives a heading's text (before de-duplication)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text)                          # inline HTML tags
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in "-_ ")
    return text.replace(" ", "-")


def anchors_of(text):
    anchors, seen = set(), {}
    for _, line in prose_lines(text):
        for m in HTML_ID.finditer(line):
            anchors.add(m.group(1))
        m = HEADING.match(line)
        if not m:
            continue
        slug = github_slug(m.group(2) or "")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def links_of(text):
    """(line number, target) of every link outside code; a link's text may span lines."""
    prose = "\n".join(line for _, line in prose_lines(text))
    # Code spans, which may span lines within a paragraph, blanked (their newlines kept).
    prose = INLINE_CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), prose)
    for m in INLINE_LINK.finditer(prose):
        yield prose.count("\n", 0, m.start()) + 1, m.group(1)
    for number, line in enumerate(prose.split("\n"), 1):
        m = REFERENCE_DEF.match(line)
        if m:
            yield number, m.group(1)


class Checker:
    def __init__(self, root):
        self.root = root.resolve()
        self.anchor_cache = {}

    def anchors(self, path):
        if path not in self.anchor_cache:
            self.anchor_cache[path] = anchors_of(path.read_text(encoding="utf-8"))
        return self.anchor_cache[path]

    def check_file(self, path):
        """The broken links of one Markdown file, as messages."""
        problems = []
        path = path.resolve()
        shown = path.relative_to(self.root) if path.is_relative_to(self.root) else path
        for number, target in links_of(path.read_text(encoding="utf-8")):
            target = target.strip("<>")
            if not target or SCHEME.match(target):
                continue  # http(s), mailto, ...: not checked here
            part, _, anchor = target.partition("#")
            part = urllib.parse.unquote(part.split("?", 1)[0])
            if part == "":
                dest = path
            elif part.startswith("/"):
                dest = self.root / part.lstrip("/")
            else:
                dest = path.parent / part
            if not dest.exists():
                problems.append(f"{shown}:{number}: link to {target}: {part} does not exist")
                continue
            if anchor and dest.is_file() and dest.suffix.lower() == ".md":
                anchor = urllib.parse.unquote(anchor)
                if anchor not in self.anchors(dest.resolve()):
                    where = "this file" if dest.resolve() == path else part
                    problems.append(f"{shown}:{number}: link to {target}: no heading "
                                    f"'#{anchor}' in {where}")
        return problems

    def check(self, files):
        problems = []
        for f in files:
            problems += self.check_file(f)
        return problems


def self_test():
    """The checker must pass good links and fail a broken link and a broken anchor."""
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "docs").mkdir()
        (root / "docs" / "topic.md").write_text(
            "# Topic\n\n## Exit codes\n\n## Exit codes\n\n"
            "## Conformance: `kvcheck conform`\n\n### Mutation score: bugs in kvcheck's own ops\n\n"
            "```\n# not a heading\n```\n\n[up](../README.md#kvcheck)\n", encoding="utf-8")
        good = ("# kvcheck\n\n## Quick start\n\n"
                "[a](docs/topic.md) [b](docs/topic.md#exit-codes) [c](docs/topic.md#exit-codes-1)\n"
                "[d](docs/topic.md#conformance-kvcheck-conform) [e](#quick-start) [f](docs/)\n"
                "[g](docs/topic.md#mutation-score-bugs-in-kvchecks-own-ops) [h](/docs/topic.md)\n"
                "[web](https://example.com/nowhere#x) [m](mailto:a@example.com)\n"
                "`[code](nowhere.md)`, `a code span\nover two lines [code](nowhere.md)`\n"
                "[a link over\ntwo lines](docs/topic.md#topic)\n\n"
                "```sh\n[fenced](nowhere.md)\n```\n")
        (root / "README.md").write_text(good, encoding="utf-8")
        checker = Checker(root)
        problems = checker.check(default_files(root))
        if problems:
            ok = False
            print("self-test: good links reported broken:\n  " + "\n  ".join(problems),
                  file=sys.stderr)
        cases = {
            "a broken link": ("[x](docs/missing.md)\n", "missing.md does not exist"),
            "a broken anchor": ("[x](docs/topic.md#no-such-heading)\n", "no heading"),
            "a broken anchor in the same file": ("[x](#nowhere)\n", "no heading"),
            "an anchor past the duplicates": ("[x](docs/topic.md#exit-codes-2)\n", "no heading"),
            "a heading inside a code block": ("[x](docs/topic.md#not-a-heading)\n", "no heading"),
            "a broken link over two lines": ("[x\ny](docs/gone.md)\n", "gone.md does not exist"),
        }
        for name, (text, expected) in cases.items():
            (root / "README.md").write_text(good + text, encoding="utf-8")
            problems = Checker(root).check(default_files(root))
            if len(problems) != 1 or expected not in problems[0]:
                ok = False
                print(f"self-test: {name} was not reported as expected: {problems}",
                      file=sys.stderr)
    print("check-links self-test: " + ("passed" if ok else "FAILED"), file=sys.stderr)
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=pathlib.Path,
                        help="Markdown files (default: README.md, docs/, results/, examples/)")
    parser.add_argument("--root", type=pathlib.Path, default=REPO,
                        help="the repository root, for links that start with '/'")
    parser.add_argument("--self-test", action="store_true",
                        help="check that a broken link and a broken anchor are reported")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    files = args.files or default_files(args.root)
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        print("check-links: no such file: " + ", ".join(missing), file=sys.stderr)
        return 2
    problems = Checker(args.root).check(files)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"check-links: {len(files)} file(s), "
          + (f"{len(problems)} broken link(s)" if problems else "every link resolves"),
          file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
