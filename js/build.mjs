// Builds the widgets' front ends into the package: each widget's entry in js/src → one ES module
// in murano_widgets/static/ (logit_lens.js, lens_dataset.js, lens_diff.js), and its CSS beside
// it (the shared palette, src/shared/theme.css, first). The built files are committed, so a source
// install needs no node.
//
//   node build.mjs           write them
//   node build.mjs --check   fail (exit 1) when the committed files differ from a fresh build
//
// The output is deterministic: same sources and esbuild version → same bytes (no timestamps,
// paths relative to js/, no minification).

import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, "..", "murano_widgets", "static");
const check = process.argv.includes("--check");

const banner = "// Built by `npm run build` (js/build.mjs) from js/src with esbuild; do not edit: edit js/src.";

// The palette all three widgets share (CSS properties --murano-*, every host's dark selector):
// put at the top of each widget's stylesheet, so each stylesheet stands alone (a notebook may
// load any one of them).
const themeCss = "src/shared/theme.css";

// One bundle per widget, each its own entry so that one widget's code never grows another's:
// the heatmap (show_logit_lens), the data set (LensDataset.show()) and the lens diff
// (show_lens_diff). The heatmap's live controls show a patch with the lens diff's own view
// (src/heatmap/live/view.js), so its bundle holds that view and its stylesheet the diff's rules too.
const widgets = [
  { entry: "src/heatmap/index.js", css: ["src/heatmap/logit_lens.css", "src/heatmap/live/live.css", "src/diff/lens_diff.css"], name: "logit_lens" },
  { entry: "src/dataset/index.js", css: ["src/dataset/dataset.css"], name: "lens_dataset" },
  { entry: "src/diff/index.js", css: ["src/diff/lens_diff.css"], name: "lens_diff" },
];

const outputs = {};
for (const widget of widgets) {
  const result = await esbuild.build({
    absWorkingDir: here,
    entryPoints: [widget.entry],
    bundle: true,
    format: "esm",
    platform: "browser",
    target: "es2020",
    charset: "utf8",
    legalComments: "none",
    minify: false,
    sourcemap: false,
    write: false,
    banner: { js: banner },
    logLevel: "warning",
  });
  const theme = readFileSync(join(here, themeCss), "utf8");
  const css = widget.css.map((file) => readFileSync(join(here, file), "utf8")).join("\n");
  const sources = [themeCss, ...widget.css].map((file) => `js/${file}`);
  outputs[`${widget.name}.js`] = result.outputFiles[0].text;
  outputs[`${widget.name}.css`] =
    `/* Copied by \`npm run build\` from ${sources.slice(0, -1).join(", ")} and ${sources[sources.length - 1]}; do not edit: edit js/src. */\n${theme}\n${css}`;
}

let stale = [];
for (const [name, text] of Object.entries(outputs)) {
  const path = join(outDir, name);
  let current = null;
  try {
    current = readFileSync(path, "utf8");
  } catch {
    current = null;
  }
  if (current === text) continue;
  if (check) stale.push(name);
  else {
    mkdirSync(outDir, { recursive: true });
    writeFileSync(path, text);
    console.log(`wrote murano_widgets/static/${name} (${text.length} characters)`);
  }
}
if (check) {
  if (stale.length) {
    console.error(`murano_widgets/static/${stale.join(", ")} differ from a fresh build of js/src: run \`cd js && npm run build\` and commit the result.`);
    process.exit(1);
  }
  console.log("murano_widgets/static is up to date with js/src");
}
