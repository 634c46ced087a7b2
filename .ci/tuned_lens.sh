#!/usr/bin/env bash
# The tuned-lens interoperability suite: the real tuned-lens 0.2.0 in a venv of its own.
#
# tuned-lens cannot share the project's venv (it fails to import next to TransformerLens 4 and
# pins its own stack), so it gets a minimal one: torch's CPU wheel first (else pip picks a
# multi-GB CUDA build), then tuned-lens with the project's transformers range (.ci/pins.sh).
# The venv is built once and reused while it imports and meets that range; the suite (tests/tuned_lens_interop, marker tuned_lens_interop) runs in the project's
# .venv and calls that venv's python for tuned-lens's side.
set -euo pipefail
cd "$(dirname "$0")/.."
prepare=0   # --prepare: build the venv if needed, then exit (.ci/run: while the project tests run)
if [ "${1:-}" = --prepare ]; then prepare=1; shift; fi
source .ci/quiet.sh   # pytest_quiet_flag: -q unless MURANO_VERBOSE=1
source .ci/pins.sh    # TRANSFORMERS (the project's range), venv_satisfies

PYTHON=${PYTHON:-python3}
VENV=${TUNED_LENS_VENV:-build/tuned-lens-venv}   # build/ is gitignored
if ! "$VENV/bin/python" -c "import tuned_lens.nn.lenses" >/dev/null 2>&1 \
  || ! venv_satisfies "$VENV" "$TRANSFORMERS"; then
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet "torch==2.13.0"
  "$VENV/bin/python" -m pip install --quiet "tuned-lens==0.2.0" "$TRANSFORMERS"
fi
"$VENV/bin/python" -c "from importlib.metadata import version as v; print(*(f'{p} {v(p)}' for p in ('tuned-lens', 'transformers', 'torch')), sep=', ')"
if [ "$prepare" = 1 ]; then exit 0; fi

TUNED_LENS_PYTHON="$(cd "$VENV" && pwd)/bin/python" \
  .venv/bin/python -m pytest -m tuned_lens_interop tests/tuned_lens_interop $(pytest_quiet_flag) "$@"
