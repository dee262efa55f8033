#!/usr/bin/env bash
# No false alarms: run one scenario with its regressions switched off over many seeds; every run
# must come out clean. Usage: scenario_seeds.sh KVCHECK SCENARIO FIRST_SEED LAST_SEED OUT_DIR
set -u
kvcheck=$1 scenario=$2 first=$3 last=$4 out=$5
failed=0
for seed in $(seq "$first" "$last"); do
  if ! "$kvcheck" run "$scenario" --no-regressions --expect clean --seed "$seed" -q --out "$out" >/dev/null; then
    echo "FAIL: seed $seed: $scenario is not clean with --no-regressions" >&2
    "$kvcheck" run "$scenario" --no-regressions --expect clean --seed "$seed" --out "$out" | tail -3 >&2
    failed=1
  fi
done
exit $failed
