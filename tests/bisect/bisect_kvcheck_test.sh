#!/usr/bin/env bash
# bisect_kvcheck_test.sh — scripts/bisect-step.sh answers git bisect truthfully for each kind of
# commit, over kvcheck's own history, whatever exit codes that commit's kvcheck knows.
#
# The throwaway repository stands for kvcheck's: each commit holds a tiny fake `kvcheck`
# (kvcheck.in, a shell script that answers as a real commit of that kind would) and a build.sh
# that "compiles" it (bash -n) into $KVCHECK_BUILD_DIR, the way the default BUILD_CMD builds
# kvcheck with cmake. What is tested is the mapping under a real `git bisect run`, in seconds.
#
#   bisect_kvcheck_test.sh step-mapping BISECT_STEP_SH
#       one step by hand per row: exit 0 -> 0, 1 -> 1, 2 -> 125, 3 -> 125, 4 -> 1, 125 -> 125,
#       death by SIGSEGV / SIGABRT / SIGKILL -> 1, a failed build -> 125, no binary -> 125,
#       an interrupted step -> 255 (abort)
#   bisect_kvcheck_test.sh KIND BISECT_STEP_SH
#       KIND = verdict | crash | assertion: commits 1-4 good, 5 and 6 of the KIND (5 is the first
#         bad commit), 7-8 a bad verdict. git bisect run must name 5.
#       KIND = unknown-field | build-failure: commits 1-3 good, 4 and 5 of the KIND (they cannot
#         be tested: skip), 6 good, 7 a bad verdict (the first bad), 8 bad. git bisect run must
#         name 7 and skip 4 or 5 (were they called bad, it would name 4).
#
# Needs bash and git; no global or system git config is read and no hooks run.
set -euo pipefail

if (($# != 2)); then
  echo "usage: $0 step-mapping|verdict|crash|assertion|unknown-field|build-failure" \
    "BISECT_STEP_SH" >&2
  exit 2
fi
kind=$1 step=$2
fail() {
  echo "FAIL (bisect $kind): $*" >&2
  exit 1
}
[[ -x $step ]] || fail "$step is not executable (git bisect run calls it directly)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvcheck-bisect-kvcheck.XXXXXX")
# shellcheck source=bisect_run.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/bisect_run.sh"
trap 'rm -rf "$tmp"' EXIT

# What bisect-step.sh reads (BUILD_CMD: the fake build; the rest as a user would set it).
export KVCHECK_BUILD_DIR=$tmp/build BUILD_CMD="bash build.sh" SCENARIOS=$tmp/scenario.json
export KVCHECK_OUT=$tmp/results TMPDIR=$tmp
unset KVCHECK BACKEND KVCHECK_ARGS
echo '{"format": 1, "workload": {"new_field": 1}}' >"$SCENARIOS"

repo=$tmp/repo
isolated_repo "$repo"
cat >build.sh <<'EOS'
#!/usr/bin/env bash
# The fake build: "compile" kvcheck.in (a syntax check) and install it.
set -eu
bash -n kvcheck.in
mkdir -p "$KVCHECK_BUILD_DIR"
cp kvcheck.in "$KVCHECK_BUILD_DIR/kvcheck"
chmod +x "$KVCHECK_BUILD_DIR/kvcheck"
EOS

# The fake kvcheck of one kind of commit.
fake() {
  local body
  case $1 in
    good) body='echo "verdict: clean (expected clean) — OK"; exit 0' ;;
    verdict) body='echo "verdict: corrupt (expected clean) — MISMATCH"; exit 1' ;;
    crash) body='ulimit -c 0; kill -SEGV $$' ;;
    abort) body='ulimit -c 0; kill -ABRT $$' ;;
    killed) body='kill -KILL $$' ;;
    assertion) body='echo "internal error: BlockPool: block 3 freed while unused" >&2; exit 4' ;;
    unknown-field) body='echo "error: s.json: /workload/new_field: unknown key" >&2; exit 2' ;;
    cannot-run) body='echo "error: no CUDA device" >&2; exit 3' ;;
    skip) body='exit 125' ;;
    build-failure) body='if then fi' ;; # does not "compile"
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

# bisect-step.sh at commit N must exit WANT.
step_at() {
  local n=$1 want=$2 what=$3 rc=0
  git checkout -q "${hashes[n]}"
  "$step" >"$tmp/step.log" 2>&1 || rc=$?
  if ((rc != want)); then
    cat "$tmp/step.log" >&2
    fail "bisect-step.sh at commit $n ($what) exited $rc, not $want"
  fi
  echo "commit $n ($what): bisect-step.sh exited $rc, as it should"
}

if [[ $kind == step-mapping ]]; then
  rows=(good:0 verdict:1 unknown-field:125 cannot-run:125 assertion:1 skip:125 crash:1 abort:1
    killed:1 build-failure:125 no-binary:125)
  for row in "${rows[@]}"; do commit "${row%%:*}"; done
  for i in "${!rows[@]}"; do step_at $((i + 1)) "${rows[i]##*:}" "${rows[i]%%:*}"; done
  # An interrupted step aborts the bisection (255), whatever kvcheck answers.
  git checkout -q "${hashes[1]}"
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
  *) fail "unknown kind '$kind'" ;;
esac
((${#hashes[@]} == 9)) || fail "setting up: ${#hashes[@]} - 1 commits, not 8"

step_at 1 0 "good"
step_at 5 "$([[ -n $skipped_kind ]] && echo 125 || echo 1)" "$kind"
step_at 7 1 "a bad verdict"
git checkout -q "${hashes[8]}"

# The bisection itself: bad HEAD (commit 8), good commit 1 (bisect_run.sh).
bisect_expect_first_bad "$step" "$expected"
verbs=$(git bisect log | awk '/^git bisect (good|bad|skip) /{print $3, $4}')
if [[ -n $skipped_kind ]]; then
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
git bisect log | while read -r _ _ verb hash _; do
  for i in $(seq 1 8); do
    if [[ $hash == "${hashes[i]}" ]]; then echo "  bisect: commit $i $verb"; fi
  done
done
git bisect reset -q >/dev/null 2>&1 || true
echo "git bisect run named commit $expected (${hashes[expected]}) as the first bad commit"
