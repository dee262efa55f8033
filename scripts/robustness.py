#!/usr/bin/env python3
"""robustness.py [--build DIR] [--quick] — issue 34's reproducers, each against the outcome it must
have, and a count per outcome. Not in CI (the whole 10,000-file run alone takes about 12 minutes
on 2 cores); the tests of tests/cli and tests/bisect keep one of each in CI.

Every entry point that loads plugin code (`run --backend`, `conform`, `list --backend`) with a
fault in every place a plugin can put one (its library constructor, its init, each op, its
destroy; a crash, an abort, exit(0), exit(3), a hang, an error status), the exit-status order of
a multi-scenario run, signals (SIGPIPE on stdout, SIGHUP during a run, SIGKILL of kvcheck with a
hung worker), option values that must be refused, `ulimit -v` below a scenario's estimate, and
10,000 scenario files in one run (peak RSS). Needs a host build with the test plugins
(scripts/build.sh): DIR defaults to build/.

Prints one line per case (expected, got) and then how many cases ended in each outcome; exits 1
when any case did not end as it must. results/robustness.md records its output. Runs kvcheck
through scripts/kvcheck_lib.py.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import kvcheck_lib as kv

REPO = str(kv.REPO)
OPS = ["write_kv", "paged_decode", "gather_kv", "varlen_attention", "merge_states",
       "linear_attention", "fill_blocks", "quant_fp8"]  # what the host plugin implements
HOWS = ["crash", "abort", "exit0", "exit3", "hang", "error"]

results = []  # (case, expected, got, ok)


def record(case, expected, got):
    ok = got == expected
    results.append((case, expected, got, ok))
    print(f"{'ok  ' if ok else 'FAIL'} {case}: expected {expected}, got {got}", flush=True)


def run(cmd, cwd, timeout=120):
    r = kv.run(cmd, timeout=timeout, cwd=cwd)
    return r.code, r.stdout, r.stderr


outcome = kv.describe_exit


def plugin_cases(k, fatal, ctor, work, tiny):
    # The ops tiny.json calls: a fault in one of them is the run's error verdict (exit 1); a fault
    # in an op it never calls leaves the run clean (exit 0).
    code, out, _ = run([k, "run", tiny, "--json", "--out", os.path.join(work, "o"), "--backend",
                        fatal], work)
    called = {o["op"] for o in kv.results_of(json.loads(out))[0]["backend"]["ops"]
              if o["backend_calls"] > 0}
    for op in OPS:
        for how in HOWS:
            opt = f"{op}={how}"
            code, out, _ = run([k, "conform", "--json", "--backend", fatal, "--backend-option", opt,
                                "--backend-timeout", "2"], work)
            got = outcome(code)
            if code == 1:  # the document is there and names the op
                doc = json.loads(out)
                row = [o for o in doc["ops"] if o["op"] == op][0]
                got += "" if not row["ok"] else " (op passed!)"
            record(f"conform {opt}", "exit 1", got)
            code, _, _ = run([k, "run", tiny, "-q", "--out", os.path.join(work, "o"), "--backend",
                              fatal, "--backend-option", opt, "--backend-timeout", "2"], work)
            record(f"run --backend {opt}", "exit 1" if op in called else "exit 0", outcome(code))
    for how in ["crash", "abort", "exit0", "exit3", "hang"]:
        opt = f"init={how}"
        for entry in (["conform", "--json"], ["list", "--json"], ["run", tiny, "-q", "--out",
                                                                  os.path.join(work, "o")]):
            code, out, _ = run([k, *entry, "--backend", fatal, "--backend-option", opt,
                                "--backend-timeout", "2"], work)
            record(f"{entry[0]} init={how}", "exit 3", outcome(code) + (" (stdout!)" if out else ""))
        code, _, _ = run([k, "conform", "--json", "--backend", fatal, "--backend-option",
                          f"destroy={how}", "--backend-timeout", "2"], work)
        record(f"conform destroy={how}", "exit 1", outcome(code))
    for entry in (["conform"], ["list"], ["run", tiny, "-q", "--out", os.path.join(work, "o")]):
        code, out, _ = run([k, *entry, "--backend", ctor], work)
        record(f"{entry[0]} constructor exit(0)", "exit 3", outcome(code) + (" (stdout!)" if out
                                                                            else ""))
        if entry[0] != "list":  # list has no --bisect
            code, _, _ = run([k, *entry, "--backend", ctor, "--bisect"], work)
            record(f"{entry[0]} constructor exit(0) --bisect", "exit 125", outcome(code))


def option_cases(k, fatal, work, tiny):
    bad = [["run", tiny, "--backend", ""], ["run", tiny, "--out", ""], ["conform", "--backend", ""],
           ["list", "--backend", ""], ["conform", "--backend", fatal, "--seed", "-1"],
           ["conform", "--backend", fatal, "--seed", str(2**64)],
           ["conform", "--backend", fatal, "--tolerance", "nan"],
           ["conform", "--backend", fatal, "--tolerance", "0"],
           ["conform", "--backend", fatal, "--tolerance", "inf"]]
    for args in bad:
        code, _, err = run([k, *args], work)
        record("refused: " + " ".join(a if a else "''" for a in args[:1] + args[-2:]), "exit 2",
               outcome(code) + ("" if len(err) < 400 else " (long message)"))
    with open(os.path.join(work, "twin.json"), "w") as f:
        f.write(open(tiny).read())
    code, _, _ = run([k, "run", tiny, os.path.join(work, "twin.json"), "--out",
                      os.path.join(work, "dup")], work)
    record("two scenarios, one result file", "exit 2", outcome(code) +
           (" (wrote)" if os.path.exists(os.path.join(work, "dup")) else ""))


def order_cases(k, work):
    mismatch = os.path.join(work, "mismatch.json")
    long_op = os.path.join(work, "long.json")
    with open(mismatch, "w") as f:
        json.dump({"format": 1, "name": "mismatch", "seed": 3, "model": {"layers": 1},
                   "expect": "corrupt", "workload": {"requests": 2, "prompt_len": [4, 8],
                                                     "new_tokens": [2, 4], "epochs": 1}}, f)
    with open(long_op, "w") as f:
        json.dump({"format": 1, "name": "long-op", "model": {"layers": 1, "num_q_heads": 8,
                   "num_kv_heads": 8, "head_dim": 64}, "cache": {"num_blocks": 400,
                   "block_size": 16}, "engine": {"max_tokens_per_step": 6144},
                   "workload": {"requests": 1, "prompt_len": 6144, "new_tokens": 2}}, f)
    for extra, want in (([], "exit 1"), (["--bisect"], "exit 1"), (["--json"], "exit 1")):
        code, _, _ = run([k, "run", mismatch, long_op, "-q", "--out", os.path.join(work, "ord"),
                          "--max-seconds", "2", *extra], work)
        record("mismatch, then --max-seconds " + " ".join(extra), want, outcome(code))


def signal_cases(k, hang_plugin, work, tiny, smoke):
    # SIGPIPE: stdout's reader gone before kvcheck writes.
    for args, want in ((["run", smoke, "-q", "--out", os.path.join(work, "p")], "exit 3"),
                       (["list"], "exit 0"), (["schema", "exit-codes"], "exit 0"),
                       (["--help"], "exit 0")):
        r, w = os.pipe()
        os.close(r)
        p = subprocess.Popen([k, *args], cwd=work, stdout=w, stderr=subprocess.PIPE)
        os.close(w)
        _, err = p.communicate(timeout=60)
        record(f"stdout closed: {args[0]}", want, outcome(p.returncode))
    # SIGHUP in the middle of a run: 129, no temporary file left.
    out = os.path.join(work, "hup")
    p = subprocess.Popen([k, "run", os.path.join(work, "long.json"), "-q", "--out", out],
                         cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    p.send_signal(signal.SIGHUP)
    p.wait(timeout=30)
    left = os.listdir(out) if os.path.isdir(out) else []
    record("SIGHUP during a run", "exit 129", outcome(p.returncode) + (f" (left {left})" if left
                                                                       else ""))
    # SIGKILL of kvcheck while its worker hangs in a plugin op: the worker must not live on.
    p = subprocess.Popen([k, "run", tiny, "-q", "--out", os.path.join(work, "k"), "--backend",
                          hang_plugin], cwd=work, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    worker = None
    for _ in range(100):
        time.sleep(0.05)
        try:
            kids = open(f"/proc/{p.pid}/task/{p.pid}/children").read().split()
        except OSError:
            kids = []
        if kids:
            worker = int(kids[0])
            break
    p.kill()
    p.wait()
    alive = False
    if worker:
        time.sleep(1.0)
        try:
            with open(f"/proc/{worker}/stat") as f:
                alive = f.read().split(")")[1].split()[0] != "Z"
        except OSError:
            alive = False
    record("SIGKILL of kvcheck with a hung worker", "worker gone",
           "no worker seen" if worker is None else "worker alive" if alive else "worker gone")
    if alive:
        os.kill(worker, signal.SIGKILL)


def memory_cases(k, work):
    # The estimate of a scenario with a large, barely used cache, under ulimit -v at 0.5x of it.
    big = os.path.join(work, "big.json")
    with open(big, "w") as f:
        json.dump({"format": 1, "name": "big", "model": {"layers": 1},
                   "cache": {"num_blocks": 500000, "block_size": 16},
                   "workload": {"requests": 2, "prompt_len": 8, "new_tokens": 2}}, f)
    code, out, _ = run([k, "validate", big], work)
    m = re.search(r"estimated memory: about ([\d.]+) (KiB|MiB|GiB)", out)
    if not m:
        record("ulimit -v at 0.5x the estimate", "exit 3", f"no estimate (validate: {code})")
        return
    est = float(m.group(1)) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m.group(2)]
    for factor, want in ((0.5, "exit 3"), (1.1, "exit 0")):
        limit_kb = int(est * factor / 1024)
        code, _, err = run(["bash", "-c", f"ulimit -v {limit_kb}; exec '{k}' run '{big}' -q "
                            "--out o"], work)
        named = want == "exit 0" or "ulimit -v" in err
        record(f"ulimit -v at {factor}x the estimate", want,
               outcome(code) + ("" if named else " (message does not name ulimit -v)"))


def many_files_case(k, work, count):
    files = os.path.join(work, "many")
    os.makedirs(files, exist_ok=True)
    smoke = json.load(open(os.path.join(REPO, "scenarios", "smoke.json")))
    paths = []
    for i in range(count):
        smoke["name"] = f"smoke-{i:05d}"
        p = os.path.join(files, f"s{i:05d}.json")
        json.dump(smoke, open(p, "w"))
        paths.append(p)
    for extra in ([], ["--json"]):
        t = time.monotonic()
        out_dir = os.path.join(work, "many-out")
        r = kv.run_kvcheck(k, ["run", "-q", "--out", out_dir, *extra, *paths], cwd=work,
                           timeout=7200, peak_rss=True)
        docs = r.results() if extra else None
        rc, peak, docs = r.code, r.peak_rss_bytes // 1024, len(docs) if docs else 0
        written = len(os.listdir(out_dir)) if os.path.isdir(out_dir) else 0
        shutil.rmtree(out_dir, ignore_errors=True)
        print(f"     {count} files {' '.join(extra)}: {time.monotonic() - t:.0f} s, peak RSS "
              f"{peak / 1024:.1f} MiB, {written} result files"
              + (f", {docs} documents on stdout" if extra else ""))
        record(f"{count} scenario files {' '.join(extra)}", "exit 0, peak < 200 MiB",
               outcome(rc) + (", peak < 200 MiB" if peak < 200 * 1024 else
                              f", peak {peak / 1024:.0f} MiB"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--quick", action="store_true", help="1,000 files instead of 10,000")
    ap.add_argument("--cases", default="plugin,options,order,signals,memory,many",
                    help="which groups of cases to run (comma list; default all)")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    k = os.path.join(a.build, "kvcheck")
    plugins = os.path.join(a.build, "tests", "plugins")
    fatal = os.path.join(plugins, "libkvtest_fatal.so")
    ctor = os.path.join(plugins, "libkvtest_plugin_ctor_exit0.so")
    hang = os.path.join(plugins, "libkvtest_plugin_hang.so")
    for f in (k, fatal, ctor, hang):
        if not os.path.exists(f):
            sys.exit(f"robustness.py: {f} is missing: build with scripts/build.sh first")
    work = tempfile.mkdtemp(prefix="kvcheck-robustness.")
    tiny = os.path.join(work, "tiny.json")
    with open(tiny, "w") as f:
        json.dump({"format": 1, "name": "tiny", "seed": 3, "model": {"layers": 1},
                   "workload": {"requests": 2, "prompt_len": [4, 8], "new_tokens": [2, 4],
                                "epochs": 2}}, f)
    smoke = os.path.join(REPO, "scenarios", "smoke.json")
    try:
        groups = set(a.cases.split(","))
        if "plugin" in groups:
            plugin_cases(k, fatal, ctor, work, tiny)
        if "options" in groups:
            option_cases(k, fatal, work, tiny)
        if "order" in groups or "signals" in groups:
            order_cases(k, work)  # also writes long.json, which the signal cases use
        if "signals" in groups:
            signal_cases(k, hang, work, tiny, smoke)
        if "memory" in groups:
            memory_cases(k, work)
        if "many" in groups:
            many_files_case(k, work, 1000 if a.quick else 10000)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    counts = {}
    for _, _, got, _ in results:
        counts[got] = counts.get(got, 0) + 1
    print("\noutcomes:")
    for got, n in sorted(counts.items(), key=lambda x: -x[1]):
        print(f"  {n:5d}  {got}")
    bad = [r for r in results if not r[3]]
    print(f"\n{len(results)} cases, {len(results) - len(bad)} as expected, {len(bad)} not")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
