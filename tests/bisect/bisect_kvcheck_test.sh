#!/usr/bin/env bash
# bisect_kvcheck_test.sh — scripts/bisect-step.sh answers git bisect truthfully for each kind of
# commit, over kvcheck's own history, whatever exit codes that commit's kvcheck knows; it never
# names a good commit because kvcheck was killed, never deletes a file it did not create, and
# refuses a bad configuration before building anything.
#
# The throwaway repository stands for kvcheck's: each commit holds a tiny fake `kvcheck`
# (kvcheck.in, a shell script that answers as a real commit of that kind would) and a build.sh
# that "compiles" it (bash -n) into $KVCHECK_BUILD_DIR, the way the default BUILD_CMD builds
# kvcheck with cmake, and records that it ran in $BUILD_MARKER (so a test can prove that nothing
# was built). What is tested is the mapping under a real `git bisect run`, in seconds.
#
#   bisect_kvcheck_test.sh step-mapping BISECT_STEP_SH
#       one step by hand per row: exit 0 -> 0, 1 -> 1, 2 -> 125, 3 -> 125, 4 -> 1, 125 -> 125;
#       death by SIGSEGV / SIGABRT / SIGBUS / SIGFPE / SIGILL / SIGTRAP -> 1 (a crash);
#       killed by SIGKILL (137), exit 129 / 130 / 143, death by SIGHUP / SIGTERM -> 255 (abort:
#       not a verdict); a failed build -> 125, a build killed by SIGKILL -> 255, a build that
#       leaves no binary (the previous commit's is removed first) -> 125; an interrupted step
#       -> 255 (abort)
#   bisect_kvcheck_test.sh KIND BISECT_STEP_SH
#       KIND = verdict | crash | assertion: commits 1-4 good, 5 and 6 of the KIND (5 is the first
#         bad commit), 7-8 a bad verdict. git bisect run must name 5.
#       KIND = unknown-field | build-failure: commits 1-3 good, 4 and 5 of the KIND (they cannot
#         be tested: skip), 6 good, 7 a bad verdict (the first bad), 8 bad. git bisect run must
#         name 7 and skip 4 or 5 (were they called bad, it would name 4).
#       KIND = killed: commits 1-6 good, 7-8 a bad verdict, but kvcheck is SIGKILLed at commit 4
#         (the first commit git tests), as the OOM killer would: git bisect run must abort there
#         (the old answer, bad, named commit 4), and, run again once the kill is gone, name 7.
#   bisect_kvcheck_test.sh CONFIG BISECT_STEP_SH
#       a bad configuration: bisect-step.sh answers 255 before building (BUILD_MARKER stays
#       absent) and removes nothing; git bisect run aborts at its first step. Commits 1-4 good,
#       5-8 a bad verdict.
#       CONFIG = user-kvcheck: no BACKEND, KVCHECK a user's binary outside the repository (also
#         spelled through the build folder, "$KVCHECK_BUILD_DIR/../user/kvcheck"), inside the
#         repository but outside the build folder, or a file git tracks: refused, the file
#         unchanged; KVCHECK inside the build folder is taken (git bisect run names 5).
#       CONFIG = missing-scenario: SCENARIOS names a missing file, a folder, nothing (or an
#         unreadable file, when not run as root).
#       CONFIG = backend-kvcheck: BACKEND set with KVCHECK missing, not executable, a folder or
#         unset; a good KVCHECK is taken (0) and left in place.
#
# Needs bash and git; no global or system git config is read and no hooks run.
set -euo pipefail

