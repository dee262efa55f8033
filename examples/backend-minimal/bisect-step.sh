#!/usr/bin/env bash
# bisect-step.sh — one step of `git bisect run` over a backend plugin's repository: rebuild the
# plugin at this commit, run kvcheck's scenarios against it, and answer git bisect.
#
#   exit 0    good: every scenario met its expectation
#   exit 1    bad: a verdict did not (corruption, an op's error status, a crash or hang in the
#             backend: kvcheck calls each of them a regression)
#   exit 125  skip: this commit cannot be tested (the build failed, the plugin does not load,
#             its capabilities cannot take a scenario)
#   exit 255  abort the bisection: the setup is wrong (bad usage, an invalid scenario)
#
# Everything comes from the environment, so that one script serves any backend:
#   KVCHECK    the kvcheck binary (a fixed build, outside the repository being bisected)
#   BUILD_CMD  the command that rebuilds the plugin, run with bash in the current directory
#   BACKEND    the plugin it builds (a path to the .so)
#   SCENARIOS  the scenario files, separated by spaces (e.g. "scenarios/smoke.json ...")
#   KVCHECK_ARGS  optional, more options for `kvcheck run` (e.g. --backend-op write_kv=builtin)
#   KVCHECK_OUT   optional, the folder for result files (default $TMPDIR/kvcheck-bisect: not
#                 the repository being bisected)
#
# Example (the README of examples/backend-minimal walks through it):
#   KVCHECK=$PWD/build/kvcheck BUILD_CMD="ninja -C build libmybackend.so" \
#   BACKEND=$PWD/build/libmybackend.so SCENARIOS="$HOME/kvcheck/scenarios/smoke.json" \
#   git bisect run $HOME/kvcheck/examples/backend-minimal/bisect-step.sh
set -u

for var in KVCHECK BUILD_CMD BACKEND SCENARIOS; do
  if [[ -z "${!var:-}" ]]; then
    echo "bisect-step.sh: set $var (see the comment at the top of this script)" >&2
    exit 255
  fi
done

if ! bash -c "$BUILD_CMD"; then
  echo "bisect-step.sh: the build failed: skipping this commit" >&2
  exit 125
fi

# shellcheck disable=SC2086  # SCENARIOS and KVCHECK_ARGS are lists on purpose
"$KVCHECK" run --bisect -q --out "${KVCHECK_OUT:-${TMPDIR:-/tmp}/kvcheck-bisect}" \
  --backend "$BACKEND" ${KVCHECK_ARGS:-} $SCENARIOS
status=$?
case $status in
  0 | 1 | 125) exit $status ;;
  *)
    echo "bisect-step.sh: kvcheck exited $status (bad usage or input): aborting" >&2
    exit 255
    ;;
esac
