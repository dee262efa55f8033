# out-dir.sh — sourced, first thing, by the scripts whose one argument is the folder they write
# into (bench-e2e.sh OUTDIR, gpu-check.sh LOGDIR):
#
#   . "$(dirname "${BASH_SOURCE[0]}")/out-dir.sh" OUTDIR "$@"
#
# Sets repo (the repository root) and out (that folder, created, as an absolute path). Without
# exactly one argument it prints "usage: SCRIPT OUTDIR" and exits 2.
if [ $# -ne 2 ]; then
  echo "usage: $0 $1" >&2
  exit 2
fi
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "$2" && cd "$2" && pwd)"
