// @ts-check
/**
 * Colour stops (17, evenly spaced) sampled from matplotlib's colour-blind-safe maps; the metric
 * registry (Python) names a scale, the front end draws it.
 * @type {Readonly<Record<string, readonly string[]>>}
 */
export const COLOUR_STOPS = Object.freeze({
  viridis: ["#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e", "#26828e", "#21918c",
    "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b", "#addc30", "#d8e219", "#fde725"],
  cividis: ["#00224e", "#002e6a", "#1a386f", "#32436d", "#434e6c", "#535a6d", "#61656f", "#6f7073", "#7d7c78",
    "#8c8878", "#9b9476", "#aba072", "#bcae6c", "#cdbb63", "#dec958", "#f0d846", "#fee838"],
  // Magma without its near-white end, which would vanish on a light background.
  magma: ["#000004", "#0a0822", "#1d1147", "#36106b", "#51127c", "#6a1c81", "#832681", "#9c2e7f", "#b73779",
    "#d0416f", "#e75263", "#f56b5c", "#fc8961", "#fea772", "#fec488"],
});
