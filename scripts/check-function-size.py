#!/usr/bin/env python3
"""check-function-size.py [--max N] [--self-test] DIR... — no function body longer than N lines.

Reads C++ and CUDA sources (.h .hpp .cpp .cu .cuh) as text, finds every function definition at
namespace or class scope (lambdas and local blocks count towards the function they are in) and
prints each one whose body, from the line of its opening brace to the line of its closing one, is
longer than N lines (default 80). Exits 1 naming each. Comments, strings and character literals
are skipped, so braces inside them do not count. A heuristic reader, not a compiler: a header is a
function's when it ends in `)` plus qualifiers (const, noexcept, override, a trailing return type,
a constructor's initialiser list) and does not start with a control keyword.
"""
import os
import re
import sys

EXTS = (".h", ".hpp", ".cpp", ".cu", ".cuh")
CONTROL = re.compile(r"^(if|for|while|switch|catch|do|else|return|case)\b")
SCOPE = re.compile(r"\b(namespace|class|struct|union|enum)\b[^()]*$")
FUNC_TAIL = re.compile(r"\)\s*(const|noexcept|override|final|mutable|volatile|&|&&|\s|->\s*[\w:<>,\s*&]+)*$")


def strip(text):
    """The text with comments, strings and char literals blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            end = text.find(")" + (m.group(1) if m else "") + '"', i)
            j = n if end < 0 else end + len(m.group(1) if m else "") + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def header_before(text, pos):
    """The declaration text before the brace at `pos`: back to the last ; { or } (preprocessor
    lines dropped), and a constructor's initialiser list cut off."""
    start = max(text.rfind(";", 0, pos), text.rfind("{", 0, pos), text.rfind("}", 0, pos)) + 1
    lines = [l for l in text[start:pos].split("\n") if not l.strip().startswith("#")]
    head = " ".join(" ".join(lines).split())
    return head


def is_function(head):
    if not head or CONTROL.match(head) or SCOPE.search(head) or "=" in head.split("(")[0]:
        return False
    if head.endswith("]") or re.search(r"\]\s*\(.*\)\s*(mutable\s*)?(->.*)?$", head):
        return False  # a lambda
    base = re.sub(r"\)\s*:(?!:)\s*[\w:]+\s*[({].*$", ")", head)  # a constructor's initialiser list
    return "(" in base and bool(FUNC_TAIL.search(base))


def functions(text):
    """(header, first line, last line) of every function defined at namespace/class scope."""
    s = strip(text)
    stack, found = [], []  # entries: (kind, offset), kind "scope" | "func" | "block" | "init"
    i, init_end = 0, -1
    while i < len(s):
        c = s[i]
        if c == "{":
            in_func = any(k == "func" for k, _ in stack)
            head = header_before(s, i)
            if in_func:
                kind = "block"
            elif init_end >= 0 and not s[init_end + 1:i].strip():
                kind = "func"  # a constructor's body right after a member's brace initialiser
            elif re.search(r"\)\s*:(?!:).*[\w>]$", head):
                kind = "init"  # a member's brace initialiser in a constructor's list
            else:
                kind = "func" if is_function(head) else "scope"
            stack.append((kind, i))
            init_end = -1 if kind != "init" else init_end
        elif c == "}" and stack:
            kind, start = stack.pop()
            if kind == "init":  # blank it, so that the constructor's header reads through it
                s = s[:start] + re.sub(r"[^\n]", " ", s[start:i + 1]) + s[i + 1:]
                init_end = i
            elif kind == "func":
                first = s.count("\n", 0, start) + 1
                last = s.count("\n", 0, i) + 1
                found.append((header_before(s, start)[:60], first, last))
        i += 1
    return found


def long_functions(paths, limit):
    for root in paths:
        walk = [(root, [], [os.path.basename(root)])] if os.path.isfile(root) else os.walk(root)
        for d, _, files in walk:
            for f in sorted(files):
                p = os.path.join(d, f) if not os.path.isfile(root) else root
                if not p.endswith(EXTS):
                    continue
                text = open(p, encoding="utf-8", errors="replace").read()
                for head, first, last in functions(text):
                    if last - first + 1 > limit:
                        yield p, first, last - first + 1, head


def self_test():
    body = "\n".join(f"  x += {i};" for i in range(85))
    text = ("namespace kv {\nnamespace {\nint small(int a) {\n  return a;\n}\n}  // namespace\n"
            "class C {\n  void inl() const { if (x) { y(); } }\n};\n"
            "Foo::Foo(int a) : a_(a), b_{1} {\n" + body + "\n}\n"
            "int big(int x) {\n  auto f = [&](int y) {\n    return y;\n  };\n" + body + "\n}\n"
            'const char* s = "{ not a brace";\n}  // namespace kv\n')
    found = {head.split("(")[0].split()[-1]: last - first + 1 for head, first, last in functions(text)}
    assert found.get("small") == 3, found
    assert found.get("Foo::Foo", 0) > 80 and found.get("big", 0) > 80, found
    assert "inl" in found and len(found) == 4, found
    print("check-function-size self-test: functions, constructors and lambdas measured")


def main():
    args = sys.argv[1:]
    if args == ["--self-test"]:
        self_test()
        return
    limit = 80
    if args[:1] == ["--max"]:
        limit, args = int(args[1]), args[2:]
    if not args:
        sys.exit("usage: check-function-size.py [--max N] DIR...")
    bad = list(long_functions(args, limit))
    for p, first, n, head in bad:
        print(f"check-function-size: {p}:{first}: {n} lines (at most {limit}): {head}",
              file=sys.stderr)
    if bad:
        sys.exit(1)
    print(f"check-function-size: no function over {limit} lines in {', '.join(args)}")


if __name__ == "__main__":
    main()
