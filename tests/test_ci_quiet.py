"""The test command's output: a line per passing step, everything for a failing one.

``bash .ci/test`` used to print about 700 lines (node's test report, an npm warning, npm's
spinner, pytest's report) in which a failure was hard to find. Its steps now go through
``.ci/quiet.sh``'s ``quiet``: these tests run it on commands made here (and ``.ci/js.sh`` with
stand-ins for ``npm`` and ``node`` that print a lot), and check what a passing step, a failing
one, ``MURANO_VERBOSE=1`` and ``CI=true`` print; that the node summary is read from node's real
report; and that npm has a decision for every package with an install script, without which
npm 11 warns on every install.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUIET = ROOT / ".ci" / "quiet.sh"
PYTHON = sys.executable
NOISY = "for i in $(seq 200); do echo step output $i; done; echo 'a warning' >&2"
NOISY_PASSING = NOISY + "; echo '# pass 7'"


def sh(command: str) -> str:
    """``bash -c COMMAND``, quoted for the script that runs it."""
    return f"bash -c {shlex.quote(command)}"


def bash(script: str, env: dict[str, str] | None = None, cwd: Path = ROOT):
    """Runs a bash script that has sourced .ci/quiet.sh under `set -euo pipefail`."""
    full = f"set -euo pipefail\nsource {QUIET}\n{script}"
    environment = {k: v for k, v in os.environ.items() if k not in ("MURANO_VERBOSE", "CI")}
    environment.update(env or {})
    return subprocess.run(
        ["bash", "-c", full], cwd=cwd, env=environment, capture_output=True, text=True, timeout=60
    )


def test_a_passing_step_prints_one_summary_line():
    done = bash(f"quiet 'demo step' '^# (pass|fail) ' {sh(NOISY_PASSING)}")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    (line,) = done.stdout.splitlines()
    assert line.startswith("demo step: pass 7 (") and line.endswith(" s)"), line


def test_a_step_without_a_summary_says_ok():
    done = bash(f"quiet 'type check' '' {sh(NOISY)}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("type check: ok (") and done.stdout.count("\n") == 1


@pytest.mark.parametrize("ci", [False, True], ids=["local", "CI=true"])
def test_a_failing_step_prints_all_its_output_and_stops_the_script(ci):
    script = (
        f"quiet 'broken step' '^# pass ' {sh(NOISY + '; echo the real error >&2; exit 3')}\n"
        "echo 'after the failure'"
    )
    done = bash(script, env={"CI": "true"} if ci else None)
    assert done.returncode == 3
    assert "after the failure" not in done.stdout + done.stderr, "set -e must stop the script"
    lines = done.stderr.splitlines()
    assert [f"step output {i}" for i in range(1, 201)] == [
        line for line in lines if line.startswith("step output")
    ]
    assert "a warning" in lines and "the real error" in lines
    assert lines[-1].startswith("broken step: failed (exit 3, "), lines[-1]


def test_verbose_prints_everything_then_the_summary():
    done = bash(
        f"quiet 'demo step' '^# pass ' {sh(NOISY_PASSING)}",
        env={"MURANO_VERBOSE": "1"},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 200 + 3 and "a warning" in lines
    assert lines[-1].startswith("demo step: pass 7 (")

    failed = bash(
        f"quiet 'broken' '' {sh('echo once; exit 4')}\necho after",
        env={"MURANO_VERBOSE": "1"},
    )
    assert failed.returncode == 4 and "after" not in failed.stdout
    assert failed.stdout.splitlines() == ["once"], "verbose output is not printed twice"
    assert failed.stderr.startswith("broken: failed (exit 4, ")


def _stand_ins(folder: Path, failing: str | None = None) -> dict[str, str]:
    """`npm` and `node` stand-ins that print as much as the real ones; `failing` names the npm
    command (ci, check, test, verify) that fails."""
    npm = f"""#!/usr/bin/env bash
step=$1; [ "$1" = run ] && step=$2
for i in $(seq 150); do echo "$step output $i"; done
echo "npm warn something about $step" >&2
case $step in
  ci) echo "added 4 packages in 1s" ;;
  test) printf '# tests 3\\n# pass 3\\n# fail 0\\n# skipped 0\\n' ;;
  verify) echo "murano_widgets/static is up to date with js/src" ;;
esac
[ "$step" = "{failing or ""}" ] && exit 1
exit 0
"""
    node = '#!/usr/bin/env bash\n[ "$1" = --version ] && echo v20.0.0\n'
    for name, text in (("npm", npm), ("node", node)):
        path = folder / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def _js_sh_copy(folder: Path) -> Path:
    """.ci/js.sh in a copy of the layout it expects (.ci/ and js/), so that nothing it runs can
    touch the repository's js/node_modules."""
    shutil.copytree(ROOT / ".ci", folder / ".ci")
    (folder / "js").mkdir()
    return folder / ".ci" / "js.sh"