if (($# != 2)); then
  echo "usage: $0 step-mapping|verdict|crash|assertion|unknown-field|build-failure|killed|" \
    "user-kvcheck|missing-scenario|backend-kvcheck BISECT_STEP_SH" >&2
  exit 2
fi
kind=$1 step=$2
fail() {
  echo "FAIL (bisect $kind): $*" >&2
  exit 1
}
[[ -x $step ]] || fail "$step is not executable (git bisect run calls it directly)"
[[ $step == /* ]] || step=$PWD/$step # the test works in the throwaway repository

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvcheck-bisect-kvcheck.XXXXXX")
# shellcheck source-path=SCRIPTDIR source=bisect_run.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/bisect_run.sh"
trap 'rm -rf "$tmp"' EXIT

# What bisect-step.sh reads (BUILD_CMD: the fake build; the rest as a user would set it).
export KVCHECK_BUILD_DIR=$tmp/build BUILD_CMD="bash build.sh" SCENARIOS=$tmp/scenario.json
export KVCHECK_OUT=$tmp/results TMPDIR=$tmp BUILD_MARKER=$tmp/build-ran KILL_FLAG=$tmp/oom
unset KVCHECK BACKEND KVCHECK_ARGS
echo '{"format": 1, "workload": {"new_field": 1}}' >"$SCENARIOS"

repo=$tmp/repo
isolated_repo "$repo"
cat >build.sh <<'EOS'
#!/usr/bin/env bash
# The fake build: "compile" kvcheck.in (a syntax check) and install it.
set -eu
echo "built $(git rev-parse --short HEAD)" >>"$BUILD_MARKER"
if grep -q '^# kill the build' kvcheck.in; then kill -KILL $$; fi # the OOM killer, a timeout
bash -n kvcheck.in
mkdir -p "$KVCHECK_BUILD_DIR"
cp kvcheck.in "$KVCHECK_BUILD_DIR/kvcheck"
chmod +x "$KVCHECK_BUILD_DIR/kvcheck"
EOS

# The fake kvcheck of one kind of commit.
fake() {
  local body
  # shellcheck disable=SC2016  # the bodies' $ expressions are the fake's, expanded as it runs
  case $1 in
    good) body='echo "verdict: clean (expected clean) — OK"; exit 0' ;;
    verdict) body='echo "verdict: corrupt (expected clean) — MISMATCH"; exit 1' ;;
    crash) body='ulimit -c 0; kill -SEGV $$' ;;
    abort) body='ulimit -c 0; kill -ABRT $$' ;;
    bus) body='ulimit -c 0; kill -BUS $$' ;;
    fpe) body='ulimit -c 0; kill -FPE $$' ;;
    ill) body='ulimit -c 0; kill -ILL $$' ;;
    trap) body='ulimit -c 0; kill -TRAP $$' ;;
    killed) body='kill -KILL $$' ;; # killed from outside: the OOM killer, a CI timeout
    # kvcheck's own handler: interrupted by SIGHUP, SIGINT, SIGTERM, it exits 128+N itself
    exit-129 | exit-130 | exit-143) body="echo 'interrupted' >&2; exit ${1#exit-}" ;;
    hup) body='kill -HUP $$' ;; # an older kvcheck, without a handler, dies by the signal
    term) body='kill -TERM $$' ;;
    # a good commit, at which kvcheck is SIGKILLed while $KILL_FLAG exists
    killed-once) body='if [[ -e $KILL_FLAG ]]; then kill -KILL $$; fi; echo "verdict: clean"' ;;
    assertion) body='echo "internal error: BlockPool: block 3 freed while unused" >&2; exit 4' ;;
    unknown-field) body='echo "error: s.json: /workload/new_field: unknown key" >&2; exit 2' ;;
    cannot-run) body='echo "error: no CUDA device" >&2; exit 3' ;;
    skip) body='exit 125' ;;
    build-failure) body='if then fi' ;; # does not "compile"
    build-killed) body=$'# kill the build\nexit 0' ;;
    no-binary) body='exit 0' ;;
    *) fail "setting up: no fake kvcheck of kind $1" ;;
  esac
  printf '#!/usr/bin/env bash\n# kvcheck at a commit of kind %s\n%s\n' "$1" "$body" >kvcheck.in
}

declare -a hashes=("")
commit() {
  fake "$1"
  if [[ $1 == no-binary ]]; then
    sed -i 's|^cp kvcheck.in.*$|true|; s|^chmod.*$|true|' build.sh
  elif ((${#hashes[@]} > 1)); then
    git checkout -q "${hashes[1]}" -- build.sh # the first commit's build
  fi
  git add -A
  git commit -q --allow-empty -m "$((${#hashes[@]})): $1"
  hashes+=("$(git rev-parse HEAD)")
}

# bisect-step.sh at commit N must exit WANT (and, given PATTERN, say it on stderr).
step_at() {
  local n=$1 want=$2 what=$3 pattern=${4:-} rc=0
  git checkout -q "${hashes[n]}"
  "$step" >"$tmp/step.log" 2>&1 || rc=$?
  if ((rc != want)); then
    cat "$tmp/step.log" >&2
    fail "bisect-step.sh at commit $n ($what) exited $rc, not $want"
  fi
  if [[ -n $pattern ]] && ! grep -q -- "$pattern" "$tmp/step.log"; then
    cat "$tmp/step.log" >&2
    fail "bisect-step.sh at commit $n ($what) did not say '$pattern'"
  fi
  echo "commit $n ($what): bisect-step.sh exited $rc, as it should"
}

# The bisection's verdicts, by commit number (for the record).
show_verdicts() {
  git bisect log | while read -r _ _ verb hash _; do
    for i in $(seq 1 8); do
      if [[ $hash == "${hashes[i]}" ]]; then echo "  bisect: commit $i $verb"; fi
    done
  done
}

# expect_refused WHAT PATTERN: with the environment as set, bisect-step.sh refuses the
# configuration: 255 by hand, saying PATTERN, before building; and a real `git bisect run` aborts
# at its first step with no commit judged and nothing built.
expect_refused() {
  local what=$1 pattern=$2 rc=0
  rm -f "$BUILD_MARKER"
  step_at 1 255 "$what: refused" "$pattern"
  grep -q "aborting the bisection" "$tmp/step.log" ||
    { cat "$tmp/step.log" >&2; fail "$what: the refusal did not say it aborts the bisection"; }
  [[ ! -e $BUILD_MARKER ]] || fail "$what: the build ran before the configuration was refused"
  git checkout -q "${hashes[8]}"
  git bisect start "${hashes[8]}" "${hashes[1]}" >/dev/null
  git bisect run "$step" >"$tmp/bisect.log" 2>&1 || rc=$?
  ((rc != 0)) || { show_log; fail "$what: git bisect run exited 0"; }
  if ! grep -q "exit code 255" "$tmp/bisect.log" || ! grep -q -- "$pattern" "$tmp/bisect.log"; then
    show_log
    fail "$what: git bisect run did not abort on bisect-step.sh's 255 ('$pattern')"
  fi
  ! grep -q "is the first bad commit" "$tmp/bisect.log" ||
    { show_log; fail "$what: git bisect run named a first bad commit"; }
  ! git bisect log | grep -qE '^git bisect (good|bad|skip) ' ||
    { show_log; fail "$what: a commit was judged"; }
  [[ ! -e $BUILD_MARKER ]] || { show_log; fail "$what: git bisect run built a commit"; }
  git bisect reset >/dev/null 2>&1
  echo "  and git bisect run aborted at its first step (exit $rc), nothing built"
}

# unchanged FILE COPY: FILE (a user's) is still there, the same as its COPY, still executable.
unchanged() {
  if [[ ! -f $1 || ! -x $1 ]] || ! cmp -s "$1" "$2"; then fail "$1 was removed or changed"; fi
  echo "  $1 is still there, unchanged"
}

if [[ $kind == step-mapping ]]; then
  rows=(good:0 verdict:1 unknown-field:125 cannot-run:125 assertion:1 skip:125
    crash:1 abort:1 bus:1 fpe:1 ill:1 trap:1
    killed:255 exit-129:255 exit-130:255 exit-143:255 hup:255 term:255
    no-binary:125 build-failure:125 build-killed:255)
  for row in "${rows[@]}"; do commit "${row%%:*}"; done
  for i in "${!rows[@]}"; do
    k=${rows[i]%%:*} want=${rows[i]##*:} pattern=""
    case $k in
      crash | abort | bus | fpe | ill | trap) pattern="a crash is bad" ;;
      killed) pattern="kvcheck was killed (SIGKILL" ;;
      exit-* | hup | term) pattern="kvcheck was interrupted (exit" ;;
      build-killed) pattern="the build was killed (SIGKILL" ;;
      no-binary)
        # The previous commit's binary is there: the step must not judge with it.
        [[ -x $KVCHECK_BUILD_DIR/kvcheck ]] || fail "setting up: no previous binary to remove"
        pattern="the build left no kvcheck"
        ;;
    esac
    [[ $want != 255 ]] || pattern="$pattern.*not a verdict about this commit: aborting"
    step_at $((i + 1)) "$want" "$k" "$pattern"
  done
  # An interrupted step aborts the bisection (255), whatever kvcheck answers.
  git checkout -q "${hashes[1]}"
  # shellcheck disable=SC2016  # $PPID is the fake kvcheck's, expanded when it runs
  printf '#!/usr/bin/env bash\nkill -INT $PPID; sleep 0.2; exit 0\n' >kvcheck.in
  rc=0
  "$step" >"$tmp/step.log" 2>&1 || rc=$?
  ((rc == 255)) || { cat "$tmp/step.log" >&2; fail "an interrupted step exited $rc, not 255"; }
  echo "an interrupted step: bisect-step.sh exited 255, as it should"
  git checkout -q -- kvcheck.in
  exit 0
fi

case $kind in
  verdict | crash | assertion)
    for k in good good good good "$kind" "$kind" verdict verdict; do commit "$k"; done
    expected=5 skipped_kind=""
    ;;
  unknown-field | build-failure)
    for k in good good good "$kind" "$kind" good verdict verdict; do commit "$k"; done
    expected=7 skipped_kind="4 5"
    ;;
  killed)
    for k in good good good killed-once good good verdict verdict; do commit "$k"; done
    expected=7 skipped_kind=""
    ;;
  user-kvcheck | missing-scenario | backend-kvcheck)
    for k in good good good good verdict verdict verdict verdict; do commit "$k"; done
    expected=5
    ;;
  *) fail "unknown kind '$kind'" ;;
esac
((${#hashes[@]} == 9)) || fail "setting up: ${#hashes[@]} - 1 commits, not 8"

# A user's own kvcheck binary, outside the repository (and a copy to compare it with).
mkdir -p "$tmp/user"
fake good
cp kvcheck.in "$tmp/user/kvcheck"
cp kvcheck.in "$tmp/user/kvcheck.orig"
chmod +x "$tmp/user/kvcheck"
git checkout -q -- kvcheck.in

case $kind in
  user-kvcheck)
    export KVCHECK=$tmp/user/kvcheck
    expect_refused "KVCHECK outside the repository" \
      "outside the repository and the build folder.*set BACKEND.*or leave KVCHECK unset"
    unchanged "$KVCHECK" "$tmp/user/kvcheck.orig"
    # The same file through the build folder's name: still outside it.
    export KVCHECK=$KVCHECK_BUILD_DIR/../user/kvcheck
    expect_refused "KVCHECK=\$KVCHECK_BUILD_DIR/../user/kvcheck" \
      "outside the repository and the build folder"
    unchanged "$tmp/user/kvcheck" "$tmp/user/kvcheck.orig"
    # Inside the repository, outside the build folder (a user's own build/kvcheck, untracked).
    mkdir -p mybuild
    cp "$tmp/user/kvcheck" mybuild/kvcheck
    export KVCHECK=$repo/mybuild/kvcheck
    expect_refused "KVCHECK in the repository, outside the build folder" \
      "outside the build folder.*set KVCHECK_BUILD_DIR"
    unchanged "$KVCHECK" "$tmp/user/kvcheck.orig"
    rm -r mybuild
    # In the build folder, but a file git tracks (in the index): never removed.
    unset KVCHECK
    export KVCHECK_BUILD_DIR=$repo/tracked
    mkdir -p tracked
    cp "$tmp/user/kvcheck" tracked/kvcheck
    git add tracked/kvcheck
    expect_refused "a tracked file in the build folder" "is a file of the repository"
    unchanged tracked/kvcheck "$tmp/user/kvcheck.orig"
    git rm -q --cached tracked/kvcheck
    rm -r tracked
    # KVCHECK set inside the build folder is the build's output: taken, and git names 5.
    export KVCHECK_BUILD_DIR=$tmp/build
    export KVCHECK=$KVCHECK_BUILD_DIR/kvcheck
    ;;
  missing-scenario)
    export SCENARIOS="$tmp/scenario.json $tmp/no-such.json"
    expect_refused "a missing scenario" "SCENARIOS: no such file: $tmp/no-such.json"
    export SCENARIOS="$tmp/scenario.json $tmp"
    expect_refused "a folder for a scenario" "SCENARIOS: not a regular file: $tmp"
    export SCENARIOS="  "
    expect_refused "no scenario" "set SCENARIOS"
    if (($(id -u) != 0)); then # root reads any file
      cp "$tmp/scenario.json" "$tmp/unreadable.json"
      chmod 000 "$tmp/unreadable.json"
      export SCENARIOS=$tmp/unreadable.json
      expect_refused "an unreadable scenario" "SCENARIOS: cannot read $tmp/unreadable.json"
    fi
    export SCENARIOS=$tmp/scenario.json
    ;;
  backend-kvcheck)
    export BACKEND=$tmp/plugin.so # the fake build's output stands for the plugin
    export KVCHECK=$tmp/no-such-kvcheck
    expect_refused "BACKEND with a missing KVCHECK" "KVCHECK: no such file: $KVCHECK"
    chmod -x "$tmp/user/kvcheck"
    export KVCHECK=$tmp/user/kvcheck
    expect_refused "BACKEND with a KVCHECK not executable" \
      "KVCHECK: not an executable file: $KVCHECK"
    chmod +x "$tmp/user/kvcheck"
    export KVCHECK=$tmp/user
    expect_refused "BACKEND with a folder for KVCHECK" "KVCHECK: not an executable file: $KVCHECK"
    unset KVCHECK
    expect_refused "BACKEND without KVCHECK" "with BACKEND, set KVCHECK"
    # A good configuration is taken: the build runs, the fixed kvcheck judges, and stays.
    export KVCHECK=$tmp/user/kvcheck
    rm -f "$BUILD_MARKER"
    step_at 1 0 "BACKEND with a good KVCHECK"
    [[ -e $BUILD_MARKER ]] || fail "BACKEND with a good KVCHECK: the build did not run"
    unchanged "$KVCHECK" "$tmp/user/kvcheck.orig"
    exit 0
    ;;
esac

step_at 1 0 "good"
case $kind in
  killed)
    touch "$KILL_FLAG"
    step_at 4 255 "good, kvcheck killed" "kvcheck was killed (SIGKILL.*aborting the bisection"
    ;;
  user-kvcheck | missing-scenario) ;;
  *) step_at 5 "$([[ -n $skipped_kind ]] && echo 125 || echo 1)" "$kind" ;;
esac
step_at 7 1 "a bad verdict"
git checkout -q "${hashes[8]}"

if [[ $kind == killed ]]; then
  # kvcheck killed at commit 4 (the first commit git tests): the bisection must abort there, not
  # call 4 bad (it would then name 4 as the first bad commit).
  rc=0
  git bisect start "${hashes[8]}" "${hashes[1]}" >/dev/null
  git bisect run "$step" >"$tmp/bisect.log" 2>&1 || rc=$?
  if grep -q "is the first bad commit" "$tmp/bisect.log"; then
    show_log
    fail "git bisect run named a first bad commit with kvcheck killed at commit 4:" \
      "$(grep "is the first bad commit" "$tmp/bisect.log")"
  fi
  [[ $(git rev-parse HEAD) == "${hashes[4]}" ]] ||
    { show_log; fail "git bisect run did not stop at commit 4: the case proves nothing"; }
  ((rc != 0)) || { show_log; fail "git bisect run exited 0 with kvcheck killed at commit 4"; }
  if ! grep -q "exit code 255" "$tmp/bisect.log" ||
    ! grep -q "kvcheck was killed (SIGKILL.*aborting the bisection" "$tmp/bisect.log"; then
    show_log
    fail "git bisect run did not abort on bisect-step.sh's 255"
  fi
  ! git bisect log | grep -q "^git bisect bad ${hashes[4]}" ||
    { show_log; fail "commit 4 (good, kvcheck killed) marked bad"; }
  echo "git bisect run aborted at commit 4 (exit $rc), where kvcheck was killed"
  # The cause gone, `git bisect run` again goes on from commit 4 and names 7.
  rm -f "$KILL_FLAG"
  bisect_run_expect_first_bad "$step" "$expected"
  git bisect log | grep -q "^git bisect good ${hashes[4]}" ||
    { show_log; fail "commit 4 was not judged good once kvcheck was not killed"; }
else
  # The bisection itself: bad HEAD (commit 8), good commit 1 (bisect_run.sh).
  bisect_expect_first_bad "$step" "$expected"
fi
verbs=$(git bisect log | awk '/^git bisect (good|bad|skip) /{print $3, $4}')
if [[ -n ${skipped_kind:-} ]]; then
  visited=0
  for n in $skipped_kind; do
    if grep -q "^bad ${hashes[n]}" <<<"$verbs"; then
      show_log
      fail "commit $n ($kind) marked bad"
    fi
    if grep -q "^skip ${hashes[n]}" <<<"$verbs"; then visited=1; fi
  done
  ((visited)) || { show_log; fail "no $kind commit was tested: the case proves nothing"; }
else
  grep -q "^bad ${hashes[expected]}" <<<"$verbs" ||
    { show_log; fail "commit $expected ($kind) was not marked bad"; }
fi
show_verdicts
git bisect reset >/dev/null 2>&1
echo "git bisect run named commit $expected (${hashes[expected]}) as the first bad commit"
