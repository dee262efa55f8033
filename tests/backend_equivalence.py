#!/usr/bin/env python3
"""backend_equivalence.py [--device cuda] KVCHECK PLUGIN SCENARIO OUTDIR — the ABI carries
everything: the scenario run with kvcheck's own ops behind the plugin ABI (--backend PLUGIN) gives
the same exit code, verdict, first failure and per-epoch figures (all but wall times) as the
in-process device, and the backend ran every op call of the run.

Without --device: the host ops (libkvcheck_backend_host.so) against `kvcheck run S` (the host
device). --device cuda: the CUDA ops (libkvcheck_backend_cuda.so) against `kvcheck run S --device
cuda`, both runs on the GPU (scripts/gpu-check.sh runs it over the scenarios). Runs and reads
kvcheck through scripts/kvcheck_lib.py."""
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "scripts"))
import kvcheck_lib as kv  # noqa: E402


def run(kvcheck, scenario, out, extra):
    r = kv.run_scenario(kvcheck, scenario, out, extra)
    doc = r.result()
    if doc is None:
        sys.exit(f"no result document (exit {r.code}): {r.stderr.strip()}")
    doc = kv.without_timings(doc)
    backend = doc.pop("backend", None)
    return r.code, doc, backend


def main():
    args = sys.argv[1:]
    device = []
    if args[:1] == ["--device"]:
        if len(args) < 2:
            sys.exit("--device needs a value (host or cuda)")
        device = ["--device", args[1]]
        args = args[2:]
    if len(args) != 4:
        sys.exit(__doc__.splitlines()[0])
    kvcheck, plugin, scenario, out = args
    out = pathlib.Path(out)
    code_a, inproc, _ = run(kvcheck, scenario, out / "in-process", device)
    code_b, plugged, backend = run(kvcheck, scenario, out / "plugin",
                                   device + ["--backend", plugin])
    problems = []
    if code_a != code_b:
        problems.append(f"exit {code_a} in process, {code_b} through the plugin")
    for key in sorted(set(inproc) | set(plugged)):
        if inproc.get(key) != plugged.get(key):
            problems.append(f"{key}: {json.dumps(inproc.get(key))[:400]}\n"
                            f"   vs {json.dumps(plugged.get(key))[:400]}")
    if backend is None or backend["backend_calls"] != backend["total_calls"] or \
            backend["backend_calls"] == 0:
        problems.append(f"the backend did not run every op call: {json.dumps(backend)[:400]}")
    for p in problems:
        print("DIFFERENT:", p, file=sys.stderr)
    where = f" on {device[1]}" if device else ""
    print(f"{scenario}{where}: {'same' if not problems else 'DIFFERENT'} "
          f"({backend['backend_calls'] if backend else 0} backend op calls)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
