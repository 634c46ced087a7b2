"""The teaching notebooks: saved clean, executed top to bottom, and their widgets re-rendered.

Every notebook in ``notebooks/`` is executed headless with nbclient (a real ipykernel from this
environment, offline). Any error fails the test, including errors that do not stop a cell (a
display hook's traceback is an ``error`` output too). nbclient records the widgets' state in the
notebook's metadata, as a front end saving the notebook would; that saved state must hold each
``LogitLensWidget`` shown, and it must render again **without a kernel**: a page in headless
Chromium imports the ES module saved with the state (the real ``js/logit_lens.js``), rebuilds the
binary sections from the saved base64 buffers and calls ``renderStandalone``. The heatmap must
draw (a canvas with many distinct colours), write the prompt's tokens and the layer labels, and
raise no error, with every request outside the test origin blocked.

Each notebook is executed once per state of the code: the executed copy is kept in
``tests/_artifacts/notebooks/`` under a key of the notebook, the package's files and the
versions that run it, so the browser half of ``.ci/test`` (another pytest process) renders the
notebooks the first half executed instead of executing all seven again (2.5 min on CI's 2 cores).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import pytest
from chromium import console_problems, new_page
from notebook_cells import kernel_env

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
JS = ROOT / "murano_widgets" / "static" / "logit_lens.js"
CSS = ROOT / "murano_widgets" / "static" / "logit_lens.css"
ARTIFACTS = ROOT / "tests" / "_artifacts"
ORIGIN = "http://notebook-state.test"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
CELL_TIMEOUT_S = 180
# A text link, not Colab's badge image: an image from the web is a broken image offline.
COLAB_LINK = re.compile(
    r"(?<!!)\[Open in Colab\]"
    r"\(https://colab\.research\.google\.com/github/[\w.-]+/murano_widgets/blob/main/"
    r"notebooks/(?P<name>[\w.-]+\.ipynb)\)"
)
REMOTE_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*https?://|<img[^>]+src=[\"']https?://")


def test_the_teaching_notebooks_are_there():
    assert [path.name for path in NOTEBOOKS] == [
        "01_logit_lens_tour.ipynb",
        "02_comparing_prompts.ipynb",
        "03_pipeline_and_scale.ipynb",
        "04_when_does_it_know.ipynb",
        "05_compare_and_generate.ipynb",
        "06_lenses.ipynb",
        "07_which_component.ipynb",
        "08_which_language.ipynb",
    ]


def _ids(paths: list[Path]) -> list[str]:
    return [path.stem for path in paths]


# ---------------------------------------------------------------------------------------------
# The rule for any saved notebook: clean, or every widget output renders without a kernel

MODEL_REFERENCE = "IPY_MODEL_"  # how ipywidgets' state refers to another widget (a child)


def _referenced_models(value: Any) -> list[str]:
    """The model ids a saved widget state refers to (``"IPY_MODEL_<id>"`` strings, nested)."""
    if isinstance(value, str):
        return [value[len(MODEL_REFERENCE) :]] if value.startswith(MODEL_REFERENCE) else []
    if isinstance(value, dict):
        return [found for item in value.values() for found in _referenced_models(item)]
    if isinstance(value, list):
        return [found for item in value for found in _referenced_models(item)]
    return []


def stale_widget_views(nb: dict[str, Any], name: str) -> list[str]:
    """The widget outputs of a notebook that cannot render without a kernel.

    A front end draws a widget output (``application/vnd.jupyter.widget-view+json``) from the
    model state saved in the notebook's metadata (``metadata.widgets`` under
    ``application/vnd.jupyter.widget-state+json``). An output whose model, or a model it
    refers to (a child, as ``"IPY_MODEL_<id>"``), is not saved there shows "Error displaying
    widget: model not found" until the notebook is run again: JupyterLab saves outputs but not
    widget state unless asked to, so a notebook run and saved (or autosaved) there ends up so.

    Args:
        nb: The notebook, as ``nbformat.read`` or ``json.load`` gives it.
        name: The notebook's name, for the messages.

    Returns:
        One message per stale output, naming the notebook, the cell and the missing models;
        empty for a notebook saved without outputs or with a complete widget state.
    """
    saved = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    problems = []
    for index, cell in enumerate(nb.get("cells", [])):
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view is None:
                continue
            missing, seen, todo = [], set(), [view.get("model_id")]
            while todo:  # the view's model and every model it refers to, transitively
                model_id = todo.pop()
                if model_id in seen:
                    continue
                seen.add(model_id)
                if model_id not in saved:
                    missing.append(model_id)
                else:
                    todo += _referenced_models(saved[model_id].get("state", {}))
            if missing:
                problems.append(
                    f"{name}: cell {index} (id {cell.get('id', '?')}) shows a widget whose "
                    f"model is not in the notebook's saved widget state ({', '.join(missing)}): "
                    "it shows 'Error displaying widget: model not found' without a kernel. "
                    "Clear the outputs, or save the widget state with them."
                )
    return problems


def _widget_output(model_id: str) -> Any:
    import nbformat

    view = {"version_major": 2, "version_minor": 0, "model_id": model_id}
    return nbformat.v4.new_output(
        "display_data", data={WIDGET_VIEW: view, "text/plain": "LogitLensWidget(...)"}
    )


def _saved_model(state: dict[str, Any]) -> dict[str, Any]:
    return {"model_name": "AnyModel", "model_module": "anywidget", "state": state}


def test_stale_widget_views_on_notebooks_made_here():
    """The rule on small notebooks: clean or complete passes; an output whose model (or a
    child's model) is not saved fails, naming the notebook and the cell."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A"),
        nbformat.v4.new_code_cell("1 + 1"),
        nbformat.v4.new_code_cell("w", id="cell-with-w"),
    ]
    assert stale_widget_views(nb, "clean.ipynb") == []

    nb.cells[1].outputs = [
        nbformat.v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=1),
        nbformat.v4.new_output("stream", name="stdout", text="no widget here\n"),
    ]
    nb.cells[2].outputs = [_widget_output("aaa")]
    # What a front end saves without widget state: the output, no metadata.widgets.
    (problem,) = stale_widget_views(nb, "stale.ipynb")
    assert problem.startswith("stale.ipynb: cell 2 (id cell-with-w) shows a widget"), problem
    assert "(aaa)" in problem and "model not found" in problem

    # The same outputs with the widget's state saved (a box holding a child widget).
    nb.metadata["widgets"] = {
        WIDGET_STATE: {
            "version_major": 2,
            "version_minor": 0,
            "state": {
                "aaa": _saved_model({"children": ["IPY_MODEL_bbb"], "layout": "IPY_MODEL_ccc"}),
                "bbb": _saved_model({"value": 3}),
                "ccc": _saved_model({}),
            },
        }
    }
    nbformat.validate(nb)
    assert stale_widget_views(nb, "complete.ipynb") == []

    # A child dropped from the state: the output cannot render either.
    del nb.metadata["widgets"][WIDGET_STATE]["state"]["bbb"]
    (problem,) = stale_widget_views(nb, "child.ipynb")
    assert problem.startswith("child.ipynb: cell 2 ") and "(bbb)" in problem, problem

    # Read back from a file as plain JSON, as the check reads any notebook.
    assert stale_widget_views(json.loads(nbformat.writes(nb)), "child.ipynb") == [problem]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_widget_outputs_render_without_a_kernel(path):
    """The rule on every notebook of the repository as saved (they are saved clean, below,
    which passes it; a notebook saved with outputs must bring their widget state)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    problems = stale_widget_views(nb, path.name)
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# The notebooks as saved in the repository (fast)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_is_saved_clean_with_colab_link_and_install(path):
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, f"{path.name} has no code cells"
    for cell in code:
        assert cell.outputs == [], f"{path.name}: saved with outputs (clear them)"
        assert cell.execution_count is None, f"{path.name}: saved with execution counts"
    assert "widgets" not in nb.metadata, f"{path.name}: saved with widget state (clear it)"

    first_markdown = next(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    link = COLAB_LINK.search(first_markdown)
    assert link, f"{path.name}: no 'Open in Colab' link in the first markdown cell"
    assert link["name"] == path.name, f"{path.name}: the link opens {link['name']}"
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found = REMOTE_IMAGE.search(cell.source)
            assert not found, f"{path.name}: an image from the web, broken offline: {found[0]}"

    # One line installs it, in the kernel's own environment (%pip), and does nothing where it
    # is installed; the git form waits beside it, commented, until the first release. No
    # subprocess (which skips Colab's restart prompt) and no enable_custom_widget_manager()
    # (anywidget enables Colab's widget manager itself).
    install = code[0].source
    magics = [line for line in install.splitlines() if line.startswith("%")]
    assert magics == ["%pip install -q murano-widgets"], (
        f"{path.name}: the first code cell must be one `%pip install -q murano-widgets` line"
    )
    assert '# %pip install -q "murano-widgets @ git+https://github.com/' in install
    text = "\n".join(cell.source for cell in nb.cells)
    for gone in ("subprocess", "enable_custom_widget_manager", "google.colab"):
        assert gone not in text, f"{path.name}: {gone} (see the first code cell's rule)"
    assert "load_demo_model()" in text, f"{path.name}: does not use the shipped demo model"
    assert "MuranoModel(" in text and '"gpt2"' in text, (
        f"{path.name}: does not say how to switch to a real model"
    )


# ---------------------------------------------------------------------------------------------
# Executing them


_EXECUTE = """
import sys, time, nbclient, nbformat
source, target, workdir, timeout = sys.argv[1:5]
nb = nbformat.read(source, as_version=4)
client = nbclient.NotebookClient(
    nb, timeout=int(timeout), kernel_name="python3", store_widget_state=True,
    resources={"metadata": {"path": workdir}},
)
start = time.perf_counter()
client.execute()
print(time.perf_counter() - start)
nbformat.write(nb, target)
"""


def _execution_key(path: Path) -> str:
    """What an executed notebook depends on: the notebook, this script, the package's files
    (code, bundle, demo model) and the versions of what runs them."""
    digest = hashlib.sha256(_EXECUTE.encode())
    digest.update(f"{sys.version} {CELL_TIMEOUT_S}".encode())
    for name in ("torch", "transformers", "nnsight", "nnterp", "anywidget", "ipywidgets",
                 "ipykernel", "nbclient"):  # fmt: skip
        try:
            digest.update(f"{name} {version(name)}".encode())
        except PackageNotFoundError:
            digest.update(f"{name} -".encode())
    for file in [path, *sorted((ROOT / "murano_widgets").rglob("*"))]:
        if file.is_file() and "__pycache__" not in file.parts:
            digest.update(str(file.relative_to(ROOT)).encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """Executes a notebook once per state of the code; returns (notebook, seconds).

    The executed copy and its key are kept in ``tests/_artifacts/notebooks/`` (see the module's
    docstring); a copy whose key differs is executed again. nbclient runs in a child process:
    it leaves an asyncio loop behind in the process that runs it, and Playwright's sync API
    then refuses to start in that process.
    """
    import nbformat

    cache: dict[Path, tuple[Any, float]] = {}
    env = kernel_env()  # offline, this checkout first, the kernel's own inline backend
    out = ARTIFACTS / "notebooks"

    def run(path: Path):
        if path not in cache:
            target, stamp = out / path.name, out / f"{path.stem}.key"
            key = _execution_key(path)
            kept = stamp.read_text().split() if stamp.is_file() and target.is_file() else []
            if kept[:1] != [key]:
                # A scratch copy of the folder, so files the notebook writes stay out of the repo.
                workdir = tmp_path_factory.mktemp(path.stem)
                out.mkdir(parents=True, exist_ok=True)
                stamp.unlink(missing_ok=True)  # a copy half-written by a killed run is not kept
                done = subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        _EXECUTE,
                        str(path),
                        str(target),
                        str(workdir),
                        str(CELL_TIMEOUT_S),
                    ],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=CELL_TIMEOUT_S * 4,
                    check=False,
                )
                assert done.returncode == 0, (
                    f"{path.name} failed to execute:\n{done.stderr[-4000:]}"
                )
                kept = [key, done.stdout.strip().splitlines()[-1]]
                stamp.write_text(" ".join(kept))
            cache[path] = (nbformat.read(target, as_version=4), float(kept[1]))
        return cache[path]

    return run


def _errors(nb) -> list[str]:
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                found.append(f"cell {index}: {output.ename}: {output.evalue}")
            elif output.output_type == "stream" and "Traceback (most recent call last)" in (
                output.text
            ):
                found.append(f"cell {index}: traceback on {output.name}:\n{output.text[-2000:]}")
    return found


def _lens_widgets(nb) -> dict[str, dict[str, Any]]:
    """The saved states of the LogitLensWidgets, by model id."""
    saved = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    return {
        model_id: entry
        for model_id, entry in saved.items()
        if entry.get("model_module") == "anywidget"
        and str(entry["state"].get("_anywidget_id", "")).endswith("LogitLensWidget")
    }


def _shown_ids(nb) -> list[str]:
    ids = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view:
                ids.append(view["model_id"])
    return ids


def _sections(entry: dict[str, Any]) -> dict[str, bytes]:
    """The binary sections of a saved widget state, rebuilt from its base64 buffers."""
    sections: dict[str, bytes] = {}
    for buffer in entry.get("buffers", []):
        assert buffer["encoding"] == "base64", buffer["encoding"]
        path = list(buffer["path"])
        if len(path) == 2 and path[0] == "_sections":
            sections[path[1]] = base64.b64decode(buffer["data"])
    return sections


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_executes_and_saves_widget_state(path, executed):
    from murano_widgets.payload.lens import BASE_SECTIONS, decode_sections

    nb, seconds = executed(path)
    print(f"{path.name}: executed in {seconds:.1f} s")
    assert not _errors(nb), "\n".join(_errors(nb))

    lenses = _lens_widgets(nb)
    assert lenses, f"{path.name}: no LogitLensWidget in the saved widget state"
    shown = [model_id for model_id in _shown_ids(nb) if model_id in lenses]
    assert shown, f"{path.name}: no cell output shows a LogitLensWidget"
    problems = stale_widget_views(nb, path.name)
    assert not problems, "\n".join(problems)

    esm = JS.read_text(encoding="utf-8")
    for model_id, entry in lenses.items():
        state = entry["state"]
        assert state["_esm"] == esm, (
            "the saved widget does not carry murano_widgets/static/logit_lens.js"
        )
        meta = state["_meta"]
        sections = _sections(entry)
        expected = [name for name in BASE_SECTIONS if name in meta["sections"]]
        assert set(expected) <= set(sections), (model_id, sorted(sections))
        arrays = decode_sections(meta, sections)
        for name, array in arrays.items():
            assert list(array.shape) == meta["sections"][name]["shape"], name
        assert len(arrays["input_ids"]) == meta["total"] == sum(meta["lengths"])
        assert len(meta["prompts"]) == len(meta["lengths"])
        assert 0 <= state["prompt"] < len(meta["prompts"])
        assert state["layer"] in meta["layers"], "the layer trait is a model layer"


# ---------------------------------------------------------------------------------------------
# Rendering the saved state in a browser, with no kernel

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>saved notebook widget</title>
<link rel="stylesheet" href="/widget.css">
<style>body { margin: 0; padding: 16px; background: #fff; } #host { width: 960px; }</style>
</head>
<body>
<div id="host"></div>
<script type="module">
import * as lens from "/widget.js";
const fillText = CanvasRenderingContext2D.prototype.fillText;
window.__texts = [];
CanvasRenderingContext2D.prototype.fillText = function (text, x, y, ...rest) {
  window.__texts.push(String(text));
  return fillText.call(this, text, x, y, ...rest);
};
window.lens = lens;
window.show = (state) => {
  const el = document.getElementById("host");
  window.view = lens.renderStandalone(el, state);
  return true;
};
window.ready = true;
</script>
</body>
</html>
"""

