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
#   bad configuration, found before building (SCENARIOS unset, or naming a file that does not
#     exist or cannot be read; with BACKEND, KVCHECK or BUILD_CMD unset or KVCHECK not an
#     executable file; without BACKEND, KVCHECK outside the build folder, see below)
#                                              -> 255, abort: the same at every commit
#   the build fails, or leaves no kvcheck      -> 125 (this commit cannot be tested)
#   the build is interrupted or killed (129, 130, 137, 143, as kvcheck below) -> 255, abort
#   kvcheck exits 0 / 1                        -> 0 / 1 (the verdicts)
#   kvcheck exits 2: input it cannot understand (an older commit that lacks a field, a
#     regression, an option)                   -> 125; with BACKEND (a fixed kvcheck, so the
#     scenarios or options are wrong for every commit) -> 255, abort
#   kvcheck exits 3 (cannot run here) or 125   -> 125
#   kvcheck exits 4 (kvcheck's own invariant broke: the commit under test broke it) -> 1
#   kvcheck is interrupted (exit 129, 130, 143: SIGHUP, SIGINT, SIGTERM, whether it exits so
#     itself, as kvcheck's handler does, or dies by the signal) or killed by SIGKILL (137: the
#     OOM killer, a CI timeout, kill -9)       -> 255, abort: that says nothing about the commit,
#     and calling it bad would make git name a good commit as the first bad one
#   kvcheck dies by any other signal (SIGSEGV 139, SIGABRT 134 from an assertion, SIGBUS 135,
#     SIGFPE 136, SIGILL 132, SIGTRAP 133...)  -> 1: a crash is bad
#   this script is interrupted (SIGHUP/SIGINT/SIGTERM) -> 255, abort the bisection
#   any other status                           -> passed through (git: 1-127 bad, else abort)
# kvcheck is run without --bisect: this script does the mapping, the same for every commit.
# After an abort, the commits judged so far are kept: once the cause is gone, `git bisect run`
# again goes on from the commit checked out (or judge it by hand: git bisect good|bad|skip).
#
# Everything comes from the environment:
#   SCENARIOS         the scenario files, separated by spaces. Keep them outside the repository
#                     being bisected (a copy), so that every commit is judged on the same input
#                     (a scenario missing at some commit aborts the bisection)
#   BUILD_CMD         the build command, run with bash in the repository (bisecting kvcheck:
#                     optional; default: cmake -S . -B "$KVCHECK_BUILD_DIR" -G Ninja
#                     -DCMAKE_BUILD_TYPE=Release -DKVCHECK_CUDA=OFF, then build target kvcheck)
#   KVCHECK_BUILD_DIR bisecting kvcheck: its build folder (default build-bisect, in the repository;
#                     may be elsewhere). BUILD_CMD must leave kvcheck there (or at KVCHECK)
#   KVCHECK           the kvcheck binary. Bisecting kvcheck: default "$KVCHECK_BUILD_DIR/kvcheck";
#                     if set, it must lie inside KVCHECK_BUILD_DIR. With BACKEND: required, an
#                     executable file, a fixed build outside the repository
#   BACKEND           bisecting a backend: the plugin BUILD_CMD builds (passed as --backend), or
#                     python:MODULE, a Python backend imported from the repository's checkout
#                     (the working folder): no build, BUILD_CMD optional (default none)
#   KVCHECK_ARGS      optional, more `kvcheck run` options (e.g. --device cuda)
#   KVCHECK_OUT       optional, the folder for result files (default $TMPDIR/kvcheck-bisect)
#
# Never a stale binary, never a user's file: bisecting kvcheck, a binary left by the previous
# step would judge this commit if the build failed to write a new one (a build that stops short,
# a BUILD_CMD that puts it elsewhere), so the script removes the previous kvcheck before building
# and skips the commit when the build leaves none. It removes that one file and only inside the
# build folder, which is the build's output by contract: the default build-bisect is made by the
# script's own build, and a KVCHECK_BUILD_DIR you set is a folder you give it for that (with a
# BUILD_CMD that writes kvcheck there). Hence, without BACKEND, a KVCHECK set elsewhere is refused
# (255) before anything is built or removed:
#   outside the repository: the same binary would judge every commit, so the bisection cannot
#     find a kvcheck commit: set BACKEND (bisecting a plugin) or leave KVCHECK unset;
#   inside the repository (e.g. your own build/kvcheck with BUILD_CMD="cmake --build build"):
#     it is your file, and the script cannot tell that the build rewrote it at this commit; say
#     KVCHECK_BUILD_DIR=build instead (KVCHECK unset), and the script removes build/kvcheck
#     before each build.
# A file git tracks is never removed (255). With BACKEND nothing is removed: KVCHECK is fixed, and
# the plugin's BUILD_CMD must rebuild BACKEND itself (or fail).
#
# Examples:
#   # kvcheck itself: which commit broke the engine on this scenario? (GOOD: a commit it passed at)
#   cp scenarios/smoke.json /tmp/smoke.json
#   git bisect start HEAD GOOD && SCENARIOS=/tmp/smoke.json git bisect run scripts/bisect-step.sh
#   # a backend plugin (examples/backend-minimal/README.md, section 6)
#   KVCHECK=~/kvcheck/build/kvcheck BUILD_CMD="ninja -C build libmine.so" \
#   BACKEND=$PWD/build/libmine.so SCENARIOS=~/kvcheck/scenarios/smoke.json \
#   git bisect run ~/kvcheck/scripts/bisect-step.sh
#   # a Python backend (docs/python-backends.md): mypkg/kv_backend.py at each commit
#   KVCHECK=~/kvcheck/build/kvcheck BACKEND=python:mypkg.kv_backend \
#   SCENARIOS=~/kvcheck/scenarios/smoke.json git bisect run ~/kvcheck/scripts/bisect-step.sh
set -u

