# Sourced by the CI scripts (.ci/test, .ci/js.sh, ...): a stage prints one summary line when it
# passes and its whole output when it fails, so a failure is not buried in hundreds of lines of
# passing output. MURANO_VERBOSE=1 (or `bash .ci/test --verbose`) prints every stage's output as
# it comes, then the same summary line.
#
#   quiet LABEL PATTERN COMMAND [ARG...]
#
# runs COMMAND with stdout and stderr together in a log. On success it prints
# "LABEL: SUMMARY (N s)", SUMMARY being the log's lines that match PATTERN (an extended grep
# pattern; "" for none), joined by ", " with a leading "# " or "ℹ " dropped, or "ok" when no line
# matches. On failure it prints the whole log, then "LABEL: failed (exit N, N s)", to stderr, and
# returns the command's status (so `set -e` stops the script there).

# node --test's own totals: "# pass 193" in its TAP reporter (a pipe or a file), "ℹ pass 193" in
# its spec reporter (a terminal).
NODE_TEST_SUMMARY='^(# |ℹ )(pass|fail|skipped) [0-9]+$'

quiet_is_verbose() {
  case "${MURANO_VERBOSE:-0}" in
    "" | 0 | false | no) return 1 ;;
    *) return 0 ;;
  esac
}

quiet() {
  local label=$1 pattern=$2
  shift 2
  local log status=0 start=$SECONDS summary=""
  log=$(mktemp)
  if quiet_is_verbose; then
    # In a `||` list, so that the caller's `set -e` lets a failure reach the status below.
    { "$@" 2>&1 | tee "$log"; status=${PIPESTATUS[0]}; } || true
  else
    "$@" >"$log" 2>&1 || status=$?
  fi
  if [ "$status" != 0 ]; then
    if ! quiet_is_verbose; then cat "$log" >&2; fi
    echo "$label: failed (exit $status, $((SECONDS - start)) s)" >&2
    rm -f "$log"
    return "$status"
  fi
  if [ -n "$pattern" ]; then
    summary=$(grep -E -- "$pattern" "$log" | sed -E 's/^(# |ℹ )//' | paste -sd, - | sed 's/,/, /g') || true
  fi
  rm -f "$log"
  echo "$label: ${summary:-ok} ($((SECONDS - start)) s)"
}

# A long run's report a person can follow: a line per test file, with the count of tests done
# so far and the total ("tests/test_plot.py ....  [ 512/1414]"), then each failure in full and a
# line per skip (the project's -ra); no header. Verbose: pytest's default report. Unquoted, as
# pytest_quiet_flag below.
pytest_progress_flags() {
  if ! quiet_is_verbose; then echo "--no-header -o console_output_style=count"; fi
}

# pytest's report to match: "-q" (a dot per test, each failure in full, a line per skip with
# the project's -ra) unless verbose. Unquoted: `"$PYTHON" -m pytest $(pytest_quiet_flag) ...`.
pytest_quiet_flag() {
  if ! quiet_is_verbose; then echo -q; fi
}
