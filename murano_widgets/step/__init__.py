"""The ``LogitLens`` step: inputs → one trace → per chunk and layer: lens → final norm →
unembedding → reductions.

- ``logit_lens``: the step (``LogitLens``), its trace and its chunk loop, in two paths (after
  the trace; inside it, for NDIF).
- ``inputs``: the input plan (tokenising, padding, shown positions, appended answer tokens)
  and the scoring of answers and targets.
- ``reductions``: the per-cell fields of a chunk of logits, the one KL in bits (``kl_bits``),
  the pair reduction of comparisons, the exact rank count.

To add a metric: compute its field per row in ``reductions.reduce_logits`` (and
``reduce_final``), add one ``Metric`` and one ``Section(..., reduced=True)`` to
:mod:`murano_widgets.metrics`, and declare the field on ``LogitLensResult``.
"""
