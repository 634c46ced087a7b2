#!/usr/bin/env bash
# The documentation site in CI: build it with `mkdocs build --strict` (a broken link, a missing
# page or an unresolved reference in a docstring fails), executing the teaching notebooks for
# their pages (docs/hooks/notebooks.py; cached in .cache/docs-notebooks/ between builds), then
# open a few built pages in headless Chromium with no network: a notebook page's widget draws
# and answers its layer slider, and every public name has its reference entry
# (tests/docs_site/, which read this build through MURANO_DOCS_SITE).
#
# One line a step, its whole output only when it fails (.ci/quiet.sh); MURANO_VERBOSE=1 for all.
set -euo pipefail
source "$(dirname "$0")/quiet.sh"
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv/bin/python}
export NO_MKDOCS_2_WARNING=1

"$PYTHON" -m pip install --quiet -e ".[docs]"
quiet "docs: mkdocs build --strict" 'Documentation built in' "$PYTHON" -m mkdocs build --strict --site-dir site
MURANO_DOCS_SITE="$PWD/site" quiet "docs: pages in chromium" '(passed|failed)' \
  "$PYTHON" -m pytest -q -m docs tests/docs_site
