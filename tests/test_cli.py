"""The demo command, run as a user runs it: in a fresh process, from an installed wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

import murano_widgets
from murano_widgets.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent


def run(args, cwd, python=sys.executable, **env):
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", **env}
    return subprocess.run(
        [python, "-m", "murano_widgets", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )


def test_demo_writes_a_page_and_a_summary(tmp_path, tiny_model_dirs):
    out = tmp_path / "lens.html"
    done = run(
        [
            "demo",
            "--model",
            str(tiny_model_dirs["llama"]),
            "--prompt",
            "one two",
            "--prompt",
            "Alice met",
            "--out",
            str(out),
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert f"wrote {out.resolve()}" in done.stdout
    assert "one two" in done.stdout and "Alice met" in done.stdout and "layer" in done.stdout
    assert "running the lens" in done.stderr  # the progress bar
    page = out.read_text()
    # The page carries this run's prompts and the front end that draws them.
    assert '"one two"' in page and '"Alice met"' in page
    assert page.count("<script") == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["demo", "--top-k", "0"], "--top-k: must be at least 1"),
        (["demo", "--layers", "a,b"], "--layers: must be comma-separated"),
        (["demo", "--prompt", "  "], "--prompt: a prompt must have"),
        (["demo", "--out", "."], "is a folder"),
        (["demo", "--out", "no/such/folder/x.html"], "does not exist"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_get_argparse_errors(args, message, capsys):
    with pytest.raises(SystemExit) as raised:
        from murano_widgets.cli import main

        main(args)
    assert raised.value.code == 2
    assert message in capsys.readouterr().err


def test_model_errors_are_reported_as_usage_errors(tmp_path, tiny_model_dirs):
    done = run(["demo", "--model", "nobody/no-such-model"], tmp_path)
    assert done.returncode == 2 and "murano-widgets demo: error: --model" in done.stderr
    assert "local folder" in done.stderr
    done = run(["demo", "--model", str(tiny_model_dirs["gpt2"]), "--layers", "0,9"], tmp_path)
    assert done.returncode == 2 and "layers holds 9" in done.stderr


def test_errors_stand_alone_without_a_progress_bar_around_them(tmp_path, tiny_model_dirs):
    missing = tmp_path / "no-such-folder"
    done = run(["demo", "--model", str(missing)], tmp_path)
    assert done.returncode == 2
    assert f"error: --model {str(missing)!r} is not an existing folder" in done.stderr
    assert "model_id_or_path" not in done.stderr and "%|" not in done.stderr
    done = run(["demo", "--model", str(tiny_model_dirs["gpt2"]), "--layers", "0,9"], tmp_path)
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("murano-widgets demo: error: layers holds 9"), done.stderr


@pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="checks the message on a machine without a GPU"
)
def test_a_device_that_is_not_there_is_a_usage_error(tmp_path):
    done = run(["demo", "--device", "cuda"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "error: device 'cuda' is not available" in done.stderr
    assert "Traceback" not in done.stderr


def test_summary_shortens_long_prompts_so_columns_line_up(tmp_path, tiny_model_dirs):
    long = "one two three four five six seven eight nine ten " * 3
    done = run(
        ["demo", "--model", str(tiny_model_dirs["llama"]), "--prompt", long, "--prompt", "one"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if "→" in line]
    assert len(rows) == 2 and rows[0].index("→") == rows[1].index("→")
    assert "…" in rows[0] and long.strip() not in rows[0]


def test_parser_defaults():
    args = build_parser().parse_args(["demo"])
    assert args.out == Path("logit_lens.html") and args.model is None and args.top_k == 5


@pytest.mark.slow
def test_installed_wheel_runs_the_demo_from_a_fresh_environment(tmp_path):
    """Builds the wheel, installs it alone into a new venv (dependencies from this one) and runs
    the demo on the shipped model: this fails if the wheel lacks the ES module or the model."""
    wheel_dir = tmp_path / "wheel"
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(wheel_dir),
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    wheel = next(wheel_dir.glob("murano_widgets-*.whl"))
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        licences = [n for n in archive.namelist() if n.endswith("LICENSE")]
        assert licences, "the wheel carries the MIT licence its metadata names"
        assert "MIT License" in archive.read(licences[0]).decode()
        # PEP 561's marker ships, and the version hatch read from murano_widgets/_version.py.
        assert "murano_widgets/py.typed" in archive.namelist()
        (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        assert f"\nVersion: {murano_widgets.__version__}\n" in archive.read(metadata).decode()
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # The dependencies come from this environment, after the wheel's own copy of the package
    # (a path from a .pth file is not itself a site dir, so this venv's editable hook stays out).
    here = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "test-dependencies.pth").write_text("\n".join(sorted(here)) + "\n")
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", site, str(wheel), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    where = subprocess.run(
        [python, "-c", "import murano_widgets; print(murano_widgets.__file__)"],
        cwd=workdir,
        capture_output=True,
        text=True,
        check=False,
    )
    assert where.returncode == 0, where.stderr
    assert where.stdout.startswith(site), where.stdout  # the wheel, not the source tree
    done = run(["demo", "--out", "x.html"], workdir, python=str(python))
    assert done.returncode == 0, done.stderr
    page = (workdir / "x.html").read_text()
    assert "murano-state" in page and len(page) > 20_000
    assert "Paris" in done.stdout
