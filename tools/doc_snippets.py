#!/usr/bin/python3
"""Checks that every code block of the docs is code that CI builds and runs.

Usage: doc_snippets.py [--languages cpp,cmake] --docs README.md docs/*.md
                       --sources FILE...

Each fenced block of a Markdown file whose language is code (cpp, c++, cc,
cxx, c, python, starlark, bzl, cmake) must appear, as consecutive lines, in
one of the source files: programs under examples/ (and the test of
docs/verification.md) that Bazel or the CMake and consumer CI configs build
and run. Lines are compared with surrounding whitespace removed and blank
lines skipped, so a block may be indented differently from its source.
Blocks of shell commands, output or config (sh, text, no language) are not
code and are not checked. Exits 1 and names each block without a source.
"""

import argparse
import re
import sys

CODE_LANGUAGES = {
    "c", "c++", "cc", "cpp", "cxx", "python", "starlark", "bzl", "cmake",
}
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([^\s`]*)")


def normalized(lines):
    return [line.strip() for line in lines if line.strip()]


def code_blocks(path):
    """Yields (line number, language, lines) for each fenced block."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, language, start = m.group(2), m.group(3).lower(), i + 1
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        yield start, language, body


def contains(haystack, needle):
    n = len(needle)
    return any(haystack[k:k + n] == needle
               for k in range(len(haystack) - n + 1))


def longest_prefix(haystack, needle):
    """How many leading lines of needle some place of haystack matches."""
    best = 0
    for k in range(len(haystack)):
        j = 0
        while (j < len(needle) and k + j < len(haystack)
               and haystack[k + j] == needle[j]):
            j += 1
        best = max(best, j)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--languages", default=",".join(sorted(CODE_LANGUAGES)),
                        help="comma-separated code languages to check")
    parser.add_argument("--docs", nargs="+", required=True)
    parser.add_argument("--sources", nargs="+", required=True)
    args = parser.parse_args()
    languages = set(args.languages.split(","))

    sources = {}
    for path in args.sources:
        with open(path, encoding="utf-8") as f:
            sources[path] = normalized(f.read().splitlines())

    checked = 0
    failures = []
    for doc in args.docs:
        for line, language, body in code_blocks(doc):
            if language not in CODE_LANGUAGES or language not in languages:
                continue
            block = normalized(body)
            if not block:
                failures.append(f"{doc}:{line}: empty {language} block")
                continue
            checked += 1
            if any(contains(src, block) for src in sources.values()):
                continue
            # Say where it comes closest, to make the fix obvious.
            path, got = max(((p, longest_prefix(s, block))
                             for p, s in sources.items()),
                            key=lambda item: item[1])
            hint = (f"closest: {path}, which differs at block line "
                    f"'{block[got]}'" if got else
                    "no source file contains its first line")
            failures.append(
                f"{doc}:{line}: this {language} block is not in any built "
                f"and run source file ({hint}). Put the code in a program "
                f"under examples/ that a test runs, and list that file in "
                f"//examples:doc_sources.")
    for failure in failures:
        print(failure)
    if checked == 0:
        print("no code blocks found: the docs or the extraction are wrong")
        return 1
    print(f"{checked} code blocks checked, {len(failures)} without a built "
          f"source")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