CANVAS_STATS = """() => {
  const canvas = document.querySelector("#host canvas.murano-canvas") || document.querySelector("#host canvas");
  if (!canvas) return null;
  const { width, height } = canvas;
  const data = canvas.getContext("2d").getImageData(0, 0, width, height).data;
  const colours = new Set();
  let painted = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3] === 0) continue;
    painted++;
    colours.add((data[i] << 16) | (data[i + 1] << 8) | data[i + 2]);
  }
  return { width, height, painted, colours: colours.size };
}"""


def _open_page(browser, esm: str, css: str):
    context, page = new_page(browser, width=1000, height=900)
    page.blocked = []
    files = {
        "/index.html": ("text/html", PAGE),
        "/widget.js": ("text/javascript", esm),
        "/widget.css": ("text/css", css),
    }

    def handle(route):
        url = route.request.url
        path = url[len(ORIGIN) :].split("?")[0] if url.startswith(ORIGIN) else None
        if path in files:
            content_type, body = files[path]
            route.fulfill(status=200, content_type=content_type, body=body)
        else:
            page.blocked.append(url)
            route.abort()

    page.route("**/*", handle)
    page.goto(f"{ORIGIN}/index.html")
    page.wait_for_function("window.ready === true")
    return context, page


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_saved_widget_state_renders_without_a_kernel(path, executed, browser):
    from murano_widgets.payload.lens import decode_sections

    nb, _ = executed(path)
    lenses = _lens_widgets(nb)
    assert lenses, f"{path.name}: no LogitLensWidget in the saved widget state"
    for number, entry in enumerate(lenses.values()):
        state = entry["state"]
        meta = state["_meta"]
        sections = _sections(entry)
        saved = {
            "_meta": meta,
            "_sections": {name: base64.b64encode(data).decode() for name, data in sections.items()},
            **{
                name: state[name]
                for name in (
                    "prompt",
                    "layer",
                    "metric",
                    "selected",
                    "_details",
                    "live",
                    "prompts",
                    "targets",
                    "target",
                )
                if name in state
            },
        }
        context, page = _open_page(browser, state["_esm"], state.get("_css") or "")
        try:
            assert page.evaluate("(s) => window.show(s)", json.loads(json.dumps(saved)))
            page.wait_for_function("document.querySelector('#host canvas') !== null")
            # Two animation frames: the first draw is scheduled on one.
            page.evaluate(
                "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"
            )
            stats = page.evaluate(CANVAS_STATS)
            assert stats and stats["width"] > 0 and stats["height"] > 0, stats
            assert stats["painted"] > 0.2 * stats["width"] * stats["height"], stats
            assert stats["colours"] >= 8, f"the heatmap looks blank: {stats}"

            # The shown prompt's tokens and the layer numbers are written on the canvas.
            # Labels come wrapped in Unicode directional isolates (U+2066..U+2069): drop them.
            texts = {
                re.sub("[\u2066-\u2069]", "", text)
                for text in page.evaluate("() => window.__texts")
            }
            prompt = state.get("prompt", 0)
            start, length = meta["offsets"][prompt], meta["lengths"][prompt]
            input_ids = decode_sections(meta, {"input_ids": sections["input_ids"]})
            tokens = [meta["tokens"][i] for i in input_ids["input_ids"][start : start + length]]
            # A prompt wider than the page scrolls, opened at its end (where the prediction is):
            # only its visible columns are drawn.
            first, last = page.evaluate(
                "() => document.querySelector('.murano-root').parentElement"
                ".__muranoDebug.visibleColumns"
            )
            assert last > first and last == length, (first, last, length)
            tokens = tokens[first:last]
            shown = page.evaluate("(ts) => ts.map((t) => window.lens.displayToken(t))", tokens)
            for token, label in zip(tokens, shown, strict=True):
                assert any(
                    text == label or (text.endswith("…") and label.startswith(text[:-1]))
                    for text in texts
                ), f"input token {token!r} ({label!r}) is not written; drawn: {sorted(texts)[:40]}"
            assert {str(layer) for layer in meta["layers"]} & texts, "no layer labels drawn"
            missing = [name for name in meta.get("detail_sections", []) if name in meta["sections"]]
            missing = [name for name in missing if name not in sections]
            if missing:
                # Saved before any page asked for the detail sections (nbclient shows no
                # page): nothing will send them here, and the tooltip says what it waits for
                # rather than "loading" for ever.
                x, y = page.evaluate(
                    "([i, j]) => { const r = document.querySelector('.murano-root')"
                    ".parentElement.__muranoDebug.cellClientRect(i, j);"
                    " return [r.x + r.w / 2, r.y + r.h / 2]; }",
                    [0, last - 1],
                )
                page.mouse.move(x, y)
                page.wait_for_selector("#host .murano-tooltip:not([hidden])")
                tip = page.inner_text("#host .murano-tooltip")
                assert "Waiting for the kernel to send details" in tip, (missing, tip)
                host = page.inner_text("#host")
                assert "Loading" not in host, host[-600:]
            if state.get("live"):
                # A live widget saved with its notebook: no kernel here, and it says so in
                # place of the controls that need one.
                line = page.locator(".murano-live-nokernel")
                line.wait_for(state="visible")
                assert "Editing needs a running kernel" in line.inner_text()
                assert page.locator(".murano-live-prompt").is_hidden()
            assert not console_problems(page), console_problems(page)
            assert not page.blocked, f"the widget asked the network for {page.blocked}"
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.locator("#host").screenshot(
                path=str(ARTIFACTS / f"notebook-{path.stem}-{number}.png")
            )
        finally:
            context.close()


