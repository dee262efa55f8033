#!/usr/bin/env python3
"""mutation-score.py — how many realistic single-point bugs of the engine and the host ops the
default scenario suite catches, and whether its first failure names the op (results/mutation-score.md).

  mutation-score.py --check-anchors          # every rule of scripts/mutants.json still applies
  mutation-score.py [--only NAME,...] [--tree DIR] [--build DIR] [--jobs N] [--out FILE]

The rules (scripts/mutants.json) each rewrite one anchor, which must occur exactly once in its
file, into a replacement modelling one bug. A measurement builds kvcheck host-only
(-DKVCHECK_CUDA=OFF) in one build folder reused incrementally, checks that the unmutated suite
passes, then per mutant: applies it, rebuilds (a mutant that does not compile is a broken rule),
runs the suite scenario by scenario, `kvcheck run FILE --clean-twins`, and stops at the first one
that exits non-zero (caught), then restores the file. The suite is the ctest scenario tests' own
minus the GPU-scale and nightly ones: scenarios/*.json, regressions/, seeds/, shapes/. Regression
scenarios expect corrupt, so they catch a mutant through their clean twin or by no longer finding
the bug. For an op mutant it records whether the first failing run names the op: its
first_failure.ops holds it, or its error block's op is it (verdict error).

--tree is the source tree that is mutated (default: a copy of the repository's tracked files
under build-mutation/tree, refreshed file by file so the build stays incremental); the repository
itself may be given, then each file is restored after its mutant, also on SIGINT/SIGTERM. The
table goes to --out (default results/mutation-score.md), rewritten after every mutant. Stdlib only;
runs and reads kvcheck through scripts/kvcheck_lib.py.
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import kvcheck_lib as kv

REPO = str(kv.REPO)
RULES = os.path.join(REPO, "scripts", "mutants.json")


def load_rules(path):
    with open(path) as f:
        rules = json.load(f)["mutants"]
    names = [r["name"] for r in rules]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SystemExit("mutants.json: duplicate names " + ", ".join(dup))
    return rules


def anchor_problem(tree, rule):
    """None when the rule applies to tree's file, else why not."""
    path = os.path.join(tree, rule["file"])
    if not os.path.isfile(path):
        return "{}: no such file".format(rule["file"])
    with open(path) as f:
        n = f.read().count(rule["anchor"])
    if n != 1:
        return "{}: anchor {!r} occurs {} times, want once".format(rule["file"], rule["anchor"], n)
    if rule["anchor"] == rule["replacement"]:
        return "replacement equals the anchor"
    return None


def check_anchors(rules):
    bad = [(r["name"], anchor_problem(REPO, r)) for r in rules]
    bad = [(n, p) for n, p in bad if p]
    for name, problem in bad:
        print("FAIL {}: {}".format(name, problem))
    ops = sum(1 for r in rules if r["op"] != "-")
    print("{} of {} rules apply ({} op mutants, {} engine mutants)".format(
        len(rules) - len(bad), len(rules), ops, len(rules) - ops))
    return 1 if bad else 0


def suite(tree):
    sc = os.path.join(tree, "scenarios")
    return [str(p) for sub in ("", "regressions", "seeds", "shapes")
            for p in kv.scenarios_in(sub, root=sc)]


def sync_tree(tree):
    """Copy the repository's tracked files into tree, only those that differ (keeps mtimes)."""
    tracked = subprocess.run(["git", "-C", REPO, "ls-files", "-z"], check=True,
                             stdout=subprocess.PIPE).stdout.decode().split("\0")
    for rel in filter(None, tracked):
        src, dst = os.path.join(REPO, rel), os.path.join(tree, rel)
        if not os.path.isfile(src) or os.path.islink(src):
            continue
        with open(src, "rb") as f:
            data = f.read()
        if os.path.isfile(dst):
            with open(dst, "rb") as f:
                if f.read() == data:
                    continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)


