# shellcheck shell=bash
# bisect_run.sh — sourced by the bisect tests (bisect_backend_test.sh, bisect_kvcheck_test.sh):
# their throwaway repository, the bisection over its commits hashes[1..8] (bad HEAD 8, good 1),
# and the logs to show when it goes wrong. The sourcing script defines `hashes`, `tmp` and `fail`.
# shellcheck disable=SC2154  # hashes and tmp: the sourcing script's

# isolated_repo DIR: a new repository at DIR, made the working directory, with git on its own: no
# global or system config (user, hooks, signing, aliases), nothing of an enclosing repository or
# of a git command that runs the test, fixed commit dates.
isolated_repo() {
  export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 GIT_PAGER=cat
  unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_CEILING_DIRECTORIES \
    GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT \
    GIT_NAMESPACE GIT_COMMON_DIR
  export GIT_AUTHOR_DATE="2024-01-01T00:00:00Z" GIT_COMMITTER_DATE="2024-01-01T00:00:00Z"
  mkdir -p "$tmp/hooks"
  git init -q --template= "$1"
  cd "$1" || fail "cannot enter $1"
  git config user.name "kvcheck bisect test"
  git config user.email "bisect-test@kvcheck.invalid"
  git config core.hooksPath "$tmp/hooks"
  git config commit.gpgsign false
}

# git bisect run's output, the bisect log and which commit is which, on stderr.
show_log() {
  echo "---- git bisect run output ----" >&2
  cat "$tmp/bisect.log" >&2
  echo "---- git bisect log ----" >&2
  git bisect log >&2 || true
  for i in $(seq 1 8); do echo "commit $i: ${hashes[i]}" >&2; done
}

# bisect_expect_first_bad STEP N: `git bisect run STEP` ends well and names commit N as the
# first bad one (refs/bisect/bad and its output line); else the logs and `fail`.
bisect_expect_first_bad() {
  git bisect start "${hashes[8]}" "${hashes[1]}" >/dev/null
  bisect_run_expect_first_bad "$@"
}

# bisect_run_expect_first_bad STEP N: the same in a bisection already started (`git bisect run`
# again after an abort goes on from the commit checked out).
bisect_run_expect_first_bad() {
  local step=$1 n=$2 rc=0 found
  git bisect run "$step" >"$tmp/bisect.log" 2>&1 || rc=$?
  ((rc == 0)) || { show_log; fail "git bisect run exited $rc"; }
  found=$(git rev-parse --verify -q refs/bisect/bad || true)
  if [[ $found != "${hashes[n]}" ]]; then
    show_log
    fail "refs/bisect/bad is ${found:-missing}, not commit $n (${hashes[n]})"
  fi
  grep -q "^${hashes[n]} is the first bad commit" "$tmp/bisect.log" ||
    { show_log; fail "git bisect run did not print '${hashes[n]} is the first bad commit'"; }
}
