#!/usr/bin/env bash
# bisect-step.sh — one step of `git bisect run` with kvcheck as the judge: rebuild at the commit
# under test, run the scenarios, and answer git bisect truthfully whatever that commit's kvcheck
# knows of exit codes (an old commit's binary predates kvcheck's exit-code table).
#
# Two uses, one script:
#   bisecting kvcheck itself (the engine, the ops): the repository is kvcheck's; each commit's
#     own kvcheck is built (BUILD_CMD, default: cmake into $KVCHECK_BUILD_DIR) and run.
#   bisecting a backend plugin (BACKEND set): the repository is the plugin's; BUILD_CMD rebuilds
#     the plugin and a fixed kvcheck (KVCHECK) judges it with --backend.
#
# What it answers (git bisect run: 0 good, 1 bad, 125 skip, 255 abort):
#   the build fails, or leaves no kvcheck      -> 125 (this commit cannot be tested)
#   kvcheck exits 0 / 1                        -> 0 / 1 (the verdicts)
#   kvcheck exits 2: input it cannot understand (an older commit that lacks a field, a
#     regression, an option)                   -> 125; with BACKEND (a fixed kvcheck, so the
#     scenarios or options are wrong for every commit) -> 255, abort
#   kvcheck exits 3 (cannot run here) or 125   -> 125
#   kvcheck exits 4 (kvcheck's own invariant broke: the commit under test broke it) -> 1
#   kvcheck dies by a signal (SIGSEGV, an abort of an assertion, a kill) -> 1: a crash is bad
#   this script is interrupted (SIGINT/SIGTERM)  -> 255, abort the bisection
#   any other status                           -> passed through
# kvcheck is run without --bisect: this script does the mapping, the same for every commit.
#
# Everything comes from the environment:
#   SCENARIOS         the scenario files, separated by spaces. Keep them outside the repository
#                     being bisected (a copy), so that every commit is judged on the same input
#   BUILD_CMD         the build command, run with bash in the repository (bisecting kvcheck:
#                     optional; default: cmake -S . -B "$KVCHECK_BUILD_DIR" -G Ninja
#                     -DCMAKE_BUILD_TYPE=Release -DKVCHECK_CUDA=OFF, then build target kvcheck)
#   KVCHECK_BUILD_DIR bisecting kvcheck: its build folder (default build-bisect, in the repository)
#   KVCHECK           the kvcheck binary (default "$KVCHECK_BUILD_DIR/kvcheck"; with BACKEND:
#                     required, a fixed build outside the repository)
#   BACKEND           bisecting a backend: the plugin BUILD_CMD builds (passed as --backend)
#   KVCHECK_ARGS      optional, more `kvcheck run` options (e.g. --device cuda)
#   KVCHECK_OUT       optional, the folder for result files (default $TMPDIR/kvcheck-bisect)
#
# Examples:
#   # kvcheck itself: which commit broke the engine on this scenario?
#   cp scenarios/smoke.json /tmp/smoke.json
#   git bisect start HEAD v0.3 && SCENARIOS=/tmp/smoke.json git bisect run scripts/bisect-step.sh
#   # a backend plugin (examples/backend-minimal/README.md, section 6)
#   KVCHECK=~/kvcheck/build/kvcheck BUILD_CMD="ninja -C build libmine.so" \
#   BACKEND=$PWD/build/libmine.so SCENARIOS=~/kvcheck/scenarios/smoke.json \
#   git bisect run ~/kvcheck/scripts/bisect-step.sh
set -u

say() { echo "bisect-step.sh: $*" >&2; }

interrupted=0
trap 'interrupted=1' INT TERM
abort_if_interrupted() {
  if ((interrupted)); then
    say "interrupted: aborting the bisection"
    exit 255
  fi
}

if [[ -z ${SCENARIOS:-} ]]; then
  say "set SCENARIOS (see the comment at the top of this script)"
  exit 255
fi
build_dir=${KVCHECK_BUILD_DIR:-build-bisect}
if [[ -n ${BACKEND:-} ]]; then
  for var in KVCHECK BUILD_CMD; do
    if [[ -z ${!var:-} ]]; then
      say "with BACKEND, set $var (see the comment at the top of this script)"
      exit 255
    fi
  done
  kvcheck=$KVCHECK
  build=$BUILD_CMD
else
  kvcheck=${KVCHECK:-$build_dir/kvcheck}
  build=${BUILD_CMD:-"cmake -S . -B '$build_dir' -G Ninja -DCMAKE_BUILD_TYPE=Release \
-DKVCHECK_CUDA=OFF >/dev/null && cmake --build '$build_dir' --target kvcheck"}
fi

if [[ -z ${BACKEND:-} ]]; then rm -f "$kvcheck"; fi # never judge with a previous commit's binary
bash -c "$build"
build_status=$?
abort_if_interrupted
if ((build_status != 0)); then
  say "the build failed (exit $build_status): skipping this commit"
  exit 125
fi
if [[ ! -x $kvcheck ]]; then
  say "the build left no kvcheck at $kvcheck: skipping this commit"
  exit 125
fi

args=(run -q --out "${KVCHECK_OUT:-${TMPDIR:-/tmp}/kvcheck-bisect}")
if [[ -n ${BACKEND:-} ]]; then args+=(--backend "$BACKEND"); fi
# shellcheck disable=SC2086  # SCENARIOS and KVCHECK_ARGS are lists on purpose
"$kvcheck" "${args[@]}" ${KVCHECK_ARGS:-} $SCENARIOS
status=$?
abort_if_interrupted

case $status in
  0 | 1 | 125) exit "$status" ;;
  2)
    if [[ -n ${BACKEND:-} ]]; then
      say "kvcheck exited 2 (bad usage or an invalid scenario, the same for every commit):" \
        "aborting"
      exit 255
    fi
    say "kvcheck exited 2: this commit cannot understand the input: skipping it"
    exit 125
    ;;
  3)
    say "kvcheck exited 3: the run could not be carried out here: skipping this commit"
    exit 125
    ;;
  4)
    say "kvcheck exited 4: an internal error (a broken invariant): bad"
    exit 1
    ;;
  126 | 127)
    say "kvcheck could not be executed (exit $status): skipping this commit"
    exit 125
    ;;
  *)
    if ((status > 128 && status <= 128 + 64)); then
      say "kvcheck died by signal $((status - 128)) ($(kill -l $((status - 128)) 2>/dev/null ||
        echo '?')): a crash is bad"
      exit 1
    fi
    exit "$status"
    ;;
esac