say() { echo "bisect-step.sh: $*" >&2; }

# Bad configuration: the same at every commit, so abort rather than skip them all.
config_error() {
  say "$* (see the comment at the top of this script): aborting the bisection"
  exit 255
}

interrupted=0
trap 'interrupted=1' HUP INT TERM
abort_if_interrupted() {
  if ((interrupted)); then
    say "interrupted: aborting the bisection"
    exit 255
  fi
}

# abort_if_not_a_verdict WHAT STATUS: WHAT (kvcheck, the build) was interrupted (129/130/143,
# by a signal or its own handler exiting 128+N) or killed by SIGKILL (137: the OOM killer, a CI
# timeout, kill -9). That is about this machine, not this commit: answering bad (or skip) would
# let git name a good commit as the first bad one, so abort, and say how to go on.
abort_if_not_a_verdict() {
  local what=$1 status=$2 why
  case $status in
    129) why="interrupted (exit 129: SIGHUP)" ;;
    130) why="interrupted (exit 130: SIGINT)" ;;
    143) why="interrupted (exit 143: SIGTERM)" ;;
    137) why="killed (SIGKILL, exit 137: the OOM killer, a timeout, kill -9?)" ;;
    *) return 0 ;;
  esac
  say "$what was $why: not a verdict about this commit: aborting the bisection; rerun" \
    "\`git bisect run\` once the cause is gone (the commits judged so far are kept), or judge" \
    "this commit by hand (git bisect good|bad|skip)"
  exit 255
}

