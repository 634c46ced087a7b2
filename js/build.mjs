// Builds the widget's front end into the package: js/src/index.js → one ES module
// (murano_widgets/static/logit_lens.js) and js/src/logit_lens.css → murano_widgets/static/.
// The built files are committed, so a source install needs no node.
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

const result = await esbuild.build({
  absWorkingDir: here,
  entryPoints: ["src/index.js"],
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

const css = readFileSync(join(here, "src", "logit_lens.css"), "utf8");
const outputs = {
  "logit_lens.js": result.outputFiles[0].text,
  "logit_lens.css": `/* Copied by \`npm run build\` from js/src/logit_lens.css; do not edit: edit js/src. */\n${css}`,
};

// The data-set widget (LensDataset.show()): its own entry, so the heatmap's bundle stays as it is.
const dataset = await esbuild.build({
  absWorkingDir: here,
  entryPoints: ["src/dataset/index.js"],
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
const datasetCss = readFileSync(join(here, "src", "dataset", "dataset.css"), "utf8");
outputs["lens_dataset.js"] = dataset.outputFiles[0].text;
outputs["lens_dataset.css"] = `/* Copied by \`npm run build\` from js/src/dataset/dataset.css; do not edit: edit js/src. */\n${datasetCss}`;

// The lens-diff widget (show_lens_diff): its own entry too.
const diff = await esbuild.build({
  absWorkingDir: here,
  entryPoints: ["src/diff/index.js"],
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
const diffCss = readFileSync(join(here, "src", "diff", "lens_diff.css"), "utf8");
outputs["lens_diff.js"] = diff.outputFiles[0].text;
outputs["lens_diff.css"] = `/* Copied by \`npm run build\` from js/src/diff/lens_diff.css; do not edit: edit js/src. */\n${diffCss}`;

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
