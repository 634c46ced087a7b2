"""The kernel's side of a long payload's top-k by blocks (:mod:`murano_widgets.payload.long`):
the front end asks ``{"action": "topk_window", "start": s}`` for the block of positions it shows
a cell of; the reply is the block's top-k, sent with its buffers."""

from __future__ import annotations

import logging
from typing import Any

from murano_widgets.payload.long import topk_window

__all__ = ["answer_topk_window"]

_log = logging.getLogger(__name__)


def answer_topk_window(widget: Any, content: Any) -> bool:
    """Answers a ``topk_window`` request at once (a slice of the payload: no model work);
    False for any other message. A bad request is answered ``{"action": "topk_window",
    "error": ...}`` naming what was wrong, so the page stops waiting for it."""
    if not isinstance(content, dict) or content.get("action") != "topk_window":
        return False
    start = content.get("start")
    try:
        message, buffers = topk_window(widget._payload, start)
    except ValueError as error:
        _log.warning("%s", error)
        widget.send({"action": "topk_window", "start": start, "error": str(error)})
        return True
    widget.send(message, buffers)
    return True