# canonical PATH: PATH made absolute, the part of it that exists resolved (symlinks followed, by
# cd -P) and the rest normalised by hand ('.', '..', '//'), so that "build-bisect/../x" is not
# taken for a file in build-bisect. A last component that is not a folder is kept as it is: a
# link is judged where it lies, not where it points (removing it removes the link only).
canonical() {
  local head=$1 tail="" out part
  [[ $head == /* ]] || head=$PWD/$head
  until [[ -d $head ]]; do
    tail=${head##*/}${tail:+/$tail}
    head=${head%/*}
    [[ -n $head ]] || head=/
  done
  out=$(cd -P -- "$head" 2>/dev/null && pwd) || out=$head
  local -a parts
  IFS=/ read -ra parts <<<"$tail"
  for part in "${parts[@]}"; do
    case $part in
      '' | .) ;;
      ..)
        out=${out%/*}
        [[ -n $out ]] || out=/
        ;;
      *) out=${out%/}/$part ;;
    esac
  done
  echo "$out"
}

# inside DIR PATH: PATH (canonical) is DIR (canonical) or lies under it.
inside() { [[ $1 == / || $2 == "$1" || $2 == "$1"/* ]]; }

# --- The configuration, checked before anything is built: a mistyped path would otherwise
# build every commit and then skip it.
# SCENARIOS is a list on purpose (split on spaces; a glob is expanded, as kvcheck would get it).
# shellcheck disable=SC2206
scenarios=(${SCENARIOS:-})
if ((${#scenarios[@]} == 0)); then
  config_error "set SCENARIOS"
fi
for s in "${scenarios[@]}"; do
  if [[ ! -e $s ]]; then
    config_error "SCENARIOS: no such file: $s (keep the scenarios outside the repository being" \
      "bisected, so that every commit has them)"
  elif [[ ! -f $s ]]; then
    config_error "SCENARIOS: not a regular file: $s"
  elif [[ ! -r $s ]]; then
    config_error "SCENARIOS: cannot read $s"
  fi
done

build_dir=${KVCHECK_BUILD_DIR:-build-bisect}
if [[ -n ${BACKEND:-} ]]; then
  required=(KVCHECK BUILD_CMD)
  if [[ $BACKEND == python:* ]]; then required=(KVCHECK); fi  # imported as checked out
  for var in "${required[@]}"; do
    if [[ -z ${!var:-} ]]; then config_error "with BACKEND, set $var"; fi
  done
  kvcheck=${KVCHECK:?}
  build=${BUILD_CMD:-:}
  if [[ ! -e $kvcheck ]]; then
    config_error "KVCHECK: no such file: $kvcheck (with BACKEND, the fixed kvcheck that judges" \
      "every commit)"
  elif [[ ! -f $kvcheck || ! -x $kvcheck ]]; then
    config_error "KVCHECK: not an executable file: $kvcheck"
  fi
else
  kvcheck=${KVCHECK:-$build_dir/kvcheck}
  build=${BUILD_CMD:-"cmake -S . -B '$build_dir' -G Ninja -DCMAKE_BUILD_TYPE=Release \
-DKVCHECK_CUDA=OFF >/dev/null && cmake --build '$build_dir' --target kvcheck"}
  # The binary must be the build's output, in the build folder (the header says why).
  kvcheck_at=$(canonical "$kvcheck")
  build_at=$(canonical "$build_dir")
  if ! inside "$build_at" "$kvcheck_at"; then
    repo=$(git rev-parse --show-toplevel 2>/dev/null) && repo=$(canonical "$repo")
    if [[ -z $repo ]] || ! inside "$repo" "$kvcheck_at"; then
      config_error "KVCHECK=${KVCHECK:-} is outside the repository and the build folder" \
        "($build_dir): that one binary would judge every commit, so this cannot bisect kvcheck;" \
        "set BACKEND to bisect a plugin with it, or leave KVCHECK unset to bisect kvcheck (each" \
        "commit's own build in $build_dir)"
    fi
    config_error "KVCHECK=${KVCHECK:-} is outside the build folder $build_dir" \
      "(KVCHECK_BUILD_DIR): the script cannot tell that the build rewrote it at this commit, and" \
      "removes only its build's output; leave KVCHECK unset and set KVCHECK_BUILD_DIR to the" \
      "folder BUILD_CMD writes kvcheck into"
  fi
  # Never judge with a previous commit's binary: remove it, so that a build that does not write
  # one leaves none (125 below). Only this file, only in the build folder, never a tracked file.
  if [[ -e $kvcheck || -L $kvcheck ]]; then
    if git ls-files --error-unmatch -- "$kvcheck" >/dev/null 2>&1; then
      config_error "KVCHECK: $kvcheck is a file of the repository; the script will not remove it"
    fi
    if ! rm -f -- "$kvcheck"; then
      config_error "cannot remove the previous binary $kvcheck (it would judge this commit)"
    fi
  fi
fi

# --- Build, run, answer.
bash -c "$build"
build_status=$?
abort_if_interrupted
abort_if_not_a_verdict "the build" "$build_status"
if ((build_status != 0)); then
  say "the build failed (exit $build_status): skipping this commit"
  exit 125
fi
if [[ ! -f $kvcheck || ! -x $kvcheck ]]; then
  say "the build left no kvcheck at $kvcheck: skipping this commit"
  exit 125
fi

args=(run -q --out "${KVCHECK_OUT:-${TMPDIR:-/tmp}/kvcheck-bisect}")
if [[ -n ${BACKEND:-} ]]; then args+=(--backend "$BACKEND"); fi
# shellcheck disable=SC2086  # KVCHECK_ARGS is a list on purpose
"$kvcheck" "${args[@]}" ${KVCHECK_ARGS:-} "${scenarios[@]}"
status=$?
abort_if_interrupted
abort_if_not_a_verdict kvcheck "$status"

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
    # 129/130/137/143 aborted above; any other signal is a crash of the commit under test.
    if ((status > 128 && status <= 128 + 64)); then
      say "kvcheck died by signal $((status - 128)) ($(kill -l $((status - 128)) 2>/dev/null ||
        echo '?')): a crash is bad"
      exit 1
    fi
    exit "$status"
    ;;
esac
