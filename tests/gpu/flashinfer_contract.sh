#!/usr/bin/env bash
# flashinfer_contract.sh PROBE KVCHECK PLUGIN SCENARIO OUTDIR — the LSE contract check must fail
# when it should (ctest gpu-flashinfer-lse-contract; exit 77 without a GPU).
#
# The FlashInfer plugin in its ragged-prefill mode (varlen_attention on FlashInfer, which writes
# base-2 LSE) with merge_states pinned to kvcheck's built-in merge, which reads LSE in the base the
# plugin declares:
#   honest (declares base 2): kvcheck converts at the merge, the run is clean (exit 0) and
#     FlashInfer ran the varlen calls;
#   lying (declare_lse=natural): the built-in merge weighs the context and new-token states by
#     base-2 values read as natural logs; the run must be corrupt (exit 1) with its first failure at
#     the check site of the merged rows, prefill_with_context, whose ops name merge_states.
set -uo pipefail
probe=$1 kvcheck=$2 plugin=$3 scenario=$4 out=$5
"$probe" >/dev/null 2>&1 || exit 77
mkdir -p "$out"
run() {  # run NAME OPTIONS: the run document (--json) on stdout, the exit code in $out/NAME.rc
  "$kvcheck" run "$scenario" --device cuda --backend "$plugin" --backend-option "$2" \
    --backend-op merge_states=builtin --no-regressions --expect clean --epochs 1 \
    --sampled-requests 2 --out "$out/$1" --json >"$out/$1.json" 2>"$out/$1.log"
  echo $? >"$out/$1.rc"
}
run honest prefill=ragged
run lying prefill=ragged,declare_lse=natural
python3 - "$out" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
def load(name):
    rc = int((out / f"{name}.rc").read_text())
    try:  # `run --json`'s kvcheck.run/1 document: its one result
        results = json.loads((out / f"{name}.json").read_text())["results"]
    except (json.JSONDecodeError, KeyError, TypeError):
        results = []
    doc = results[0] if len(results) == 1 else None
    if doc is None:
        print(f"{name}: exit {rc}, no result document:\n" + (out / f"{name}.log").read_text())
    return rc, doc
def varlen_calls(doc):
    ops = {o["op"]: o for o in doc["backend"]["ops"]}
    return ops["varlen_attention"]["backend_calls"], ops["merge_states"]["backend_calls"]
ok = True
rc, doc = load("honest")
if doc is None or rc != 0 or doc["verdict"] != "clean":
    ok = False
    print(f"honest adapter: exit {rc}, verdict {doc and doc['verdict']} (want 0, clean)")
else:
    v, m = varlen_calls(doc)
    print(f"honest adapter: clean; FlashInfer ran {v} varlen calls, {m} merges (merge pinned)")
    ok &= v > 0 and m == 0
rc, doc = load("lying")
f = doc and doc.get("first_failure")
if doc is None or rc != 1 or not f:
    ok = False
    print(f"lying adapter: exit {rc}, verdict {doc and doc['verdict']} (want 1 and a failure)")
else:
    print(f"lying adapter: {doc['verdict']}, first failure at {f['site']} (ops {f['ops']})")
    ok &= f["site"] == "prefill_with_context" and "merge_states" in f["ops"]
sys.exit(0 if ok else 1)
PY
