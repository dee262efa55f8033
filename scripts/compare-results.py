#!/usr/bin/env python3
"""compare-results.py — two kvcheck binaries give the same results on the same scenarios.

  compare-results.py --before KVCHECK_A --after KVCHECK_B [--device host|cuda]
                     [--backend LIB | --backend BEFORE_LIB:AFTER_LIB ...] [--jobs N]
                     [--timeout S] [--keep DIR] [SCENARIO_OR_DIR ...] [-- KVCHECK_RUN_ARGS...]

Runs each scenario (default: every one under scenarios/, schema/ aside; a folder: every one under
it) with both binaries, `kvcheck run S --device D --json -q --out DIR`, each run with an output
folder of its own: once on kvcheck's own ops, and once more through each --backend plugin (LIB for
both binaries, or BEFORE_LIB:AFTER_LIB, one each). On --device host the GPU-scale scenarios
(directly in scenarios/gpu/: hours on the host, which the host suite only validates) are skipped
where a folder brought them; named one by one, they run.

The two runs must exit alike, and their result documents must be the same field by field, but
for what differs between two builds by nature: the wall times (kvcheck_lib.TIMINGS), the files'
paths and the binaries' versions (IGNORED; a run's own --out folder and plugin path inside a
message read as <out> and <backend>). A spelling the later binary renamed (RENAMED) counts as the
same: both documents are read with the new spellings. Prints a line per scenario and pass:
"same", or "DIFFERS" with the first differing JSON pointer and both values there; then a
summary. Exits 0 when every pair is the same, 1 when
one differs (a run killed at --timeout counts as a difference), 2 on a usage problem. Runs kvcheck
through scripts/kvcheck_lib.py; tests/scripts/compare_results_test.py tests it.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import shutil
import sys
import tempfile
import time

import kvcheck_lib as kv

# Spellings the later binary writes where the earlier one wrote the key (issue 35: the scenario
# format and the code take the public ABI header's names). A string of either document that is
# one of them, or holds one as a whole word (a message), reads as its new spelling. None: no new
# spelling yet (nothing is mapped).
RENAMED = {
    "plain": "kv_separate",
    "interleaved": "kv_interleaved",
    "separate": "per_layer",  # the pool kind (cache.pool)
}

# Fields (JSON pointers) that differ between two builds by nature: where the files were and what
# the binaries (and plugins) are; and the scenario file's digest (--before-scenarios reads the
# earlier commit's files). The wall times and how a run was made (kvcheck_lib.RUN_IDENTITY) go
# too, wherever they are.
IGNORED = ("/scenario_path", "/kvcheck_version", "/backend/path", "/backend/version",
           "/backend/sha256", "/scenario_sha256")

MISSING = "(absent)"


def map_strings(doc, fn):
    """doc with fn applied to every string in it, keys too."""
    if isinstance(doc, str):
        return fn(doc)
    if isinstance(doc, dict):
        return {fn(k): map_strings(v, fn) for k, v in doc.items()}
    if isinstance(doc, list):
        return [map_strings(v, fn) for v in doc]
    return doc


def renamer(renamed):
    """A function of a string: the string with each RENAMED spelling, as a whole word, new."""
    pairs = {old: new for old, new in renamed.items() if new}
    if not pairs:
        return lambda text: text
    word = re.compile(r"(?<!\w)(" + "|".join(map(re.escape, pairs)) + r")(?!\w)")
    return lambda text: word.sub(lambda m: pairs[m.group(1)], text)


def own_paths(run):
    """A function of a string: the string with the run's own paths (its --out folder and
    --backend plugin, which differ between the two runs) as placeholders."""
    named = {}
    for flag, token in (("--out", "<out>"), ("--backend", "<backend>")):
        if flag in run.cmd[:-1]:
            named[run.cmd[run.cmd.index(flag) + 1]] = token

    def replace(text):
        for path, token in named.items():
            text = text.replace(path, token)
        return text
    return replace


def normalized(doc):
    """A result document (or a list of them, --clean-twins) without what differs between two
    builds by nature: its wall times and the IGNORED fields."""
    if isinstance(doc, list):
        return [normalized(d) for d in doc]
    if not isinstance(doc, dict):
        return doc
    doc = kv.without_timings(doc)
    for pointer in IGNORED:
        *parents, last = pointer.strip("/").split("/")
        node = doc
        for p in parents:
            node = node.get(p) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return doc


def first_difference(a, b, path=""):
    """(JSON pointer, a's value, b's value) of the first place where a and b differ, or None.
    Objects go key by key in a's order, then b's keys a lacks; arrays item by item, then their
    lengths. Numbers compare by value (1 == 1.0); a key one side lacks shows as MISSING."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            at = path + "/" + str(k).replace("~", "~0").replace("/", "~1")
            if k not in a or k not in b:
                return at, a.get(k, MISSING), b.get(k, MISSING)
            d = first_difference(a[k], b[k], at)
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}/{i}")
            if d:
                return d
        if len(a) != len(b):
            n = min(len(a), len(b))
            return (f"{path}/{n}", a[n] if len(a) > n else MISSING,
                    b[n] if len(b) > n else MISSING)
        return None
    if a == b and isinstance(a, bool) == isinstance(b, bool):
        return None
    return path or "/", a, b


