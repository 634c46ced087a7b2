"""A real JupyterLab for the browser tests: a server with a kernel, and a notebook page driven by
the keyboard and the mouse as a person would.

The server runs in its own process group on a free port with a random token and throw-away
settings (no news, no update check); its root is a scratch folder each test writes its notebook
into. It is started once per session (about 10-20 s), only when a test asks for it, and stopped
with its kernels at the end, whatever happens.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import ClassVar

from harness import ROOT

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, timeout: float, what: str, interval: float = 0.25, reraise: bool = False):
    """Polls ``condition`` until it returns something true; raises TimeoutError naming ``what``.
    An exception from ``condition`` counts as "not yet" (the server may not be up yet), unless
    ``reraise`` and it is an AssertionError (a definite failure)."""
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = condition()
            if value:
                return value
        except AssertionError:
            if reraise:
                raise
            last_error = "assertion"
        except Exception as error:
            last_error = error
        time.sleep(interval)
    raise TimeoutError(
        f"timed out after {timeout:.0f} s waiting for {what} (last error: {last_error})"
    )


class JupyterLab:
    """One ``jupyter lab`` server serving ``folder / "work"``."""

    def __init__(self, folder: Path):
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.work = folder / "work"
        self.work.mkdir(parents=True)
        settings = folder / "_settings"
        (settings / "app").mkdir(parents=True)
        (settings / "app" / "overrides.json").write_text(
            json.dumps(
                {
                    "@jupyterlab/apputils-extension:notification": {
                        "fetchNews": "false",
                        "checkForUpdates": False,
                    },
                    # A saved notebook keeps its widgets' state, as a user who shares one
                    # turns on: the live-lens test reopens one.
                    "@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True},
                }
            )
        )
        self.log_path = folder / "jupyterlab.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        env = {
            **os.environ,
            "JUPYTER_RUNTIME_DIR": str(folder / "_runtime"),
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)]),
            "MPLBACKEND": "Agg",
        }
        command = [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
            f"--port={self.port}", f"--IdentityProvider.token={self.token}", "--allow-root",
            f"--ServerApp.root_dir={self.work}",
            f"--LabApp.app_settings_dir={settings / 'app'}",
            f"--LabApp.user_settings_dir={settings / 'user'}",
            f"--LabApp.workspaces_dir={settings / 'workspaces'}",
            "--ServerApp.open_browser=False",
        ]  # fmt: skip
        self.server = subprocess.Popen(
            command,
            cwd=self.work,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_for(lambda: self.api("/api/status") is not None, 90, "the JupyterLab server")
        except BaseException:
            self.stop()
            raise

    def api(self, path: str, method: str = "GET"):
        request = urllib.request.Request(
            f"{self.base}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            body = response.read()
            return json.loads(body) if body else None

    def write_notebook(self, name: str, sources: list[str]) -> str:
        """Writes a notebook of code cells (unexecuted) into the server's root; returns its name."""
        notebook = {
            "cells": [
                {
                    "cell_type": "code",
                    "metadata": {},
                    "source": source,
                    "outputs": [],
                    "execution_count": None,
                }
                for source in sources
            ],
            "metadata": {
                "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
            },
            "nbformat": 4,
            "nbformat_minor": 5,
        }
        (self.work / name).write_text(json.dumps(notebook))
        return name

    def shut_down_kernels(self) -> None:
        for kernel in self.api("/api/kernels") or []:
            self.api(f"/api/kernels/{kernel['id']}", method="DELETE")

    def stop(self) -> None:
        with contextlib.suppress(Exception):  # the server may be gone already
            self.shut_down_kernels()
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.server.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.server.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        self._log.close()


@contextlib.contextmanager
def open_notebook(
    browser,
    lab: JupyterLab,
    name: str,
    *,
    ui: str = "lab",
    height: int = 1000,
    timeout_ms: int = 60_000,
):
    """Notebook ``name`` open in a fresh browser context (1300 px wide), as a
    :class:`NotebookPage`; the context is closed at the end, whatever happens."""
    context = browser.new_context(viewport={"width": 1300, "height": height})
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    try:
        yield NotebookPage(lab, page, name, ui=ui)
    finally:
        context.close()


