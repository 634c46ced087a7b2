"""The live lens: a widget that asks the kernel for more (a prompt typed in, a token tracked, a
cell patched) and shows the answer in place.

``session.py`` holds what a live widget runs with (``LiveSession``: the model, rows, lenses and
run options, checked once) and runs the step for one change, joining and cutting results along
the prompt axis with :mod:`murano_widgets.results.combine` (as one step call on those prompts
would lay them out); ``patching.py`` turns the widget's patch request into a ``patch_lens`` call
and its traits;
``worker.py`` runs front-end requests on one thread with the supersede rule, and holds the one
lock per model (``model_lock``) that the session and a patch take; ``controller.py``
is the widget's side of it: the actions, their replies and ``live_status``.
"""

from murano_widgets.live.session import LiveSession
from murano_widgets.live.worker import model_lock

# Their home is murano_widgets.results (documented there); importable from here, as they were.
from murano_widgets.results.combine import concat_results as concat_results
from murano_widgets.results.combine import padding_of as padding_of
from murano_widgets.results.combine import select_prompts as select_prompts

__all__ = ["LiveSession", "model_lock"]
