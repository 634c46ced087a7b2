"""What the step writes, in one place: the result of a lens (:class:`LogitLensResult`), named
lenses side by side (:class:`LensResults`), how each field is laid out (:mod:`.schema`), and the
results joined and cut along the prompt axis (:mod:`.combine`).

- ``schema.py``: every field's axes, fill and role, declared once on the dataclass field
  (``field(metadata=...)``); validation, combining, selection and the repr derive from it.
- ``result.py``: :class:`LogitLensResult` and :class:`AnswerScores`.
- ``lenses.py``: :class:`LensResults` and the one place that tells one lens from several:
  :func:`lenses_of` (any result as name → result) and :func:`as_given` (back to the kind given).
- ``combine.py``: :func:`concat_results`, :func:`select_prompts`, :func:`padding_of`.

A new field: declare it on :class:`LogitLensResult` with its schema entry; nothing else lists it.
"""

from murano_widgets.results.combine import concat_results, padding_of, select_prompts
from murano_widgets.results.lenses import LensResults, as_given, lenses_of, one_lens
from murano_widgets.results.result import AnswerScores, LogitLensResult

__all__ = [
    "AnswerScores",
    "LensResults",
    "LogitLensResult",
    "as_given",
    "concat_results",
    "lenses_of",
    "one_lens",
    "padding_of",
    "select_prompts",
]
