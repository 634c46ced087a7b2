"""Data sets: the lens over many prompts, kept as per-prompt, per-layer numbers.

- ``lens_dataset``: ``lens_dataset`` and ``LensDataset`` (tidy tables, summaries, widgets).
- ``io``: provenance and the npz + JSON pair a data set is saved as.
- ``stats``: per-layer means with bootstrap intervals, and where each prompt's answer commits.
- ``agreement``: ``lens_agreement`` and ``LensAgreement``: how far lenses side by side agree
  with each other and with the model's output, per layer, with intervals.
- ``plot``: the publication figure.
"""
