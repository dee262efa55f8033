#!/usr/bin/env bash
# bisect_backend_test.sh — `git bisect run` over a backend plugin's history, with kvcheck as the
# judge through the shipped examples/backend-minimal/bisect-step.sh, names the right first bad
# commit.
#
# It builds a throwaway git repository holding examples/backend-minimal/backend_minimal.c and a
# one-line build script, over eight commits, and bisects it from the first (good) to the last
# (bad). One commit does not compile, one makes the decode drop each sequence's last token (a
# wrong result), one crashes in an op. What this proves:
#   - a commit that does not build is skipped (bisect-step.sh exits 125), never called bad;
#   - a wrong result is bad (kvcheck run --bisect exits 1);
#   - a crash in a backend op is bad too, not skipped: kvcheck isolates the plugin in a worker
#     and calls a crash a regression (verdict error, exit 1), so a crash can be the first bad;
#   - bisect-step.sh takes everything it needs from the environment, as its README says.
# Two histories (the first argument):
#   wrong-result  1 good, 2 good, 3 does not build, 4 fixes the build, 5 drops the last token,
#                 6 unrelated, 7 also segfaults in paged_decode, 8 unrelated -> first bad: 5
#   crash-first   1 good, 2 good, 3 aborts in write_kv (a wrong assert), 4 does not build,
#                 5 fixes the build, 6 drops the last token, 7 and 8 unrelated -> first bad: 3
# Before bisecting, it runs bisect-step.sh by hand on the commits whose answer matters (good,
# skip, bad by a wrong result, bad by a crash), so a failure says which answer was wrong.
#
# Needs bash, git, a C compiler (cc, or $CC) and a built kvcheck; no global or system git config
# is read and no hooks run. Usage:
#   bisect_backend_test.sh CASE KVCHECK KVCHECK_INCLUDE_DIR DLPACK_INCLUDE_DIR BACKEND_C
#                          BISECT_STEP_SH SCENARIO...
set -euo pipefail

if (($# < 7)); then
  echo "usage: $0 wrong-result|crash-first KVCHECK KVCHECK_INCLUDE_DIR DLPACK_INCLUDE_DIR" \
    "BACKEND_C BISECT_STEP_SH SCENARIO..." >&2
  exit 2
fi
case_name=$1 kvcheck=$2 kv_include=$3 dlpack_include=$4 backend_c=$5 step=$6
shift 6
scenarios=("$@")

fail() {
  echo "FAIL (bisect $case_name): $*" >&2
  exit 1
}

for f in "$kvcheck" "$backend_c" "$step" "${scenarios[@]}"; do
  [[ -f $f ]] || fail "no such file: $f"
done
[[ -x $step ]] || fail "$step is not executable (git bisect run calls it directly)"
[[ -f $kv_include/kvcheck/backend.h ]] || fail "no kvcheck/backend.h under $kv_include"
[[ -f $dlpack_include/dlpack/dlpack.h ]] || fail "no dlpack/dlpack.h under $dlpack_include"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvcheck-bisect-test.XXXXXX")
# shellcheck source=bisect_run.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/bisect_run.sh"
trap 'rm -rf "$tmp"' EXIT

repo=$tmp/repo
mkdir -p "$tmp/out" "$tmp/results"
isolated_repo "$repo"

# The backend's own build: one compile, wherever the plugin goes ($1), with the two include
# paths from the environment (as a real repository's Makefile would know them).
cat >build.sh <<'EOF'
#!/usr/bin/env bash
set -eu
rm -f "$1"
"${CC:-cc}" -std=c11 -O1 -shared -fPIC -fvisibility=hidden -Wl,--no-undefined \
  -I"$KVCHECK_INCLUDE" -I"$DLPACK_INCLUDE" backend.c -lm -o "$1"
EOF
cp "$backend_c" backend.c
echo "A backend plugin for kvcheck (a copy of examples/backend-minimal)." >README

declare -a hashes=() # hashes[i] is commit i (1-based)
commit() {
  git add -A
  git commit -q -m "$1"
  hashes+=("$(git rev-parse HEAD)")
}
# edit FILE SED-EXPRESSION: must change the file (the test's history is what it claims).
edit() {
  cp "$1" "$tmp/before"
  sed -i -e "$2" "$1"
  ! cmp -s "$tmp/before" "$1" || fail "setting up: sed '$2' changed nothing in $1"
}
hashes+=("") # so that hashes[1] is the first commit

# The changes a history is made of.
good_change() { edit backend.c 's/b.version = "1.0";/b.version = "1.1";/'; }
unrelated() { echo "$1" >>README; }
break_build() { edit backend.c 's/^  table = make_table();$/  table = make_table()/'; }
fix_build() { edit backend.c 's/^  table = make_table()$/  table = make_table();/'; }
# The real bug: the decode loop stops one token short (the BROKEN_TAIL mutant, as a code change).
drop_last_token() {
  edit backend.c 's/j < seq_len; ++j) {/j + 1 < seq_len; ++j) {/'
}
# A segfault in paged_decode: the block table read through a null pointer.
segfault_in_decode() {
  edit backend.c 's/table = (const int32_t\*)base_of(&a->block_table);/table = NULL;/'
}
# An abort in write_kv: an assert that takes a slot for an entry within its block.
abort_in_write_kv() {
  edit backend.c 's/^#include <math.h>$/#include <assert.h>\n#include <math.h>/'
  edit backend.c 's|^    if (slot < 0) continue;.*$|&\n    assert(slot < c->block_size);|'
}

case $case_name in
  wrong-result)
    commit "1: the minimal backend"
    good_change && commit "2: version 1.1"
    break_build && commit "3: a refactor that does not compile"
    fix_build && commit "4: fix the build"
    drop_last_token && commit "5: decode loop bound (the bug)"
    unrelated "Notes." && commit "6: README"
    segfault_in_decode && commit "7: block table pointer (crashes)"
    unrelated "More notes." && commit "8: README again"
    expected=5 nobuild=3 crash=7 wrong=5 wrong_note='' crash_signal=SIGSEGV
    ;;
  crash-first)
    commit "1: the minimal backend"
    good_change && commit "2: version 1.1"
    abort_in_write_kv && commit "3: an assert in write_kv (aborts)"
    break_build && commit "4: a refactor that does not compile"
    fix_build && commit "5: fix the build"
    drop_last_token && commit "6: decode loop bound"
    unrelated "Notes." && commit "7: README"
    unrelated "More notes." && commit "8: README again"
    expected=3 nobuild=4 crash=3 wrong=6 wrong_note=' (and aborts)' crash_signal=SIGABRT
    ;;
  *) fail "unknown case '$case_name' (wrong-result or crash-first)" ;;
