"""The widget in a real JupyterLab: a click in the browser reaches ``w.selected`` in the kernel.

Slow (about 20-40 s): it starts ``jupyter lab`` in its own process group on a free port with a
random token and throw-away settings, opens a notebook in headless Chromium, runs it, clicks a
heatmap cell and moves the layer slider, then reads the traits back by running a second cell.
Kernels are shut down through the REST API and the server's process group is stopped at the end,
whatever happens.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from harness import ARTIFACTS, ROOT
from test_layout_fixes import SELECT_WIDTHS

pytestmark = [pytest.mark.jupyterlab, pytest.mark.slow]

HERE = Path(__file__).resolve().parent

SETUP = f"""\
import sys
sys.path.insert(0, {str(HERE)!r})
from lens_data import make_result
from murano_widgets import LogitLensWidget
w = LogitLensWidget(make_result(n_layers=6))
w"""

READ_BACK = """\
print("TRAITS", w.selected["layer_index"], w.selected["position"], w.selected["input_token"], w.layer)"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api(base: str, token: str, path: str, method: str = "GET"):
    request = urllib.request.Request(
        f"{base}{path}", method=method, headers={"Authorization": f"token {token}"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        body = response.read()
        return json.loads(body) if body else None


def wait_for(condition, timeout: float, what: str, interval: float = 0.25):
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except Exception as error:  # the server may not be up yet
            last_error = error
        time.sleep(interval)
    raise TimeoutError(
        f"timed out after {timeout:.0f} s waiting for {what} (last error: {last_error})"
    )


@pytest.fixture
def jupyterlab(tmp_path):
    """A running JupyterLab serving `tmp_path`; yields (base_url, token)."""
    token = secrets.token_hex(16)
    port = free_port()
    settings = tmp_path / "_settings"
    (settings / "app").mkdir(parents=True)
    (settings / "app" / "overrides.json").write_text(
        json.dumps(
            {
                "@jupyterlab/apputils-extension:notification": {
                    "fetchNews": "false",
                    "checkForUpdates": False,
                }
            }
        )
    )
    work = tmp_path / "work"
    work.mkdir()
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "source": SETUP,
                "outputs": [],
                "execution_count": None,
            },
            {
                "cell_type": "code",
                "metadata": {},
                "source": READ_BACK,
                "outputs": [],
                "execution_count": None,
            },
        ],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (work / "lens.ipynb").write_text(json.dumps(notebook))
    log = open(tmp_path / "jupyterlab.log", "w")  # noqa: SIM115 - closed below
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "_runtime"), "PYTHONPATH": str(ROOT)}
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--IdentityProvider.token={token}", "--allow-root", f"--ServerApp.root_dir={work}",
        f"--LabApp.app_settings_dir={settings / 'app'}",
        f"--LabApp.user_settings_dir={settings / 'user'}",
        f"--LabApp.workspaces_dir={settings / 'workspaces'}",
        "--ServerApp.open_browser=False",
    ]  # fmt: skip
    server = subprocess.Popen(
        command, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: api(base, token, "/api/status") is not None, 90, "the JupyterLab server")
        yield base, token
    finally:
        try:
            for kernel in api(base, token, "/api/kernels") or []:
                api(base, token, f"/api/kernels/{kernel['id']}", method="DELETE")
        except Exception:
            pass
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            try:
                os.killpg(server.pid, sig)
            except ProcessLookupError:
                break
            try:
                server.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        log.close()


def test_click_in_jupyterlab_sets_selected_in_the_kernel(browser, jupyterlab):
    base, token = jupyterlab
    context = browser.new_context(viewport={"width": 1300, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{base}/lab/tree/lens.ipynb?token={token}")
        page.wait_for_selector(".jp-Notebook .jp-Cell .cm-content")
        # The toolbar says "idle" before a kernel exists: wait for a connected, idle kernel.
        wait_for(
            lambda: any(
                k["execution_state"] == "idle" and k["connections"] >= 1
                for k in api(base, token, "/api/kernels")
            ),
            90,
            "an idle kernel with a connection",
        )
        cells = page.locator(".jp-Notebook .jp-Cell")
        cells.nth(0).locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        canvas = page.wait_for_selector(".murano-canvas", timeout=120_000)
        page.wait_for_function(
            "() => { const d = document.querySelector('.murano-root')?.parentElement?.__muranoDebug;"
            " return d && d.frames > 0 && d.layout; }"
        )
        assert canvas.is_visible()
        # JupyterLab's own styles do not cut the colour menu's longest label (issue 10).
        width, natural = page.eval_on_selector(".murano-select", SELECT_WIDTHS)
        assert width >= natural - 0.5, (
            f"the menu is {width:.0f} px, its labels need {natural:.0f} px"
        )
        rect = page.evaluate(
            "() => document.querySelector('.murano-root').parentElement.__muranoDebug.cellClientRect(3, 2)"
        )
        page.mouse.click(rect["x"] + rect["w"] / 2, rect["y"] + rect["h"] / 2)
        # Arrow keys in the heatmap move its focus cell, not the notebook's active cell.
        active = page.evaluate(
            "() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].findIndex((c) => c.classList.contains('jp-mod-active'))"
        )
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowUp")
        assert page.evaluate("() => document.activeElement.className") == "murano-canvas"
        assert (
            page.evaluate(
                "() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].findIndex((c) => c.classList.contains('jp-mod-active'))"
            )
            == active
        )
        debug_state = page.evaluate(
            "() => document.querySelector('.murano-root').parentElement.__muranoDebug.state"
        )
        assert debug_state["focus"] == {"layerIndex": 3, "position": 2}
        page.focus(".murano-layer-control .murano-slider")
        page.keyboard.press("Home")
        page.wait_for_timeout(300)  # throttled sync
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.locator(".murano-root").screenshot(path=str(ARTIFACTS / "jupyterlab_widget.png"))
        # Read the traits back in the kernel.
        cells.nth(1).locator(".cm-content").click()
        page.keyboard.press("Shift+Enter")
        output = page.wait_for_selector(".jp-OutputArea-output:has-text('TRAITS')", timeout=60_000)
        words = output.inner_text().split()
        assert words[:3] == ["TRAITS", "3", "2"], words
        assert words[-1] == "0", "the layer slider's Home reached w.layer"
        # The pin drawn by the front end agrees with what Python described.
        state = page.evaluate(
            "() => document.querySelector('.murano-root').parentElement.__muranoDebug.state"
        )
        assert state["selected"]["layer_index"] == 3 and state["selected"]["position"] == 2
        assert "layer" in state["selected"], "Python's full description came back to the view"
    finally:
        context.close()
