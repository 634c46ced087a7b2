"""Backends: model access, the only place that knows architectures.

- ``architectures``: every architecture the package knows, one record per ``model_type``
  (where its parts are, what it does to its logits, where its attention and MLP meet). A new
  architecture is one entry there.
- ``base``: the :class:`ModelBackend` contract (everything the step may touch), ``MuranoModel``
  (the base of the backends and ``backend="auto"``'s fall back), the logit transform and the
  self-check against the model's own output.
- ``nnterp``: nnterp's ``StandardizedTransformer`` (one renaming layer over many architectures).
- ``nnsight``: plain nnsight (0.7 and 0.8, NDIF), reading each architecture's ``Layout``.

To add a backend: subclass ``MuranoModel`` in a module here, load the model, call ``_setup``,
implement ``trace``, ``layer``, ``project_on_vocab``, ``_root``, ``_final_norm`` and
``_lm_head``, raise ``UnsupportedModelError`` for architectures it cannot read, and add it to
``base._BACKENDS``.
"""
