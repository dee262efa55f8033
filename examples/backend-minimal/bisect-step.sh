#!/usr/bin/env bash
# bisect-step.sh — one step of `git bisect run` over a backend plugin's repository: rebuild the
# plugin at this commit, run kvcheck's scenarios against it, and answer git bisect. It is
# kvcheck's scripts/bisect-step.sh in its backend use (BACKEND set); that script's header says
# what each answer means and what it reads from the environment:
#   KVCHECK    the kvcheck binary (a fixed build, outside the repository being bisected)
#   BUILD_CMD  the command that rebuilds the plugin, run with bash in the current directory
#   BACKEND    the plugin it builds (a path to the .so)
#   SCENARIOS  the scenario files, separated by spaces (e.g. "scenarios/smoke.json ...")
#   KVCHECK_ARGS, KVCHECK_OUT  optional (more `kvcheck run` options; the result folder)
#
#   exit 0 good; 1 bad (corruption, a backend op's error status, crash or hang: regressions;
#   kvcheck's own crash or internal error); 125 skip (the build failed, the plugin does not load,
#   its capabilities cannot take a scenario); 255 abort (checked before building: KVCHECK not an
#   executable file, a SCENARIOS file missing or unreadable; bad usage, an invalid scenario;
#   kvcheck interrupted, exit 129/130/143, or killed by SIGKILL, 137: the OOM killer, a timeout,
#   which says nothing about the commit). Nothing is removed: KVCHECK stays, and BUILD_CMD must
#   rebuild BACKEND itself (or fail).
#
# Example (the README of examples/backend-minimal walks through it):
#   KVCHECK=$PWD/build/kvcheck BUILD_CMD="ninja -C build libmybackend.so" \
#   BACKEND=$PWD/build/libmybackend.so SCENARIOS="$HOME/kvcheck/scenarios/smoke.json" \
#   git bisect run $HOME/kvcheck/examples/backend-minimal/bisect-step.sh
set -u

if [[ -z "${BACKEND:-}" ]]; then
  echo "bisect-step.sh: set BACKEND (see the comment at the top of this script)" >&2
  exit 255
fi
exec "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../../scripts/bisect-step.sh"
