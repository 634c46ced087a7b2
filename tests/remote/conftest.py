"""The remote suite: ``LogitLens(..., remote=True)`` against a real NDIF server on this machine.

Excluded from the default run (marker ``remote``); ``.ci/remote.sh`` runs it in a venv with
nnsight 0.8 and without nnterp. It installs nothing: it expects the NDIF server installed by
``../shared/ndif/install.sh`` (``$NDIF_VENV``), starts it with ``start.sh`` unless one is
already up (then it leaves that one running), and stops what it started with ``stop.sh``,
which ends every process in the server's network namespace by PID.

The clients run inside that namespace (``run.sh``), as subprocesses of the tests, on model
folders the server reads from the same file system. Without root, ``ip``, the NDIF venv or
the scripts the tests are skipped, unless ``MURANO_REMOTE_REQUIRED=1`` (CI) makes that an error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CLIENT = HERE / "client.py"
REPO = HERE.parent.parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.remote)


def _shared_ndif() -> Path:
    given = os.environ.get("NDIF_SHARED")
    for candidate in ([Path(given)] if given else []) + [
        REPO.parent / "shared" / "ndif",
        Path("/work/shared/ndif"),
    ]:
        if (candidate / "start.sh").is_file():
            return candidate
    return REPO.parent / "shared" / "ndif"


def _ndif_env(shared: Path) -> dict[str, str]:
    """The variables env.sh sets (NDIF_WORK, NDIF_VENV, NDIF_NETNS, ...), as it sets them."""
    out = subprocess.run(
        ["bash", "-c", f'source "{shared}/env.sh" >/dev/null && env -0'],
        capture_output=True,
        check=True,
    ).stdout.decode()
    return dict(line.split("=", 1) for line in out.split("\0") if "=" in line)


def _unavailable(reason: str):
    if os.environ.get("MURANO_REMOTE_REQUIRED") == "1":
        pytest.fail(f"the remote suite cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


class NDIF:
    """A running local NDIF server and a way to run clients next to it."""

    def __init__(self, shared: Path, env: dict[str, str]) -> None:
        self.shared = shared
        self.env = env

    def answers(self) -> bool:
        probe = subprocess.run(
            [
                "bash",
                str(self.shared / "run.sh"),
                "curl",
                "-sf",
                "-o",
                "/dev/null",
                "http://127.0.0.1:8001/connected",
            ],
            capture_output=True,
            timeout=30,
        )
        return probe.returncode == 0

    def client(self, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
        """Runs ``client.py args...`` with this venv's python inside the server's namespace."""
        env = dict(os.environ)
        env.setdefault("PYTHONPATH", "")
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env["PYTHONPATH"]) if p)
        return subprocess.run(
            ["bash", str(self.shared / "run.sh"), sys.executable, str(CLIENT), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=REPO,
        )

    def client_json(self, *args: str, timeout: float = 180) -> tuple[dict, str]:
        """Runs the client, which prints one JSON line last; returns it and the stderr."""
        done = self.client(*args, timeout=timeout)
        if done.returncode != 0:
            raise AssertionError(
                f"client {' '.join(args)} failed ({done.returncode}):\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
            )
        return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


@pytest.fixture(scope="session")
def ndif():
    shared = _shared_ndif()
    if not (shared / "start.sh").is_file():
        _unavailable(f"no NDIF scripts at {shared} (set NDIF_SHARED)")
    if os.geteuid() != 0 or shutil.which("ip") is None:
        _unavailable("the local NDIF needs root and `ip netns`")
    env = _ndif_env(shared)
    if not Path(env["NDIF_VENV"], "bin", "python").is_file():
        _unavailable(f"no NDIF venv at {env['NDIF_VENV']}: run {shared}/install.sh first")
    try:
        import nnsight
    except ImportError:
        _unavailable("nnsight is not installed here")
    if not nnsight.__version__.startswith("0.8"):
        _unavailable(f"NDIF accepts nnsight 0.8 clients; this venv has {nnsight.__version__}")
    server = NDIF(shared, env)
    running = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    if env["NDIF_NETNS"] in running.split() and server.answers():
        yield server  # someone else's server: use it, leave it running
        return
    started = subprocess.run(
        ["bash", str(shared / "start.sh")], capture_output=True, text=True, timeout=300
    )
    try:
        if started.returncode != 0:
            logs = Path(env["NDIF_WORK"], "logs")
            tails = "".join(
                f"\n--- {log.name}\n{log.read_text(errors='replace')[-1500:]}"
                for log in sorted(logs.glob("*.log"))
            )
            pytest.fail(f"NDIF did not start:\n{started.stdout}\n{started.stderr}{tails}")
        yield server
    finally:
        subprocess.run(["bash", str(shared / "stop.sh")], capture_output=True, timeout=120)