class NotebookPage:
    """A notebook opened in ``page``, with a connected, idle kernel: in JupyterLab
    (``ui="lab"``) or in Notebook 7 (``ui="notebook"``: the ``notebook`` package's pages on the
    same server, built from JupyterLab's components, so the same selectors reach its cells)."""

    #: Each user interface's page for a notebook ``{name}``.
    URLS: ClassVar[dict[str, str]] = {
        "lab": "/lab/tree/{name}?reset&",
        "notebook": "/notebooks/{name}?",
    }

    # The cells of the notebook in view (another tab's notebook may be in the page too).
    CELLS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell"

    def __init__(self, lab: JupyterLab, page, name: str, ui: str = "lab"):
        self.lab = lab
        self.page = page
        # `reset`: a fresh workspace, not the one an earlier test left with its notebook open.
        page.goto(f"{lab.base}{self.URLS[ui].format(name=name)}token={lab.token}")
        page.wait_for_selector(f"{self.CELLS} .cm-content")
        # The toolbar says "idle" before a kernel exists: wait for a connected, idle kernel.
        wait_for(
            lambda: any(
                k["execution_state"] == "idle" and k["connections"] >= 1
                for k in lab.api("/api/kernels")
            ),
            90,
            "an idle kernel with a connection",
        )
        self.cells = page.locator(self.CELLS)

    def run(self, index: int) -> None:
        """Runs cell ``index`` as a person does: click into it, Shift+Enter."""
        self.cells.nth(index).locator(".cm-content").click()
        self.page.keyboard.press("Shift+Enter")

    def output(self, index: int):
        """The output area of cell ``index``."""
        return self.cells.nth(index).locator(".jp-OutputArea-output")

    def run_and_read(self, index: int, marker: str, timeout: float = 60.0) -> str:
        """Runs cell ``index`` (never run before) and returns the text after ``marker`` in its
        output, a line the cell prints; a traceback there fails at once, showing it."""
        self.run(index)
        outputs = self.cells.nth(index).locator(".jp-OutputArea-output")

        def printed():
            texts = outputs.all_inner_texts()
            if any("Traceback" in t or "Error" in t.split("\n", 1)[0] for t in texts):
                raise AssertionError(f"cell {index} failed:\n" + "\n".join(texts))
            return next((t for t in texts if t.startswith(marker)), None)

        found = wait_for(printed, timeout, f"cell {index} to print {marker!r}", reraise=True)
        return found[len(marker) :].strip()

    def active_cell(self) -> int:
        """The index of the notebook's active cell (what command-mode arrows move)."""
        return self.page.evaluate(
            "(sel) => [...document.querySelectorAll(sel)].findIndex((c) => c.classList.contains('jp-mod-active'))",
            self.CELLS,
        )

    def mode(self) -> str:
        """ "command" or "edit"."""
        return self.page.evaluate(
            "() => document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook').classList.contains('jp-mod-editMode') ? 'edit' : 'command'"
        )

    def scroll_top(self) -> float:
        return self.page.evaluate(
            "() => { const p = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)'); const n = p.querySelector('.jp-WindowedPanel-outer') || p.querySelector('.jp-Notebook'); return n.scrollTop; }"
        )

    def use_theme(self, name: str) -> None:
        """Switches JupyterLab's theme from its menu (Settings → Theme → ``name``), as a user
        does, and waits until the theme's stylesheet applies."""
        page = self.page
        page.locator(".lm-MenuBar-itemLabel", has_text="Settings").click()
        page.locator(".lm-Menu-itemLabel", has_text="Theme").first.hover()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(f"^{re.escape(name)}$")).click()
        light = "true" if "Light" in name else "false"
        page.wait_for_function(
            "(light) => document.body.dataset.jpThemeLight === light && document.body.dataset.jpThemeName",
            arg=light,
        )
        wait_for(
            lambda: page.evaluate("() => document.body.dataset.jpThemeName") == name,
            30,
            f"JupyterLab's theme {name!r}",
        )
        # Themes load their stylesheet after the attribute changes: wait until it has landed
        # (the layout colour resolves light or dark as the theme is), then let the widgets
        # redraw. A condition, not a sleep: a loaded machine loads the sheet later.
        page.wait_for_function(
            """(light) => {
                 const probe = document.createElement('div');
                 probe.style.background = 'var(--jp-layout-color0)';
                 document.body.appendChild(probe);
                 const rgb = getComputedStyle(probe).backgroundColor.match(/[\\d.]+/g).map(Number);
                 probe.remove();
                 const bright = (0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]) / 255 > 0.5;
                 return bright === (light === 'true');
               }""",
            arg=light,
        )
        page.wait_for_timeout(500)
