"""Data sets: the lens over many prompts, kept as per-prompt, per-layer numbers.

- ``runner``: ``lens_dataset``, the run: windows of prompts in batches, remote jobs, resuming.
- ``lens_dataset``: ``LensDataset`` (tidy tables, summaries, widgets, files) and the assembly a
  run and a folder's load share.
- ``stream``: the inputs as a stream (any iterable, a file of lines: ``text_lines``), checked
  item by item, sorted by length within windows, cut into batches by a token budget.
- ``shards``: a run's folder (``path=``): one file a batch, the run's fingerprint, resuming.
- ``progress``: the progress bar (prompts and tokens run per second, time left, job states).
- ``io``: provenance and the npz + JSON pair a data set is saved as.
- ``stats``: per-layer means with bootstrap intervals, and where each prompt's answer commits.
- ``agreement``: ``lens_agreement`` and ``LensAgreement``: how far lenses side by side agree
  with each other and with the model's output, per layer, with intervals.
- ``plot``: the publication figure.
- ``groups``: token groups over prompts: ``group_summary``, ``plot_groups`` (Wendler's figure,
  from a data set in one call), ``translation_prompts`` and ``cloze_prompts``.
- ``group_inputs``: ``lens_dataset(..., groups=...)``'s groups, resolved to token ids once.
- ``group_view``: the data-set widget's chart metrics for token groups.
"""

from murano_widgets.dataset.stream import text_lines

__all__ = ["text_lines"]