def test_js_sh_prints_a_line_per_step(tmp_path):
    js_sh = _js_sh_copy(tmp_path / "repo")
    done = bash(f"bash {js_sh}", env=_stand_ins(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    assert [line.split(" (")[0] for line in lines] == [
        "js: npm ci, node v20.0.0: added 4 packages in 1s",
        "js: type check: ok",
        "js: node --test: pass 3, fail 0, skipped 0",
        "js: bundle: murano_widgets/static is up to date with js/src",
    ]


def test_js_sh_shows_a_failing_step_in_full_and_stops(tmp_path):
    js_sh = _js_sh_copy(tmp_path / "repo")
    done = bash(f"bash {js_sh}", env=_stand_ins(tmp_path, failing="test"))
    assert done.returncode == 1
    assert [line.split(" (")[0] for line in done.stdout.splitlines()] == [
        "js: npm ci, node v20.0.0: added 4 packages in 1s",
        "js: type check: ok",
    ]
    err = done.stderr.splitlines()
    assert err[:150] == [f"test output {i}" for i in range(1, 151)]
    assert "npm warn something about test" in err
    assert err[-1].startswith("js: node --test: failed (exit 1, ")
    assert "verify output 1" not in done.stdout + done.stderr, "steps after a failure do not run"


@pytest.mark.skipif(
    shutil.which("node") is None, reason="node is not installed (.ci/js.sh needs it)"
)
@pytest.mark.parametrize("reporter", ["tap", "spec"])
def test_the_node_summary_is_read_from_nodes_own_report(tmp_path, reporter):
    """node --test's TAP report (its default in a log) and spec report (in a terminal)."""
    (tmp_path / "a.test.mjs").write_text(
        'import test from "node:test";\n'
        'test("one", () => {});\ntest("two", () => {});\n'
        'test("three", { skip: "not here" }, () => {});\n'
    )
    done = bash(
        f"quiet 'js: node --test' \"$NODE_TEST_SUMMARY\" node --test --test-reporter={reporter} .",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split(" (")[0] == "js: node --test: pass 2, fail 0, skipped 1"


def test_npm_has_a_decision_for_every_install_script():
    """npm 11 skips dependencies' install scripts and warns on every install until
    package.json's allowScripts approves or denies each package the lockfile says has one."""
    package = json.loads((ROOT / "js" / "package.json").read_text())
    lock = json.loads((ROOT / "js" / "package-lock.json").read_text())
    with_scripts = {
        path.rsplit("node_modules/", 1)[-1]
        for path, entry in lock["packages"].items()
        if entry.get("hasInstallScript")
    }
    assert with_scripts, "the lockfile lists no install script: is hasInstallScript still read?"
    # Entries are names or pinned names ("esbuild@0.28.2"; a scope's "@" comes first).
    decided = {
        spec.rsplit("@", 1)[0] if spec.rfind("@") > 0 else spec
        for spec in package.get("allowScripts", {})
    }
    assert with_scripts <= decided, f"no allowScripts decision for {sorted(with_scripts - decided)}"


def test_the_long_run_prints_a_line_per_file_with_a_count(tmp_path):
    """``.ci/test``'s pytest report (pytest_progress_flags): a line per test file naming it,
    with the count of tests done and the total, not rows of bare dots; verbose: pytest's own."""
    for name, count in [("test_one.py", 3), ("test_two.py", 2)]:
        body = "".join(f"def test_{i}():\n    pass\n\n\n" for i in range(count))
        (tmp_path / name).write_text(body, encoding="utf-8")
    script = (
        'python=$1; shift\n"$python" -m pytest $(pytest_progress_flags) -p no:cacheprovider '
        "--rootdir . -c /dev/null test_one.py test_two.py"
    )
    done = bash(f"bash -c {shlex.quote(f'source {QUIET}; ' + script)} _ {shlex.quote(PYTHON)}",
                cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "test_one.py ... [3/5]" in [" ".join(line.split()) for line in lines], lines
    assert "test_two.py .. [5/5]" in [" ".join(line.split()) for line in lines], lines
    assert not any(line.startswith("platform ") for line in lines), "the header is left out"
    verbose = bash(
        f"bash -c {shlex.quote(f'source {QUIET}; ' + script)} _ {shlex.quote(PYTHON)}",
        env={"MURANO_VERBOSE": "1"},
        cwd=tmp_path,
    )
    assert any(line.startswith("platform ") for line in verbose.stdout.splitlines())
