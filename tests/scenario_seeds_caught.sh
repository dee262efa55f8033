#!/usr/bin/env bash
# Detection at every seed: run one regression scenario as it is (its regressions on) over many
# seeds; every run must meet the scenario's expectation (exit 0): a regression that is caught only
# at the seed the file names is a regression the suite catches by luck. --fail-fast: a run ends at
# its first failure, with the verdict of the whole run (tests/cli/fail_fast_test.cpp).
# Usage: scenario_seeds_caught.sh KVCHECK SCENARIO FIRST_SEED LAST_SEED OUT_DIR
set -u
kvcheck=$1 scenario=$2 first=$3 last=$4 out=$5
failed=0
for seed in $(seq "$first" "$last"); do
  if ! "$kvcheck" run "$scenario" --seed "$seed" --fail-fast -q --out "$out" >/dev/null; then
    echo "FAIL: seed $seed: $scenario does not meet its expectation" >&2
    "$kvcheck" run "$scenario" --seed "$seed" --out "$out" 2>&1 | tail -4 >&2
    failed=1
  fi
done
exit $failed
