#!/usr/bin/env bash
# The test suite in two passes (`make test`, `make check`): the tests that may share the CPU on
# PYTEST_WORKERS workers (pytest-xdist), then the `serial` ones alone (they measure: `timing`
# tests, testbeds, HPCC; functional MPI tests share the first pass). Each pass prints its 30 slowest tests.
# Usage: scripts/test-passes.sh PYTHON [MARKER_EXPRESSION] [-- PYTEST ARGS...]
set -uo pipefail
python=$1
shift
select=${1:-}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
workers=${PYTEST_WORKERS:-2}
with() { if [ -n "$select" ]; then echo "($select) and $1"; else echo "$1"; fi; }

# pytest's exit statuses: 0 passed, 1 some failed, 2 interrupted, 3 internal error, 4 usage
# error, 5 nothing selected (a pass may have none of the tests PYTEST ARGS name).
status=0
pass() {
  "$python" -m pytest -q --durations=30 "$@"
  local rc=$?
  case $rc in
    0|5) ;;
    1) status=1 ;;
    *) exit "$rc" ;;  # interrupted or broken: no second pass
  esac
}
pass -n "$workers" -m "$(with "not serial")" "$@"
pass -p no:xdist -m "$(with serial)" "$@"
exit "$status"
