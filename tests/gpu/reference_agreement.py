#!/usr/bin/env python3
"""reference_agreement.py KVCHECK GPU_PROBE OUT_DIR SCENARIO [KVCHECK_ARGS...]

The GPU reference is the CPU reference (issue 20), on one scenario, with the run on cuda:
  1. `--reference-device both`: the GPU reference judges while the CPU one computes the same
     requests alongside; every attention output row and logit vector of the two must agree to
     1e-9 in the checks' per-row relative L2 (result: reference_agreement);
  2. `--reference-device host` and `--reference-device cuda` give the same exit code, verdict and
     first failure (where: epoch, step, request, position, layer, head, site, check; its value
     to 1e-6 relative).
The op checks (checks.op_drift) are turned off in every run: they are not a reference, and they
run beside the CPU reference only, so they would make the host run's first failure another.
Extra arguments go to every run (e.g. --epochs 1 for the GPU-scale scenarios). Exits 77 (ctest's
SKIP_RETURN_CODE) when no GPU is visible, 1 on any difference. Runs kvcheck through
scripts/kvcheck_lib.py."""
import json
import math
import os
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import kvcheck_lib as kv  # noqa: E402

BOUND = 1e-9
WHERE = ["epoch", "step", "request", "position", "layer", "head", "site", "check"]


def run(kvcheck, scenario, out, ref_device, extra):
    p = kv.run_scenario(kvcheck, scenario, out,
                        ["--device", "cuda", "--reference-device", ref_device, *extra])
    if p.code >= kv.BAD_INPUT:
        sys.exit(f"FAIL: {' '.join(p.cmd)} exited {p.code}:\n{p.stderr}")
    return p.code, p.result()


def main():
    kvcheck, probe, out, scenario, *extra = sys.argv[1:]
    if subprocess.run([probe], capture_output=True).returncode != 0:
        print("SKIP: no CUDA GPU visible (gpu_probe)")
        sys.exit(77)
    stem = os.path.basename(os.path.dirname(scenario)) + "-" + os.path.basename(scenario)[:-5]
    out = os.path.join(out, stem)
    failed = []
    doc = json.loads(pathlib.Path(scenario).read_text())
    doc.setdefault("checks", {})["op_drift"] = False
    os.makedirs(out, exist_ok=True)
    scenario = os.path.join(out, os.path.basename(scenario))
    pathlib.Path(scenario).write_text(json.dumps(doc))

    _, both = run(kvcheck, scenario, os.path.join(out, "both"), "both", extra)
    a = both.get("reference_agreement")
    if not a or a["rows"] <= 0:
        failed.append(f"no rows compared: {a}")
    else:
        for key in ("max_rel_diff", "max_logit_rel_diff"):
            v = a[key]
            if not isinstance(v, (int, float)) or not v <= BOUND:
                failed.append(f"{key} {v} > {BOUND}")
        print(f"agreement: {a['rows']} rows, max {a['max_rel_diff']:.3g}; "
              f"{a['logit_rows']} logit rows, max {a['max_logit_rel_diff']:.3g}")

    rc_h, host = run(kvcheck, scenario, os.path.join(out, "host"), "host", extra)
    rc_c, cuda = run(kvcheck, scenario, os.path.join(out, "cuda"), "cuda", extra)
    if host["reference_mode"] != cuda["reference_mode"]:
        # auto: sampled on the host, full on cuda; the verdicts are compared in full mode alone
        rc_h, host = run(kvcheck, scenario, os.path.join(out, "host"), "host",
                         [*extra, "--reference", cuda["reference_mode"]])
    if rc_h != rc_c or host["verdict"] != cuda["verdict"]:
        failed.append(f"host reference: exit {rc_h} {host['verdict']}, "
                      f"cuda reference: exit {rc_c} {cuda['verdict']}")
    fh, fc = host["first_failure"], cuda["first_failure"]
    if (fh is None) != (fc is None):
        failed.append(f"first failure: host {fh}, cuda {fc}")
    elif fh is not None:
        for k in WHERE:
            if fh.get(k) != fc.get(k):
                failed.append(f"first failure {k}: host {fh.get(k)}, cuda {fc.get(k)}")
        vh, vc = fh.get("value"), fc.get("value")
        if isinstance(vh, float) and isinstance(vc, float) and math.isfinite(vh):
            if abs(vh - vc) > 1e-6 * max(abs(vh), 1e-30):
                failed.append(f"first failure value: host {vh}, cuda {vc}")
        elif vh != vc:
            failed.append(f"first failure value: host {vh}, cuda {vc}")
    print(f"verdicts: host {host['verdict']} ({host['seconds']:.1f} s), "
          f"cuda {cuda['verdict']} ({cuda['seconds']:.1f} s)")
    if failed:
        print(f"FAIL {scenario}:\n  " + "\n  ".join(failed))
        sys.exit(1)
    print(f"OK {scenario}")


if __name__ == "__main__":
    main()
