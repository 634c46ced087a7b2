# Sourced by .ci/test: CPU burners, to run a suite on a loaded machine (issue 31: a wall-clock
# window in a test passed alone and failed under load; CI proves no test depends on one).
#
#   start_burners N   # N busy processes (one per core of CI's 2-core machine is N=2)
#   stop_burners      # also run from an EXIT trap
#
# Each burner is a bash loop that never sleeps; it stops by itself after an hour should the
# trap never run (a killed parent), so nothing outlives the run for long.

BURNER_PIDS=()

start_burners() {
  local n=$1 k
  for ((k = 0; k < n; k++)); do
    timeout 3600 bash -c 'while :; do :; done' &
    BURNER_PIDS+=($!)
  done
}

stop_burners() {
  local pid
  for pid in ${BURNER_PIDS[@]+"${BURNER_PIDS[@]}"}; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  BURNER_PIDS=()
}
