# mutations.py — mutated scenario files for the mutation test (run_mutations.py): every kind of
# bad input a person or a tool can hand `kvcheck validate`. Each mutator takes a base scenario
# (parsed JSON and its text) and a seeded random.Random, and returns (description, bytes).
# Deterministic: the same seed gives the same files.
import json

KINDS = []  # (name, mutator), in the order the cases cycle through them


def mutator(name):
    def register(fn):
        KINDS.append((name, fn))
        return fn
    return register


def paths(doc, prefix=()):
    """Every value's path (a tuple of keys and indices), containers included, root excluded."""
    out = []
    items = (doc.items() if isinstance(doc, dict) else
             enumerate(doc) if isinstance(doc, list) else [])
    for k, v in items:
        out.append(prefix + (k,))
        out.extend(paths(v, prefix + (k,)))
    return out


def pointer(path):
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def set_at(doc, path, value):
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value


def get_at(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def dump(doc):
    return json.dumps(doc, indent=1, allow_nan=True).encode()


def copy(doc):
    return json.loads(json.dumps(doc))


def other_type_values(v):
    """Values of every JSON type but v's (a number in a string counts as another type)."""
    cands = ["4", "", "bf16", True, False, None, [], [1, 2], {}, {"a": 1}, 3, 2.5, -7]
    return [c for c in cands if type(c) is not type(v)]


@mutator("type-swap")
def type_swap(doc, text, rng):
    d = copy(doc)
    path = rng.choice(paths(d))
    new = rng.choice(other_type_values(get_at(d, path)))
    set_at(d, path, new)
    return f"{pointer(path)} := {json.dumps(new)}", dump(d)


@mutator("missing-key")
def missing_key(doc, text, rng):
    d = copy(doc)
    keyed = [p for p in paths(d) if isinstance(p[-1], str)]
    path = rng.choice(keyed)
    del get_at(d, path[:-1])[path[-1]]
    return f"without {pointer(path)}", dump(d)


UNKNOWN_KEYS = ["nmae", "epoch", "x", "", "a/b", "c~d", "Format", "model ", "\u00e9t\u00e9",
                "requests", "layers", "num_block", "\u0000"]


@mutator("unknown-key")
def unknown_key(doc, text, rng):
    d = copy(doc)
    objects = [()] + [p for p in paths(d) if isinstance(get_at(d, p), dict)]
    path = rng.choice(objects)
    target = get_at(d, path)
    key = rng.choice(UNKNOWN_KEYS)
    if key in target:
        key += "_unknown"
    target[key] = rng.choice([1, "x", None, {}, [0]])
    return f"{pointer(path + (key,))} added", dump(d)


HUGE_NUMBERS = ["1e308", "1e400", "-1e400", "2147483648", "-2147483649", "4294967296",
                "9223372036854775807", "9223372036854775808", "18446744073709551616",
                "1" + "0" * 400, "-1", "-2147483648", "0", "-0", "-0.0", "0.5", "1e-400", "3.5e38",
                "NaN", "Infinity", "-Infinity", "1.0", "16777217", "1e9", "100001"]


@mutator("number")
def number(doc, text, rng):
    d = copy(doc)
    nums = [p for p in paths(d) if isinstance(get_at(d, p), (int, float))
            and not isinstance(get_at(d, p), bool)]
    path = rng.choice(nums)
    mark = "__KV_NUMBER__"
    set_at(d, path, mark)
    literal = rng.choice(HUGE_NUMBERS)
    return f"{pointer(path)} := {literal}", dump(d).replace(f'"{mark}"'.encode(), literal.encode())


@mutator("truncation")
def truncation(doc, text, rng):
    cut = rng.randrange(0, len(text))
    return f"first {cut} of {len(text)} bytes", text[:cut]


INVALID_UTF8 = [b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf8\x88\x80",
                b"\x80", b"\xfe\xfe\xff\xff"]


@mutator("invalid-utf8")
def invalid_utf8(doc, text, rng):
    bad = rng.choice(INVALID_UTF8)
    # Inside a string (a key or a value) or anywhere at all.
    quotes = [i for i, c in enumerate(text) if c == ord('"')]
    at = rng.choice(quotes) + 1 if quotes and rng.random() < 0.7 else rng.randrange(len(text) + 1)
    return f"bytes {bad!r} at {at}", text[:at] + bad + text[at:]


@mutator("deep-nesting")
def deep_nesting(doc, text, rng):
    d = copy(doc)
    path = rng.choice(paths(d))
    depth = rng.choice([8, 60, 63, 64, 65, 1000, 50000])
    keyed = rng.random() < 0.5
    mark = "__KV_DEEP__"
    set_at(d, path, mark)
    inner = json.dumps(get_at(doc, path))
    nested = ('{"k": ' * depth + inner + "}" * depth) if keyed else \
        ("[" * depth + inner + "]" * depth)
    out = dump(d).replace(f'"{mark}"'.encode(), nested.encode())
    return f"{pointer(path)} nested {depth} deep ({'objects' if keyed else 'arrays'})", out


BAD_STRINGS = ["\\u0000", "\\ud800", "\\udc00x", "a" * 300, "../../etc/passwd", "a/b", "",
               " ", "\\n", "x" * 5000, "\\u00e9", "CON", "."]


@mutator("strings")
def strings(doc, text, rng):
    d = copy(doc)
    strs = [p for p in paths(d) if isinstance(get_at(d, p), str)] or [("name",)]
    path = rng.choice(strs)
    mark = "__KV_STRING__"
    set_at(d, path, mark)
    s = rng.choice(BAD_STRINGS)
    return f"{pointer(path)} := \"{s[:20]}\"", dump(d).replace(mark.encode(), s.encode())


@mutator("arrays")
def arrays(doc, text, rng):
    d = copy(doc)
    arrs = [p for p in paths(d) if isinstance(get_at(d, p), list)]
    if not arrs:
        return type_swap(doc, text, rng)
    path = rng.choice(arrs)
    a = get_at(d, path)
    choice = rng.randrange(5)
    new = ([] if choice == 0 else list(reversed(a)) if choice == 1 else a * 2 if choice == 2
           else [a[0] if a else 1] * 10000 if choice == 3 else a + [a[-1] if a else 0])
    set_at(d, path, new)
    what = ["empty", "reversed", "doubled", "10000 long", "one more"][choice]
    return f"{pointer(path)}: {what}", dump(d)


@mutator("duplicate-key")
def duplicate_key(doc, text, rng):
    # Text-level: the first occurrence of a key, said twice.
    keys = [k for k in doc if isinstance(doc[k], (int, str))]
    key = rng.choice(keys)
    needle = f'"{key}":'.encode()
    at = text.find(needle)
    line = text[at:text.find(b"\n", at) if b"\n" in text[at:] else len(text)].rstrip(b",")
    return f"/{key} twice", text[:at] + line + b",\n" + text[at:]


# Whole documents that are not scenarios at all.
WHOLE = [b"", b"\xef\xbb\xbf", b"\xef\xbb\xbf{}", b"null", b"[]", b"1", b"\"x\"", b"{}", b"{",
         b"}", b"{\"format\": 1}", b"{\"format\": 2}", b"{\"format\": \"1\"}", b"\x00" * 64,
         b"{\"format\": 1}\x00", b"{\"format\": 1} {}", b"// comment\n{}", b"\t\n \r",
         b"{\"format\": 1, \"format\": 1}", b"[" * 100000, b"{\"a\":" * 40000]


def whole_documents():
    return [(f"document {d[:24]!r} ({len(d)} bytes)", d) for d in WHOLE]