esac
((${#hashes[@]} == 9)) || fail "setting up: ${#hashes[@]} - 1 commits, not 8"

# What bisect-step.sh reads, as the README's walk-through sets it.
export KVCHECK=$kvcheck KVCHECK_INCLUDE=$kv_include DLPACK_INCLUDE=$dlpack_include
export BACKEND=$tmp/out/libmine.so
export BUILD_CMD="bash build.sh '$BACKEND'"
export SCENARIOS="${scenarios[*]}"
export KVCHECK_OUT=$tmp/results TMPDIR=$tmp

# One step by hand at commit $1: its exit code must be $2.
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
step_at 1 0 "good"
step_at "$nobuild" 125 "does not build: skip"
step_at "$wrong" 1 "drops the last token$wrong_note: bad"
step_at "$crash" 1 "crashes in an op: bad"
grep -q "verdict: error — backend op .* crashed ($crash_signal" "$tmp/step.log" || {
  cat "$tmp/step.log" >&2
  fail "at commit $crash, kvcheck did not report a crash of a backend op ($crash_signal...)"
}
git checkout -q "${hashes[8]}"

# The bisection itself: bad HEAD (commit 8), good commit 1 (bisect_run.sh).
bisect_expect_first_bad "$step" "$expected"
# No commit may be judged bad for not building, nor skipped for crashing.
if git bisect log | grep -q "^git bisect bad ${hashes[nobuild]}"; then
  show_log
  fail "commit $nobuild (does not build) was marked bad, not skipped"
fi
if git bisect log | grep -q "^git bisect skip ${hashes[crash]}"; then
  show_log
  fail "commit $crash (crashes) was skipped, not marked bad"
fi
# What was tested, by commit number (for the record).
git bisect log | while read -r _ _ verb hash _; do
  for i in $(seq 1 8); do
    if [[ $hash == "${hashes[i]}" ]]; then echo "  bisect: commit $i $verb"; fi
  done
done
git bisect reset -q >/dev/null 2>&1 || true
echo "git bisect run named commit $expected (${hashes[expected]}) as the first bad commit"
