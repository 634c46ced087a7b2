#!/usr/bin/env bash
# The remote suite: LogitLens(MuranoModel(path, backend="nnsight"), remote=True) against a real
# NDIF server on this machine (../shared/ndif: ndif 0.1.2 with a CPU model actor).
#
# The client venv is what a remote user installs (README, "Install"): nnsight 0.8 (the only
# client NDIF accepts), the NDIF server's own transformers (below; any from 5.0 works with the
# backends, which hand nnsight 0.8.1 the tokenizer its meta load cannot find from 5.23 on),
# the project WITHOUT nnterp (nnterp 1.3 does not work with nnsight 0.8), no accelerate.
# It is built when missing or off those pins, torch's CPU wheel first (else pip picks a
# multi-GB CUDA build); `--prepare` builds it (and the server) and exits, which .ci/run does in
# the background while the project's tests run. The server is installed into $NDIF_VENV by
# install.sh (quick when it is there), meanwhile, and started by the suite's fixture; the trap
# stops it if the suite could not, unless it was running before this script.
set -euo pipefail
cd "$(dirname "$0")/.."
prepare=0
if [ "${1:-}" = --prepare ]; then prepare=1; shift; fi

PYTHON=${PYTHON:-python3}
export NDIF_SHARED=${NDIF_SHARED:-$(cd .. && pwd)/shared/ndif}
VENV=${REMOTE_VENV:-build/remote-venv}   # build/ is gitignored
source "$NDIF_SHARED/env.sh"             # NDIF_WORK, NDIF_VENV, NDIF_NETNS
source .ci/quiet.sh                      # pytest_quiet_flag: -q unless MURANO_VERBOSE=1
source .ci/pins.sh                       # TRANSFORMERS (the project's range), venv_satisfies

already_running=0
ip netns list 2>/dev/null | grep -qw "$NDIF_NETNS" && already_running=1
ndif_install=
stop_ndif() {
  if [ -n "$ndif_install" ]; then kill "$ndif_install" 2>/dev/null || true; fi
  if [ "$already_running" = 0 ]; then bash "$NDIF_SHARED/stop.sh" >/dev/null 2>&1 || true; fi
}
trap stop_ndif EXIT INT TERM

# The server's install (1-2 min when new) runs while the client venv is built.
mkdir -p build
bash "$NDIF_SHARED/install.sh" > build/ndif-install.log 2>&1 &
ndif_install=$!

# The client's transformers is the server's (its install.sh pins it): the suite holds remote
# numbers equal to the client's local ones to float32 rounding, which holds on one transformers
# only (a 5.25 client against the server's 5.22.2 moved a patch's top-1 probabilities by up to
# 5e-6). The newest transformers with nnsight 0.8.1 is .ci/newest.sh's.
SERVER_TRANSFORMERS=$(grep -oE 'transformers==[0-9][0-9.]*' "$NDIF_SHARED/install.sh" | head -n 1)
CLIENT=("nnsight==0.8.1" "${SERVER_TRANSFORMERS:-$TRANSFORMERS}")
if ! venv_satisfies "$VENV" "${CLIENT[@]}"; then
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet "torch==2.13.0"
fi
# Also in a venv that is there (a few seconds then): a dependency the project gained comes too.
"$VENV/bin/python" -m pip install --quiet "${CLIENT[@]}" pytest -e .
"$VENV/bin/python" - <<'EOF'
import importlib.util
from importlib.metadata import version

assert importlib.util.find_spec("nnterp") is None, "the remote venv must not have nnterp"
print(*(f"{p} {version(p)}" for p in ("nnsight", "transformers", "torch")), sep=", ")
EOF

if ! wait "$ndif_install"; then
  cat build/ndif-install.log >&2
  echo "installing the NDIF server failed" >&2
  exit 1
fi
ndif_install=
tail -1 build/ndif-install.log
if [ "$prepare" = 1 ]; then exit 0; fi

# The nnsight backend's own tests, the logit transforms and the self-check, generation
# (nnsight's generate) and chat on nnsight 0.8 (the main run has them on 0.7), then the suite
# against the server.
MURANO_REMOTE_REQUIRED=1 "$VENV/bin/python" -m pytest -m "remote or not remote" \
  tests/test_nnsight_backend.py tests/test_logit_transforms.py tests/test_generation.py \
  tests/test_chat.py tests/remote \
  -p no:cacheprovider $(pytest_quiet_flag) "$@"