@pytest.mark.slow
def test_notebook_04_saves_the_data_set_widget_with_its_front_end(executed):
    path = NOTEBOOK_DIR / "04_when_does_it_know.ipynb"
    nb, _ = executed(path)
    saved = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    charts = [
        entry["state"]
        for entry in saved.values()
        if str(entry.get("state", {}).get("_anywidget_id", "")).endswith("DatasetChart")
    ]
    assert charts, "notebook 04 shows no data-set widget"
    esm = (ROOT / "murano_widgets" / "static" / "lens_dataset.js").read_text(encoding="utf-8")
    assert all(chart["_esm"] == esm for chart in charts)
    chart = charts[-1]
    assert chart["layer"] in chart["_meta"]["layers"] and chart["answer_set"] == "language"
    assert len(chart["_meta"]["sets"]) == 7, "one curve per fact family"


@pytest.mark.slow
@pytest.mark.browser
def test_notebook_04_data_set_widget_renders_without_a_kernel(executed, browser):
    path = NOTEBOOK_DIR / "04_when_does_it_know.ipynb"
    nb, _ = executed(path)
    saved = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    entry = next(
        entry
        for entry in saved.values()
        if str(entry.get("state", {}).get("_anywidget_id", "")).endswith("DatasetChart")
    )
    state = entry["state"]
    data = {
        buffer["path"][1]: buffer["data"]
        for buffer in entry.get("buffers", [])
        if len(buffer["path"]) == 2 and buffer["path"][0] == "_data"
    }
    assert len(data) == 2 * len(state["_meta"]["sets"]), sorted(data)
    standalone = {
        "_meta": state["_meta"],
        "_data": data,
        **{k: state[k] for k in ("layer", "answer_set", "order", "metric") if k in state},
    }
    context, page = _open_page(browser, state["_esm"], state.get("_css") or "")
    try:
        assert page.evaluate("(s) => window.show(s)", standalone)
        page.wait_for_function("document.querySelector('#host .murano-ds-chart') !== null")
        assert page.locator("#host .murano-ds-line").count() == len(state["_meta"]["sets"])
        assert page.locator("#host .murano-ds-band").count() == len(state["_meta"]["sets"])
        # The chosen layer's prompts are listed, worst first, as the notebook left them.
        assert page.locator("#host .murano-ds-prompt").count() > 0
        assert f"Layer {state['layer']}" in page.inner_text("#host .murano-ds-prompts-title")
        page.locator("#host .murano-ds-prompt").first.click()
        assert "no Python kernel" in page.inner_text("#host .murano-ds-status")
        assert not console_problems(page), console_problems(page)
        assert not page.blocked, f"the widget asked the network for {page.blocked}"
        page.locator("#host").screenshot(path=str(ARTIFACTS / "notebook-04-data-set-widget.png"))
    finally:
        context.close()