def build(tree, build_dir, jobs):
    if not os.path.isfile(os.path.join(build_dir, "build.ninja")):
        subprocess.run(["cmake", "-S", tree, "-B", build_dir, "-G", "Ninja",
                        "-DCMAKE_BUILD_TYPE=Release", "-DKVCHECK_CUDA=OFF", "-DBUILD_TESTING=OFF"],
                       check=True, stdout=subprocess.DEVNULL)
    p = subprocess.run(["ninja", "-C", build_dir, "-j", str(jobs), "kvcheck"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode == 0, p.stdout[-2000:]


def first_miss(out_dir):
    """The first result (original before its twin) that misses its expectation, or None."""
    return next((d for d in kv.read_results(out_dir) if kv.misses_expectation(d)), None)


def run_suite(kvcheck, scenarios, tree, timeout, stop_at_first=True):
    """[(scenario, rc, miss document or None, seconds)] up to the first catch."""
    runs = []
    for s in scenarios:
        with tempfile.TemporaryDirectory(prefix="kvmut-") as out:
            p = kv.run_kvcheck(kvcheck, ["run", s, "--clean-twins", "-q", "--out", out],
                               timeout=timeout)
            miss = first_miss(out) if p.code != kv.OK else None
        runs.append((os.path.relpath(s, tree), p.code, miss, p.seconds, p.stderr.strip()[-300:]))
        if p.code != kv.OK and stop_at_first:
            break
    return runs


def describe(rule, runs):
    """The row's fields from the suite's runs."""
    last = runs[-1] if runs else None
    if not last or last[1] == kv.OK:
        return {"caught": False, "by": "-", "failure": "-", "names_op": None}
    scenario, rc, miss, _, err = last
    by = scenario
    if miss is None:
        lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
        said = next((ln for ln in lines if ln.startswith("error:")), lines[-1] if lines else "")
        what = "exit {}".format(rc) + (": " + said if said else "")
        return {"caught": True, "by": by, "failure": what, "names_op": False}
    if miss.get("scenario", "").endswith(".clean"):
        by += " (clean twin)"
    if miss.get("verdict") == "error":
        e = miss.get("error") or {}
        what = "error {} in {}".format(e.get("kind"), e.get("op"))
        named = kv.names_op(miss, rule["op"])
    elif not miss.get("first_failure"):
        what = "{} (expected {}): the expected corruption was not found".format(
            miss.get("verdict"), miss.get("expected"))
        named = False
    else:
        ff = miss.get("first_failure") or {}
        ops = ff.get("ops") or []
        what = "{} (expected {}): {} {} [{}]".format(miss.get("verdict"), miss.get("expected"),
                                                    ff.get("site", "-"), ff.get("check", ""),
                                                    ", ".join(ops))
        named = kv.names_op(miss, rule["op"])
        return {"caught": True, "by": by, "failure": what, "names_op": named,
                "num_ops": len(ops)}
    return {"caught": True, "by": by, "failure": what, "names_op": named, "num_ops": 1}


def pct(a, b):
    return "{:.0f}%".format(100.0 * a / b) if b else "-"


def write_table(path, rows, rules, command, commit, started):
    measured = [r for r in rows if r["status"] == "measured"]
    caught = [r for r in measured if r["caught"]]
    op_rows = [r for r in measured if r["op"] != "-"]
    op_named = [r for r in op_rows if r["names_op"]]
    lines = [
        "# Mutation score of the default suite",
        "",
        "Generated by `scripts/mutation-score.py`: realistic single-point mutants of",
        "the engine and the host ops (`scripts/mutants.json`), each built host-only and run",
        "through the default suite (scenarios/*.json, regressions/, seeds/, shapes/, each with",
        "`--clean-twins`) until the first scenario that misses its expectation.",
        "",
        "- date: {} (started {})".format(
            datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), started),
        "- commit: `{}`".format(commit),
        "- command: `{}`".format(command),
        "- measured: {} of {} rules{}".format(
            len(measured), len(rules),
            "" if len(measured) == len(rules) else
            " (not measured: {})".format(", ".join(
                r["name"] for r in rules if r["name"] not in {m["name"] for m in measured}))),
        "- caught by the suite: **{} of {} ({})** (target >= 95%)".format(
            len(caught), len(measured), pct(len(caught), len(measured))),
        "- op mutants whose first failure names the op: **{} of {} ({})** (target >= 80%); "
        "named as the only op: {}; ops a naming lists: {:.1f} on average".format(
            len(op_named), len(op_rows), pct(len(op_named), len(op_rows)),
            sum(1 for r in op_named if r.get("num_ops") == 1),
            sum(r.get("num_ops", 0) for r in op_named) / max(1, len(op_named))),
        "",
        "| # | mutant | component | bug | caught by | first failure: verdict, site, check [ops] "
        "| names op |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rows, 1):
        if r["status"] != "measured":
            lines.append("| {} | `{}` | {} | {} | {} | - | - |".format(
                i, r["name"], r["component"], r["bug"], r["status"]))
            continue
        named = "-" if r["op"] == "-" or not r["caught"] else ("yes" if r["names_op"] else "no")
        lines.append("| {} | `{}` | {} | {} | {} | {} | {} |".format(
            i, r["name"], r["component"], r["bug"],
            r["by"] if r["caught"] else "**not caught**", r["failure"].replace("|", "/"), named))
    notes = [r for r in rows if r.get("note") and r["status"] == "measured"
             and (not r["caught"] or (r["op"] != "-" and not r["names_op"]))]
    if notes:
        lines += ["", "Survivors and catches that do not name the op (notes from mutants.json):",
                  ""]
        lines += ["- `{}`: {}".format(r["name"], " ".join(r["note"])) for r in notes]
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


class Restorer:
    """Puts a mutated file back, also when the run is interrupted."""
    def __init__(self):
        self.path, self.data = None, None
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self.on_signal)

    def mutate(self, path, anchor, replacement):
        with open(path) as f:
            self.data = f.read()
        self.path = path
        with open(path, "w") as f:
            f.write(self.data.replace(anchor, replacement, 1))

    def restore(self):
        if self.path:
            with open(self.path, "w") as f:
                f.write(self.data)
            self.path = None

    def on_signal(self, signum, _frame):
        self.restore()
        sys.exit(128 + signum)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check-anchors", action="store_true")
    ap.add_argument("--rules", default=RULES)
    ap.add_argument("--only", help="comma-separated rule names (default: all)")
    ap.add_argument("--tree", default=os.path.join(REPO, "build-mutation", "tree"))
    ap.add_argument("--build", help="build folder (default: <tree>/../build)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per scenario run")
    ap.add_argument("--out", default=os.path.join(REPO, "results", "mutation-score.md"))
    ap.add_argument("--skip-baseline", action="store_true")
    args = ap.parse_args()
    rules = load_rules(args.rules)
    if args.check_anchors:
        return check_anchors(rules)
    if args.only:
        wanted = args.only.split(",")
        unknown = [n for n in wanted if n not in {r["name"] for r in rules}]
        if unknown:
            raise SystemExit("unknown rule(s): " + ", ".join(unknown))
        rules = [r for r in rules if r["name"] in wanted]

    tree = os.path.abspath(args.tree)
    build_dir = os.path.abspath(args.build or os.path.join(os.path.dirname(tree), "build"))
    if os.path.realpath(tree) != os.path.realpath(REPO):
        sync_tree(tree)
    commit = kv.git_commit()
    command = "scripts/mutation-score.py " + " ".join(
        a if not a.startswith("/") else os.path.relpath(a, REPO) for a in sys.argv[1:])
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M UTC")
    kvcheck = os.path.join(build_dir, "kvcheck")
    scenarios = suite(tree)

    ok, log = build(tree, build_dir, args.jobs)
    if not ok:
        raise SystemExit("the unmutated tree does not build:\n" + log)
    if not args.skip_baseline:
        runs = run_suite(kvcheck, scenarios, tree, args.timeout)
        if runs[-1][1] != kv.OK:
            raise SystemExit("the unmutated suite fails at {} (exit {})".format(*runs[-1][:2]))
        print("baseline: {} scenarios pass in {:.0f} s".format(
            len(runs), sum(r[3] for r in runs)), flush=True)

    rows = [dict(r, status="not measured") for r in rules]
    restorer = Restorer()
    broken = []
    for row in rows:
        problem = anchor_problem(tree, row)
        if problem:
            row["status"] = "rule does not apply"
            broken.append((row["name"], problem))
            continue
        try:
            restorer.mutate(os.path.join(tree, row["file"]), row["anchor"], row["replacement"])
            ok, log = build(tree, build_dir, args.jobs)
            if not ok:
                row["status"] = "does not compile"
                broken.append((row["name"], log))
                continue
            runs = run_suite(kvcheck, scenarios, tree, args.timeout)
        finally:
            restorer.restore()
        row.update(describe(row, runs), status="measured")
        print("{}: {} {} {}".format(row["name"], "caught by" if row["caught"] else "NOT CAUGHT",
                                    row["by"], row["failure"]), flush=True)
        write_table(args.out, rows, rules, command, commit, started)
    write_table(args.out, rows, rules, command, commit, started)
    build(tree, build_dir, args.jobs)  # leave the build folder unmutated
    for name, why in broken:
        print("BROKEN RULE {}: {}".format(name, why.strip()[-800:]))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