def compare(before, after, renamed=RENAMED):
    """None when two runs (kvcheck_lib.Run) agree, else one line saying the first difference."""
    if kv.TIMEOUT in (before.code, after.code):
        side = "before" if before.code == kv.TIMEOUT else "after"
        return f"not compared: the {side} run was killed at the timeout"
    if before.code != after.code:
        return f"before {kv.describe_exit(before.code)}, after {kv.describe_exit(after.code)}"
    # The results alone: the summaries differ in their seconds by nature, and an earlier kvcheck
    # (before kvcheck.run/1) printed its result documents bare (kvcheck_lib.results_of).
    a, b = before.results(), after.results()
    if (a is None) != (b is None):
        return "only the " + ("after" if a is None else "before") + " run wrote a result document"
    if a is None:
        return None
    rename = renamer(renamed)
    a, b = ([normalized(map_strings(doc, lambda t, f=own_paths(run): rename(f(t))))
             for doc in docs] for docs, run in ((a, before), (b, after)))
    if len(a) == len(b) == 1:  # one scenario, one seed: pointers into the document itself
        a, b = a[0], b[0]
    d = first_difference(a, b)
    if d is None:
        return None
    return f"{d[0]}: before {shown(d[1])}, after {shown(d[2])}"


def shown(v):
    return v if v is MISSING else json.dumps(v)[:200]


def usage_error(message):
    print(f"compare-results: {message}", file=sys.stderr)
    sys.exit(2)


def scenarios_of(args, device):
    """[(path, why skipped or None)] for the SCENARIO_OR_DIR arguments (default scenarios/)."""
    found = []
    for arg in args or [str(kv.SCENARIOS)]:
        p = pathlib.Path(arg)
        if p.is_dir():
            for f in kv.scenario_files(p):
                skip = device == "host" and kv.is_gpu_scale(f)
                found.append((f, "GPU-scale: hours on the host" if skip else None))
        elif p.is_file():
            found.append((p, None))
        else:
            usage_error(f"{arg}: no such scenario file or folder")
    return found


def passes(backends):
    """[(label, index, before's extra args, after's extra args)]: the built-in ops, then each
    plugin."""
    out = [("", 0, [], [])]
    for spec in backends:
        before, sep, after = spec.partition(":")
        after = after if sep else before
        for lib in (before, after):
            if not os.path.isfile(lib):
                usage_error(f"--backend {spec}: {lib} is not a file")
        label = f" [{os.path.basename(after)}]"
        out.append((label, len(out), ["--backend", os.path.abspath(before)],
                    ["--backend", os.path.abspath(after)]))
    return out


def main():
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="the earlier kvcheck binary")
    ap.add_argument("--after", required=True, help="the later kvcheck binary")
    ap.add_argument("--device", choices=["host", "cuda"], default="host")
    ap.add_argument("--backend", action="append", default=[],
                    help="also through this plugin: LIB, or BEFORE_LIB:AFTER_LIB")
    ap.add_argument("--jobs", type=int, default=1, help="scenarios at once (default 1)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per run (default 3600)")
    ap.add_argument("--keep", help="keep every run's result folder under this folder")
    ap.add_argument("--before-scenarios", metavar="DIR",
                    help="the earlier binary reads each scenario from DIR instead (the same path "
                         "relative to scenarios/): the scenario files as they were at its commit, "
                         "e.g. `git archive COMMIT scenarios | tar -x -C DIR --strip-components=1`, "
                         "where the format's spellings changed since")
    ap.add_argument("scenarios", nargs="*", help="scenario files or folders (default scenarios/)")
    a = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    for name, path in (("--before", a.before), ("--after", a.after)):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            ap.error(f"{name} {path}: not an executable file")
    if a.jobs < 1:
        ap.error(f"--jobs {a.jobs}: want 1 or more")
    found = scenarios_of(a.scenarios, a.device)
    work = pathlib.Path(a.keep or tempfile.mkdtemp(prefix="compare-results-")).resolve()
    plans = passes(a.backend)
    entries = []  # one per line of output, in order: a skipped scenario, or one pass over one
    for path, skip in found:
        entries += [(path, skip, None)] if skip else [(path, None, plan) for plan in plans]

    def before_path(path):
        if not a.before_scenarios:
            return path
        try:
            rel = pathlib.Path(path).resolve().relative_to(kv.SCENARIOS.resolve())
        except ValueError:
            usage_error(f"--before-scenarios: {path} is not under {kv.SCENARIOS}")
        return pathlib.Path(a.before_scenarios) / rel

    def pair(entry):
        path, skip, plan = entry
        if skip:
            return entry, None
        _, i, before_args, after_args = plan
        slug = kv.scenario_name(path).strip("/").replace("/", "_")[:-len(".json")]
        runs = [kv.run_scenario(binary, where, work / side / str(i) / slug,
                                ["--device", a.device, *args, *extra], timeout=a.timeout)
                for side, binary, where, args in (
                    ("before", a.before, before_path(path), before_args),
                    ("after", a.after, path, after_args))]
        return entry, runs

    start = time.monotonic()
    same = differ = skipped = 0
    try:
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
            for (path, skip, plan), runs in pool.map(pair, entries):
                name = kv.scenario_name(path) + (plan[0] if plan else "")
                why = None if skip else compare(*runs)
                if skip:
                    skipped += 1
                    print(f"skipped  {name}: {skip}", flush=True)
                elif why is None:
                    same += 1
                    print(f"same     {name} ({kv.describe_exit(runs[0].code)})", flush=True)
                else:
                    differ += 1
                    print(f"DIFFERS  {name}: {why}", flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"compare-results: {same + differ} pairs of runs ({a.device}): {same} same, "
          f"{differ} differ; {skipped} scenarios skipped; {time.monotonic() - start:.0f} s")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
