"""Payloads: what a widget's front end receives (JSON metadata and binary sections).

- ``lens``: the heatmap's payload (``LensPayload``: sections named as the result's fields, one
  string table, quantised probabilities and bits).
- ``attribution``: the heatmap's direct logit attribution sections and sublayer row addresses
  (``decompose=True``, ``sites=("resid_mid", ...)``), sent only when the result has them.
- ``diff``: the lens diff's payload.

The JS tests read payloads these modules wrote (``js/tests/golden``, by
``tests/golden_payloads.py``).
"""
