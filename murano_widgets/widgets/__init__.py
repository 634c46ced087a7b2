"""The widgets: thin anywidget classes (traits and their validation) on one base.

- ``base``: ``MuranoWidget`` (front-end assets, ``WidgetValueError``, ``save_html``/``to_html``
  through the one page of :mod:`murano_widgets.export`).
- ``lens``: the heatmap (``LogitLensWidget``); ``lens_checks`` its arguments' checks (pure
  functions the traits and the front door share); ``show``: ``show_logit_lens``, the one-call
  entry that makes the live session and the widget.
- ``diff``: two lenses' difference (``LensDiffWidget``, ``show_lens_diff``).
- ``dataset``: a data set's curves and prompts (``LensDatasetWidget``, ``DatasetChart``).

To add a view: a ``MuranoWidget`` subclass with its ``_esm``/``_css`` (``asset(...)``), its
traits, ``_standalone_state`` and ``_default_title``; its payload in :mod:`murano_widgets.payload`;
its front end a folder of ``js/src/`` on the shared parts, bundled by ``js/build.mjs``.
"""
