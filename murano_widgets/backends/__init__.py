"""Backends: model access, the only place that knows architectures.

- ``architectures``: every architecture the package knows, one record per ``model_type``
  (where its parts are, what it does to its logits, where its attention and MLP meet), and
  the logit transform read from it. A new architecture is one entry there.
- ``base``: the :class:`ModelBackend` contract (everything the step may touch) and
  ``MuranoModel`` (the base of the backends).
- ``loading``: from a hub id or a folder, the device and dtype, ``backend="auto"``'s fall back
  and ``_BACKENDS``.
- ``self_check``: the lens of the last layer against the model's own output.
- ``nnterp``: nnterp's ``StandardizedTransformer`` (one renaming layer over many architectures).
- ``nnsight``: plain nnsight (0.7 and 0.8, NDIF), reading each architecture's ``Layout``.

To add a backend: subclass ``MuranoModel`` in a module here, load the model, call ``_setup``,
implement ``trace``, ``layer``, ``project_on_vocab``, ``_root``, ``_final_norm`` and
``_lm_head``, raise ``UnsupportedModelError`` for architectures it cannot read, and add it to
``loading._BACKENDS``.
"""
