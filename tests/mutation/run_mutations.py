#!/usr/bin/env python3
"""run_mutations.py KVCHECK WORKDIR [--cases N] [--seed S] [--run-sample K] [--summary FILE]

The mutation test: feeds N (default 600) mutated scenarios (mutations.py: type swaps, missing
and unknown keys, huge, negative and NaN numbers, truncation, invalid UTF-8, deep nesting, bad
strings and arrays, duplicate keys, documents that are no scenario) and non-regular files (a
FIFO, a directory, a symlink to /dev/zero, a dangling or looping symlink, a file over the cap)
to `kvcheck validate`, and K (default 24) of them to `kvcheck run --max-seconds 5`. Asserts for
each: no death by a signal, no timeout, no exit 4, an exit in {0,1,2,3}; every exit 2 names the
file, and a JSON pointer or a line and column wherever the file parsed up to the error; no
message says "internal error" or leaks a C++ exception's name. Seeded: the same seed, the same
files. Prints a table per mutation kind; exits 1 on any failed case, naming it and its file
(kept under WORKDIR)."""
import argparse
import collections
import concurrent.futures
import json
import os
import random
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import kvcheck_lib as kv  # noqa: E402
import mutations  # noqa: E402

REPO = kv.REPO
BASES = ["scenarios/smoke.json", *sorted(str(p.relative_to(REPO)) for p in
         (REPO / "scenarios").glob("[rsg]*/*.json"))]
TIMEOUT_S = 30
LEAKS = re.compile(r"internal error|std::|bad_alloc|basic_string|terminate called|"
                   r"json\.exception|Assertion|Sanitizer|runtime error")
POINTER = re.compile(r": (/[^ :]*)+: |: line \d+, column \d+: ")


def non_regular_files(work):
    """Files that are not regular ones, and one regular file over the 4 MiB cap."""
    d = work / "special"
    d.mkdir(parents=True, exist_ok=True)
    cases = []
    fifo = d / "fifo.json"
    os.mkfifo(fifo)
    cases.append(("special", "a FIFO", fifo))
    (d / "dir.json").mkdir()
    cases.append(("special", "a directory", d / "dir.json"))
    for name, target in [("zero.json", "/dev/zero"), ("null.json", "/dev/null"),
                         ("urandom.json", "/dev/urandom"), ("dangling.json", "nowhere.json"),
                         ("loop.json", "loop.json"), ("dirlink.json", "dir.json")]:
        os.symlink(target, d / name)
        cases.append(("special", f"a symlink to {target}", d / name))
    big = d / "big.json"
    big.write_bytes(b'{"format": 1}' + b" " * (4 << 20))
    cases.append(("special", "a file over the 4 MiB cap", big))
    cases.append(("special", "no such file", d / "missing.json"))
    return cases


def make_cases(work, n, seed):
    rng = random.Random(seed)
    bases = [(b, (REPO / b).read_bytes()) for b in BASES]
    cases = []
    for i, (desc, data) in enumerate(mutations.whole_documents()):
        cases.append(("document", desc, data))
    i = 0
    while len(cases) < n:
        kind, fn = mutations.KINDS[i % len(mutations.KINDS)]
        base, text = bases[rng.randrange(len(bases))] if i % 3 else bases[0]
        desc, data = fn(json.loads(text), text, rng)
        cases.append((kind, f"{base}: {desc}", data))
        i += 1
    files = []
    (work / "cases").mkdir(parents=True, exist_ok=True)
    for j, (kind, desc, data) in enumerate(cases):
        path = work / "cases" / f"{j:04d}-{kind}.json"
        path.write_bytes(data)
        files.append((kind, desc, path))
    return files + non_regular_files(work)


def check(kvcheck, kind, desc, path, argv, parsed_up_to_error):
    """Runs kvcheck; returns (exit code or a word, list of problems)."""
    p = kv.run_kvcheck(kvcheck, argv, timeout=TIMEOUT_S)
    if p.code == kv.TIMEOUT:
        return "timeout", [f"no answer in {TIMEOUT_S} s"]
    err = p.stderr
    problems = []
    if p.code < 0:
        problems.append(f"killed by signal {-p.code}")
    elif p.code not in (kv.OK, kv.MISMATCH, kv.BAD_INPUT, kv.CANNOT_RUN):
        problems.append(f"exit {p.code}")
    if LEAKS.search(err):
        problems.append("the message leaks an internal error: " + LEAKS.search(err).group(0))
    if p.code == kv.BAD_INPUT:
        if str(path) not in err:
            problems.append("exit 2 without the file's path")
        elif parsed_up_to_error and not POINTER.search(err):
            problems.append("exit 2 names neither a JSON pointer nor a line and column")
    if problems:
        problems.append("stderr: " + err.strip()[-600:])
    return p.code if p.code >= 0 else f"signal {-p.code}", problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kvcheck")
    ap.add_argument("workdir")
    ap.add_argument("--cases", type=int, default=600)
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--run-sample", type=int, default=24)
    ap.add_argument("--summary")
    args = ap.parse_args()
    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    files = make_cases(work, args.cases, args.seed)

    def validate(case):
        kind, desc, path = case
        # Exit 2 for a regular file below the cap is the reader's: it must locate the error.
        regular = path.is_file() and not path.is_symlink() and path.stat().st_size <= 4 << 20
        return case, check(args.kvcheck, kind, desc, path, ["validate", str(path)], regular)

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(validate, files))

    # A sample through `kvcheck run`: valid ones first (they run), then invalid ones. Not those of
    # scenarios/gpu/: GPU-scale, one host op of theirs outlasts any short --max-seconds.
    host = [(c, rc) for c, (rc, _) in results if not c[1].startswith("scenarios/gpu/")]
    valid = [c for c, rc in host if rc == 0]
    invalid = [c for c, rc in host if rc != 0]
    rng = random.Random(args.seed)
    k = args.run_sample
    sample = rng.sample(valid, min(len(valid), k * 2 // 3))
    sample += rng.sample(invalid, min(len(invalid), k - len(sample)))
    out = work / "runs"

    def run(case):
        kind, desc, path = case
        return case, check(args.kvcheck, kind, desc, path,
                           ["run", str(path), "-q", "--max-seconds", "5", "--out", str(out)],
                           path.is_file() and not path.is_symlink())

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        run_results = list(pool.map(run, sample))

    table = collections.defaultdict(collections.Counter)
    failures = []
    for label, res in [("validate", results), ("run", run_results)]:
        for (kind, desc, path), (rc, problems) in res:
            table[(label, kind)][rc] += 1
            if problems:
                failures.append(f"{label} {path.name} ({kind}: {desc}):\n    " +
                                "\n    ".join(problems))
    print(f"mutation test, seed {args.seed}: {len(results)} files to validate, "
          f"{len(run_results)} to run")
    print(f"{'command':9} {'kind':14} {'cases':>5}  exits")
    for (label, kind), counts in sorted(table.items()):
        exits = ", ".join(f"{rc}: {c}" for rc, c in sorted(counts.items(), key=str))
        print(f"{label:9} {kind:14} {sum(counts.values()):5}  {exits}")
    if args.summary:
        Path(args.summary).write_text(json.dumps(
            {f"{l} {k}": {str(rc): c for rc, c in v.items()} for (l, k), v in table.items()},
            indent=1, sort_keys=True) + "\n")
    for f in failures:
        print("FAILED " + f)
    print(f"{len(failures)} failed case(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
