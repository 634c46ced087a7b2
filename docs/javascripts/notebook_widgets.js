// Draws a notebook page's widget outputs with no kernel and no network.
//
// mkdocs-jupyter writes each widget output as a <script type="application/vnd.jupyter.widget-view+json">
// naming a model, and the notebook's saved widget state as one
// <script type="application/vnd.jupyter.widget-state+json">. Each anywidget model there is one of
// the package's widgets: its traits, with binary traits as base64 buffers at their paths. This
// module puts the buffers back in place and calls the widget's bundled ES module's
// renderStandalone(el, state), as the HTML export does. The bundle is the copy in the site
// (docs/hooks/notebooks.py copies murano_widgets/static/ to assets/murano/ and names it in the
// state as _murano_bundle); a saved module that is not the bundled one is imported from its text.
// ipywidgets boxes (the data-set widget is a VBox) draw their children in order.

const VIEW = "application/vnd.jupyter.widget-view+json";
const STATE = "application/vnd.jupyter.widget-state+json";
const REFERENCE = "IPY_MODEL_";
const BOXES = new Set(["VBoxModel", "HBoxModel", "BoxModel", "GridBoxModel"]);

const script = document.querySelector("script[data-murano-assets]");
const assets = new URL(script?.getAttribute("data-murano-assets") || "../assets/murano/", document.baseURI);
const stateElement = document.querySelector(`script[type="${STATE}"]`);
/** @type {Record<string, {model_name: string, model_module: string, state: Record<string, any>, buffers?: {path: string[], data: string, encoding: string}[]}>} */
const saved = stateElement ? JSON.parse(stateElement.textContent || "{}").state || {} : {};
/** @type {Map<string, Promise<any>>} */
const modules = new Map();

function moduleOf(state) {
  const key = state._murano_bundle ? `bundle:${state._murano_bundle}` : `esm:${state._esm}`;
  if (!modules.has(key)) {
    const url = state._murano_bundle
      ? new URL(`${state._murano_bundle}.js`, assets).href
      : URL.createObjectURL(new Blob([state._esm], { type: "text/javascript" }));
    modules.set(key, import(url));
  }
  return modules.get(key);
}

/** The saved traits with each binary buffer back at its path (base64 text; the widgets read it). */
function stateOf(entry) {
  const state = JSON.parse(JSON.stringify(entry.state));
  for (const buffer of entry.buffers || []) {
    let target = state;
    for (const step of buffer.path.slice(0, -1)) target = target[step] ??= {};
    target[buffer.path[buffer.path.length - 1]] = buffer.data;
  }
  for (const name of ["_esm", "_css", "_murano_bundle", "_anywidget_id"]) delete state[name];
  return state;
}

function note(el, text) {
  const p = document.createElement("p");
  p.className = "murano-notebook-note";
  p.textContent = text;
  el.append(p);
}

async function draw(modelId, el, seen = new Set()) {
  const entry = saved[modelId];
  if (!entry || seen.has(modelId)) {
    note(el, "This widget's state was not saved with the notebook: run the notebook to see it.");
    return;
  }
  seen.add(modelId);
  if (BOXES.has(entry.model_name)) {
    const box = document.createElement("div");
    box.className = `murano-notebook-box murano-notebook-${entry.model_name === "HBoxModel" ? "row" : "column"}`;
    el.append(box);
    for (const child of entry.state.children || []) {
      const host = document.createElement("div");
      box.append(host);
      await draw(String(child).slice(REFERENCE.length), host, seen);
    }
    return;
  }
  if (entry.model_module !== "anywidget") {
    note(el, `(${entry.model_name.replace(/Model$/, "")}: shown with a running kernel only)`);
    return;
  }
  const state = entry.state;
  const module = await moduleOf(state);
  const host = document.createElement("div");
  host.className = "murano-notebook-widget";
  el.append(host);
  const view = module.renderStandalone(host, stateOf(entry));
  (window.muranoWidgets ??= []).push({ modelId, el: host, ...view });
}

const views = [...document.querySelectorAll(`script[type="${VIEW}"]`)];
for (const view of views) {
  const { model_id: modelId } = JSON.parse(view.textContent || "{}");
  const el = document.createElement("div");
  el.className = "murano-notebook-output";
  view.after(el);
  try {
    await draw(modelId, el);
  } catch (error) {
    console.error(error);
    note(el, `This widget could not be drawn: ${error}`);
  }
}
window.muranoWidgetsReady = true;
