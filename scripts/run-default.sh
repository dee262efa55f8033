#!/usr/bin/env bash
# run-default.sh [kvcheck run options] — set up, build, and run the smoke scenario.
# Extra arguments go to `kvcheck run` (e.g. --json, --regression NAME, -v). Set-up and build
# output goes to stderr so that stdout carries only kvcheck's result (with --json, its one
# kvcheck.run/1 document).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

"$repo/scripts/setup.sh" >&2
"$repo/scripts/build.sh" "$repo/build" >&2
exec "$repo/build/kvcheck" run "$repo/scenarios/smoke.json" "$@"
