"""A real classic Notebook (``notebook`` 6.5, the ipywidgets 7 front end that Google Colab's
widget manager speaks) for the browser tests: a server with a kernel, and a notebook page whose
cells are run through the page's own ``Jupyter.notebook`` object.

The server is :class:`lab_server.JupyterLab`'s (free port, random token, its own process group,
stopped with its kernels at the end) with classic Notebook's command line; its kernels import
the ``murano_widgets`` installed in the server's Python (no ``PYTHONPATH``): the Colab suite
(``tests/colab``, ``.ci/colab.sh``) checks the installed wheel, front end included.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from lab_server import JupyterLab, free_port, wait_for


class ClassicNotebook(JupyterLab):
    """One ``jupyter notebook`` (classic, 6.x) server serving ``folder / "work"``."""

    def __init__(self, folder: Path):
        self.token = secrets.token_hex(16)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.work = folder / "work"
        self.work.mkdir(parents=True)
        self.log_path = folder / "notebook.log"
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        env = {
            **os.environ,
            "JUPYTER_RUNTIME_DIR": str(folder / "_runtime"),
            # No user configuration: the nbextensions enabled are the venv's own (ipywidgets 7's
            # widgetsnbextension, anywidget's), as pip installed them.
            "JUPYTER_CONFIG_DIR": str(folder / "_config"),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
        env.pop("PYTHONPATH", None)
        env.pop("MPLBACKEND", None)
        command = [
            sys.executable, "-m", "notebook", "--no-browser", "--ip=127.0.0.1",
            f"--port={self.port}", f"--NotebookApp.token={self.token}", "--allow-root",
            f"--notebook-dir={self.work}", "--NotebookApp.open_browser=False",
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
            wait_for(lambda: self.api("/api/status") is not None, 90, "the classic Notebook server")
        except BaseException:
            self.stop()
            raise


@contextlib.contextmanager
def open_classic(browser, server: ClassicNotebook, name: str, *, height: int = 1100):
    """Notebook ``name`` open in classic Notebook in a fresh browser context (1300 px wide), as a
    :class:`ClassicPage` whose ``console`` lists the page's warnings and errors; the context is
    closed at the end, whatever happens."""
    context = browser.new_context(viewport={"width": 1300, "height": height})
    page = context.new_page()
    page.set_default_timeout(60_000)
    console: list[str] = []
    page.on(
        "console",
        lambda msg: (
            console.append(f"{msg.type}: {msg.text}") if msg.type in ("warning", "error") else None
        ),
    )
    page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
    try:
        yield ClassicPage(server, page, name, console)
    finally:
        context.close()


class ClassicPage:
    """A notebook open in classic Notebook, with a connected kernel."""

    CELLS = "#notebook-container .cell"

    def __init__(self, server: ClassicNotebook, page, name: str, console: list[str]):
        self.server = server
        self.page = page
        self.console = console
        page.goto(f"{server.base}/notebooks/{name}?token={server.token}")
        # The page's Jupyter.notebook exists before its kernel does; cells run before the
        # kernel connects are lost, and a widget shown before ipywidgets' extension registered
        # its comm target never draws (the kernel's comm_open finds no one to open it).
        page.wait_for_function(
            "() => window.Jupyter && Jupyter.notebook && Jupyter.notebook.kernel"
            " && Jupyter.notebook.kernel.is_connected()"
            " && Jupyter.notebook.kernel.comm_manager.targets['jupyter.widget']",
            timeout=90_000,
        )
        self.cells = page.locator(self.CELLS)

    def run(self, index: int) -> None:
        """Runs cell ``index`` (what Shift+Enter on it does)."""
        self.page.evaluate("(i) => Jupyter.notebook.execute_cells([i])", index)

    def output(self, index: int):
        """The output area of cell ``index``."""
        return self.cells.nth(index).locator(".output_area")

    def texts(self, index: int) -> list[str]:
        return self.cells.nth(index).locator(".output_subarea").all_inner_texts()

    def run_and_read(self, index: int, marker: str, timeout: float = 60.0) -> str:
        """Runs cell ``index`` and returns the text after ``marker`` in its output, a line the
        cell prints; a traceback there fails at once, showing it."""
        self.run(index)

        def printed():
            texts = self.texts(index)
            if any("Traceback" in t or "Error" in t.split("\n", 1)[0] for t in texts):
                raise AssertionError(f"cell {index} failed:\n" + "\n".join(texts))
            return next(
                (line for t in texts for line in t.splitlines() if line.startswith(marker)), None
            )

        found = wait_for(printed, timeout, f"cell {index} to print {marker!r}", reraise=True)
        return found[len(marker) :].strip()

    def read_json(self, index: int, marker: str) -> dict:
        return json.loads(self.run_and_read(index, marker))
