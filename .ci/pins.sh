# Sourced by the CI scripts that build a venv of their own (.ci/remote.sh, .ci/tuned_lens.sh,
# .ci/transformer_lens.sh): the transformers requirement is the project's own, read from
# pyproject.toml, so every venv runs the transformers the project supports. It has no upper
# bound (the backends hand nnsight the tokenizer, which lifted the <5.23 cap), so a fresh venv
# takes the newest release, as users do. (transformers 5.25's kernels package logs "Skipping
# publisher trust check" on every offline load; the tuned-lens suite's no-warnings check reads
# tuned-lens's own warnings only, since 2026-12-06.)
TRANSFORMERS=$(grep -oE '^ *"transformers[<>=!~][^"]*"' pyproject.toml | tr -d ' "')
if [ "$(wc -w <<<"$TRANSFORMERS")" != 1 ]; then
  echo "pins.sh: expected one transformers requirement in pyproject.toml, found: '$TRANSFORMERS'" >&2
  exit 2
fi

# venv_satisfies VENV REQUIREMENT...: whether the venv's installed distributions meet each
# requirement (an existing venv is reused only then, else rebuilt).
venv_satisfies() {
  local venv=$1
  shift
  "$venv/bin/python" - "$@" >/dev/null 2>&1 <<'PY'
import sys
from importlib.metadata import version

from packaging.requirements import Requirement

for text in sys.argv[1:]:
    req = Requirement(text)
    if not req.specifier.contains(version(req.name), prereleases=True):
        sys.exit(1)
PY
}
