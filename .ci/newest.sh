#!/usr/bin/env bash
# The newest-stack job: the package with the newest transformers, ipywidgets and anywidget that
# the registry has when this runs, in a venv of its own, and the checks of the JupyterLab tests
# there: every widget draws and its keys reach the kernel, the live lens (a typed prompt, a
# tracked token, a patched cell), and two teaching notebooks run with nbclient.
#
# What "newest" is is asked of the registry each run (`pip index versions`), and the three are
# installed pinned to it together with the project (`-e .`): if the project's requirements
# exclude a newest release, pip fails here naming the conflict, instead of quietly taking an
# older one. torch is this machine's CPU wheel 2.13.0 (PyPI's is the multi-GB CUDA build); the
# rest comes as a user's pip takes it (PyPI alone: no constraint file, no local wheel folder).
# The venv is kept between runs and brought up to the newest each time (seconds when nothing
# is new). `--prepare` builds it and exits (.ci/run: while the project's tests run).
set -euo pipefail
cd "$(dirname "$0")/.."
prepare=0
if [ "${1:-}" = --prepare ]; then prepare=1; shift; fi
source .ci/quiet.sh   # pytest_quiet_flag: -q unless MURANO_VERBOSE=1

PYTHON=${PYTHON:-python3}
VENV=${NEWEST_VENV:-build/newest-venv}   # build/ is gitignored
NEWEST=(transformers ipywidgets anywidget)
# What the JupyterLab tests and nbclient need (not the [test] extra: its nnterp takes nnsight 0.7).
TOOLS=(pytest playwright jupyterlab "notebook>=7" nbclient nbformat ipykernel pillow)
user_pip() { env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null "$VENV/bin/python" -m pip "$@"; }

if ! "$VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet "torch==2.13.0"   # this machine's CPU wheel
fi
pins=()
for name in "${NEWEST[@]}"; do
  newest=$(user_pip index versions "$name" 2>/dev/null | sed -n "1s/^$name (\(.*\))$/\1/p")
  if [ -z "$newest" ]; then
    echo "newest.sh: the registry gave no version of $name" >&2
    exit 1
  fi
  pins+=("$name==$newest")
done
user_pip install --quiet --upgrade "${pins[@]}" -e . "${TOOLS[@]}"
"$VENV/bin/python" -c "from importlib.metadata import version as v; print('newest:', *(f'{p} {v(p)}' for p in ('transformers', 'ipywidgets', 'anywidget', 'nnsight', 'traitlets', 'jupyterlab')), sep=' ')"
if [ "$prepare" = 1 ]; then exit 0; fi

# A focused set (a few minutes): the three widgets' keys reaching the kernel and the live lens
# in JupyterLab; two notebooks with nbclient (executed anew:
# the versions are part of their cache key), the tour and the one that generates text (the
# transformers API that moves most), each rendered again from its saved state.
nb=tests/test_notebooks.py
"$VENV/bin/python" -m pytest -p no:cacheprovider $(pytest_quiet_flag) \
  tests/browser/test_jupyterlab_widgets.py::test_every_control_keeps_its_keys_in_jupyterlab \
  "tests/browser/test_live_jupyterlab.py::test_the_live_lens_in_a_real_notebook[lab]" \
  "$nb::test_notebook_executes_and_saves_widget_state[01_logit_lens_tour]" \
  "$nb::test_notebook_executes_and_saves_widget_state[05_compare_and_generate]" \
  "$nb::test_saved_widget_state_renders_without_a_kernel[01_logit_lens_tour]" \
  "$nb::test_saved_widget_state_renders_without_a_kernel[05_compare_and_generate]" "$@"
