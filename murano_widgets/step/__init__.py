"""The ``LogitLens`` step: inputs → one trace → per chunk and layer: lens → final norm →
unembedding → reductions.

Read top to bottom:

- ``logit_lens``: the step (``LogitLens``): its constructor and calls; it holds its options as
  one record and calls ``assemble.run_step``.
- ``config``: the options record (``StepConfig``), every option checked once, before any model
  work (``configure``).
- ``trace``: the forward pass or nnsight trace, the states it reads, the reduction inside it
  (for NDIF) and the decomposition.
- ``chunk_loop``: the reduction after the trace, chunk by chunk of positions.
- ``reductions``: the per-cell fields of a chunk of logits, the one KL in bits (``kl_bits``),
  the pair reduction of comparisons, the exact rank count.
- ``assemble``: one run end to end (``run_step``: the input plan, a reduction path) and the
  result laid out.

Beside them:

- ``token_strings``: token ids decoded once per tokenizer, kept.
- ``inputs``: the input plan (tokenising, padding, shown positions, appended answer tokens)
  and the scoring of answers and targets.
- ``groups``: token groups, planned per prompt.

To add a metric: compute its field per row in ``reductions.reduce_logits`` (and
``reduce_final``), add one ``Metric`` and one ``Section(..., reduced=True)`` to
:mod:`murano_widgets.metrics`, and declare the field on ``LogitLensResult``.
"""
