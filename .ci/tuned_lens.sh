#!/usr/bin/env bash
# The tuned-lens interoperability suite: the real tuned-lens 0.2.0 in a venv of its own.
#
# tuned-lens cannot share the project's venv (it fails to import next to TransformerLens 4 and
# pins its own stack), so it gets a minimal one: torch's CPU wheel first (else pip picks a
# multi-GB CUDA build), then tuned-lens alone. The venv is built once and reused while it
# imports; the suite (tests/tuned_lens_interop, marker tuned_lens_interop) runs in the project's
# .venv and calls that venv's python for tuned-lens's side.
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/quiet.sh   # pytest_quiet_flag: -q unless MURANO_VERBOSE=1

PYTHON=${PYTHON:-python3}
VENV=${TUNED_LENS_VENV:-build/tuned-lens-venv}   # build/ is gitignored
if ! "$VENV/bin/python" -c "import tuned_lens.nn.lenses" >/dev/null 2>&1; then
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet "torch==2.13.0"
  "$VENV/bin/python" -m pip install --quiet "tuned-lens==0.2.0"
fi
"$VENV/bin/python" -c "from importlib.metadata import version as v; print(*(f'{p} {v(p)}' for p in ('tuned-lens', 'transformers', 'torch')), sep=', ')"

TUNED_LENS_PYTHON="$(cd "$VENV" && pwd)/bin/python" \
  .venv/bin/python -m pytest -m tuned_lens_interop tests/tuned_lens_interop $(pytest_quiet_flag) "$@"
