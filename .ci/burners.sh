# Sourced by .ci/test: a busy process, to run a suite on a loaded machine (issue 31: a
# wall-clock window in a test passed alone and failed under load; CI proves no test depends on
# one).
#
#   burn_until FILE   # keeps one core busy until FILE exists
#
# It looks for FILE every 20,000 loop turns (about 0.1 s), so it is busy in user time, not in
# system calls, and stops by itself after an hour should FILE never come (a killed parent), so
# nothing outlives the run for long.
burn_until() {
  timeout 3600 bash -c 'while [ ! -e "$1" ]; do for ((i = 0; i < 20000; i++)); do :; done; done' _ "$1" || true
}
