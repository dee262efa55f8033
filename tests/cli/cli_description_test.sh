#!/usr/bin/env bash
# cli_description_test.sh KVCHECK — the bash completion and the man page follow the command line:
# completing subcommands, options and the names an option takes works in bash, and every option
# `kvcheck run --help` lists is in both.
set -uo pipefail
kvcheck=$1
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; fi; }
script=$("$kvcheck" completion bash) || { echo "FAIL: kvcheck completion bash"; exit 1; }
bash -n <<< "$script" || { echo "FAIL: the completion script is not valid bash"; exit 1; }
eval "$script"
complete_words() {  # complete_words WORD... : COMPREPLY for the last word
  COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _kvcheck
  echo " ${COMPREPLY[*]} "
}
check "subcommands" '[[ $(complete_words kvcheck "") == *" run "*" summarize "* ]]'
check "run options" '[[ $(complete_words kvcheck run --reg) == *" --regression "* ]]'
check "regression names" \
  '[[ $(complete_words kvcheck run --regression "") == *" new-blocks-not-zeroed "* ]]'
check "device names" '[[ $(complete_words kvcheck run --device c) == " cuda " ]]'
check "nested subcommand" '[[ $(complete_words kvcheck list sc) == *" scenarios "* ]]'
check "list scenarios options" '[[ $(complete_words kvcheck list scenarios --j) == " --json " ]]'
man=$("$kvcheck" man) || { echo "FAIL: kvcheck man"; exit 1; }
check "man page header" '[[ $man == ".TH KVCHECK 1"* ]]'
check "man page exit codes" '[[ $man == *"EXIT STATUS"*".B 4"* ]]'
run_opts=$(complete_words kvcheck run -)
for opt in $("$kvcheck" run --help | grep -oE '(^|[ ,])--[a-z][a-z-]+' | tr -d ' ,' | sort -u); do
  [ "$opt" = --help ] && continue
  check "completion of run $opt" '[[ $run_opts == *" $opt "* ]]'
  esc=${opt//-/\\-}  # roff writes every '-' as '\-'
  check "man page: run $opt" '[[ $man == *"$esc"* ]]'
done
[ $fail = 0 ] && echo "ok: completion and man page"
exit $fail
