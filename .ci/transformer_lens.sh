#!/usr/bin/env bash
# The TransformerLens interoperability suite: the Jacobian lens and direct logit attribution
# (LogitLens(decompose=True)'s answer_contributions) against the real transformer-lens 4.3.0 in
# a venv of its own.
#
# TransformerLens pins its own stack (and breaks tuned-lens next to it), so it gets a minimal
# venv: torch's CPU wheel first (else pip picks a multi-GB CUDA build), then transformer-lens
# with the project's transformers range (.ci/pins.sh; about 2 minutes). The venv is built
# once and reused while it imports and meets that range; point
# TRANSFORMER_LENS_VENV at an existing one to skip building. As the tuned-lens suite does, the
# tests (tests/transformer_lens_interop, marker transformer_lens_interop) run in the project's
# .venv and call that venv's python for TransformerLens's side, so nothing of this package
# (nor nnterp) is installed there.
set -euo pipefail
cd "$(dirname "$0")/.."
prepare=0   # --prepare: build the venv if needed, then exit (.ci/run: while the project tests run)
if [ "${1:-}" = --prepare ]; then prepare=1; shift; fi
source .ci/quiet.sh   # pytest_quiet_flag: -q unless MURANO_VERBOSE=1
source .ci/pins.sh    # TRANSFORMERS (the project's range), venv_satisfies

PYTHON=${PYTHON:-python3}
VENV=${TRANSFORMER_LENS_VENV:-build/transformer-lens-venv}   # build/ is gitignored
NEEDED="import transformer_lens.tools.analysis.jacobian_lens, transformer_lens.tools.analysis.direct_logit_attribution"
if ! "$VENV/bin/python" -c "$NEEDED" >/dev/null 2>&1 || ! venv_satisfies "$VENV" "$TRANSFORMERS"; then
  if [ -n "${TRANSFORMER_LENS_VENV:-}" ]; then
    echo "TRANSFORMER_LENS_VENV=$VENV does not import transformer_lens's Jacobian lens and DLA" \
      "with $TRANSFORMERS" >&2
    exit 1
  fi
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet "torch==2.13.0"
  "$VENV/bin/python" -m pip install --quiet "transformer-lens==4.3.0" "$TRANSFORMERS"
fi
"$VENV/bin/python" -c "from importlib.metadata import version as v; print(*(f'{p} {v(p)}' for p in ('transformer-lens', 'transformers', 'torch')), sep=', ')"
if [ "$prepare" = 1 ]; then exit 0; fi

TRANSFORMER_LENS_PYTHON="$(cd "$VENV" && pwd)/bin/python" \
  .venv/bin/python -m pytest -m transformer_lens_interop tests/transformer_lens_interop $(pytest_quiet_flag) "$@"
