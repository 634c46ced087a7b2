#!/usr/bin/env bash
# The Colab job: the package in a venv frozen to Google Colab's runtime (.ci/colab-pins.txt:
# ipywidgets 7.7.1, traitlets 5.7.1, IPython 7.34, notebook 6.5.7, transformers 5.15, ...).
#
# Colab runs Python 3.13 and torch 2.11; here it is Python 3.11 with this machine's CPU wheel of
# torch 2.13.0: PyPI's torch for Linux is the CUDA build (torch 2.15.0 for 3.13: a 539 MB wheel
# and several GB of nvidia-* wheels), too much for CI, and the local CPU wheel is for 3.11 only.
#
# The venv is built as a Colab user's pip sees the world: torch first (this machine's wheel,
# through its pip config), then the pins and the test tools with PIP_CONFIG_FILE=/dev/null and
# no find-links (PyPI alone, no constraint file). Then the package's wheel, built from this
# checkout, is installed the same way with `--report`: tests/colab/test_colab_install.py reads
# that report and fails naming any pinned package pip would have changed. The venv is reused
# while it meets the pins; the package is reinstalled from a fresh wheel on every run.
#
# `--prepare` builds the venv and installs the wheel, then exits (.ci/run does that while the
# project's tests run); without it the suite runs too: tests/colab (marker colab) in the venv:
# the install report, the seven notebooks with nbclient, and every widget in classic Notebook
# 6.5.7 (an ipywidgets 7 front end, the protocol Colab's widget manager speaks) in Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
prepare=0
if [ "${1:-}" = --prepare ]; then prepare=1; shift; fi
source .ci/quiet.sh   # pytest_quiet_flag: -q unless MURANO_VERBOSE=1
source .ci/pins.sh    # venv_satisfies

PYTHON=${COLAB_BASE_PYTHON:-$(command -v python3.11 || echo python3)}
VENV=${COLAB_VENV:-build/colab-venv}   # build/ is gitignored
OUT=build/colab
PINS=$(grep -v '^#' .ci/colab-pins.txt | tr '\n' ' ')
# The test tools: none of them may move a pin (pip installs them with the pins, in one call).
TOOLS=(pytest playwright nbclient nbformat pillow)
# A user's pip: PyPI only, no constraint file, no local wheel folder.
user_pip() { env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null "$VENV/bin/python" -m pip "$@"; }

# shellcheck disable=SC2086 # PINS is a list of words
if ! venv_satisfies "$VENV" $PINS "torch==2.13.0" \
  || ! "$VENV/bin/python" -c "import pytest, playwright, nbclient" >/dev/null 2>&1; then
  "$PYTHON" -c 'import sys; assert sys.version_info[:2] == (3, 11), "the local torch CPU wheel is for Python 3.11"'
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet "torch==2.13.0"   # this machine's CPU wheel
  # shellcheck disable=SC2086
  user_pip install --quiet $PINS "torch==2.13.0" "${TOOLS[@]}"
fi

# The package's wheel, from this checkout, installed as a user would (its old copy out first,
# so that pip resolves its requirements against the pins again).
rm -rf "$OUT"
mkdir -p "$OUT"
.venv/bin/python -m pip wheel --quiet --no-deps --no-build-isolation --wheel-dir "$OUT" .
"$VENV/bin/python" -m pip uninstall --quiet --yes murano-widgets >/dev/null 2>&1 || true
user_pip install --quiet --report "$OUT/install-report.json" "$OUT"/murano_widgets-*.whl
"$VENV/bin/python" -c "from importlib.metadata import version as v; print(*(f'{p} {v(p)}' for p in ('murano-widgets', 'ipywidgets', 'traitlets', 'transformers', 'nnsight', 'torch')), sep=', ')"
if [ "$prepare" = 1 ]; then exit 0; fi

# The suite, in the venv, on the installed wheel (its front end included), not this checkout's
# murano_widgets: the venv's pytest script, not `python -m pytest`, which would put the
# checkout first on sys.path; the kernels it starts run outside the checkout.
COLAB_INSTALL_REPORT="$(pwd)/$OUT/install-report.json" COLAB_PINS="$(pwd)/.ci/colab-pins.txt" \
  "$VENV/bin/pytest" -m colab tests/colab -p no:cacheprovider $(pytest_quiet_flag) "$@"