# ---------------------------------------------------------------------------------------------
# A widget keeps showing what the text under it describes


def _cell_showing(nb, model_id: str) -> int:
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.get("data", {}).get(WIDGET_VIEW, {}).get("model_id") == model_id:
                return index
    raise AssertionError(f"no cell shows widget {model_id}")


@pytest.mark.slow
def test_notebook_01_first_widget_still_shows_paris_after_run_all(executed):
    """After Run All, notebook 01's first widget shows what the text under it describes: the
    prompt of section 2 alone, coloured by the top-1 probability, its last column settling on
    " Paris". (The live calls of section 4 go to a widget of their own: before, they added
    "The capital of Japan is" and " Tokyo" to this one, which then showed the notebook's end.)"""
    from murano_widgets.payload.lens import decode_sections

    path = NOTEBOOK_DIR / "01_logit_lens_tour.ipynb"
    nb, _ = executed(path)
    lenses = _lens_widgets(nb)
    first = next(model_id for model_id in _shown_ids(nb) if model_id in lenses)
    shown_at = _cell_showing(nb, first)
    under = next(cell.source for cell in nb.cells[shown_at + 1 :] if cell.cell_type == "markdown")
    assert '`" Paris"`' in under and "last column" in under, under  # what the text promises

    # The prompt as the notebook wrote it, read from its source rather than from the widget.
    (prompt,) = re.findall(r'^prompt = "([^"]+)"$', "\n".join(c.source for c in nb.cells), re.M)
    state = lenses[first]["state"]
    assert state["prompts"] == [prompt], state["prompts"]
    assert state["prompt"] == 0 and state["targets"] == [] and state["target"] == ""
    assert state["metric"] == "prob", state["metric"]
    meta = state["_meta"]
    arrays = decode_sections(meta, _sections(lenses[first]))
    last = meta["lengths"][0] - 1
    assert meta["tokens"][int(arrays["final_tokens"][last])] == " Paris"
    assert state.get("patch_info") is None
