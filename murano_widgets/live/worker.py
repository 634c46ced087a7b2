"""One worker thread per live widget: front-end requests run there, in order, one at a time.

The kernel's own thread hands a request over and returns at once, so it stays free to answer
``hello``, to take slider moves and further requests while the model runs. The rules
(the README's "Live" section):

- **Supersede.** A request supersedes every earlier request of the same action still queued or
  running: a queued one is dropped, a running one finishes its model work but its result is
  never applied. Each gets its ``superseded`` reply at once. A request whose result is being
  applied can no longer be superseded (the newer one simply runs after it).
- **Order.** Requests of different actions run in the order they came.
- **One at a time.** A request computes and applies while holding :attr:`Worker.run_lock`;
  the widget's synchronous Python calls take the same lock (after the queue has drained), so
  a Python call and a front-end request never run at once.

What a request does is the caller's (:class:`Request`'s ``run``: model work first, returning
the function that applies its result); what it replies and shows is the ``report`` callback's.

Across widgets, the model itself runs under one lock per model object (:func:`model_lock`).
"""

from __future__ import annotations

import logging
import re
import threading
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Request", "Worker", "model_lock"]

# The lock per model lives here, with the thread that runs a widget's requests, so that the
# session and the patch request (live/patching.py) both take it without importing each other.
_LOCKS: weakref.WeakKeyDictionary[Any, threading.RLock] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def model_lock(model: Any) -> threading.RLock:
    """The lock held while ``model`` runs for a live widget (one per model object).

    A trace installs hooks on the model's modules; two traces at once on one model, from two
    threads, would see each other's hooks.
    """
    with _LOCKS_GUARD:
        try:
            lock = _LOCKS.get(model)
            if lock is None:
                lock = _LOCKS[model] = threading.RLock()
            return lock
        except TypeError:  # not weakly referenceable: one lock for all such models
            return _FALLBACK_LOCK


_FALLBACK_LOCK = threading.RLock()

_log = logging.getLogger("murano_widgets.live")


@dataclass(eq=False)
class Request:
    """One front-end request.

    Attributes:
        id: The front end's id (increasing within one view).
        action: Its action; a newer request of the same action supersedes it.
        run: Does the work (model work included) and returns the function that applies the
            result (trait changes), which returns a one-line description for the reply.
        describe: A short description for ``live_status`` while it runs.
        superseded: Set when a newer request of the same action came first.
        applying: Set when its result is being applied (it can no longer be superseded).
    """

    id: int
    action: str
    run: Callable[[], Callable[[], str]]
    describe: str = ""
    superseded: bool = field(default=False)
    applying: bool = field(default=False)


class Worker:
    """The queue and the thread of one widget's requests.

    Args:
        report: ``report(request, outcome, message)`` with ``outcome`` one of ``"running"``,
            ``"done"``, ``"error"`` (``message``: the exception's one line), ``"superseded"``
            and ``"idle"`` (the queue ran empty; ``request`` is the last one). Called from the
            worker thread (and, for ``"superseded"``, from the submitting thread).
        name: The thread's name.
    """

    def __init__(self, report: Callable[[Request, str, str], None], name: str = "murano-live"):
        self._report = report
        self._name = name
        self._queue: deque[Request] = deque()
        self._current: Request | None = None
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        #: Held while a request (or a synchronous Python call) computes and applies.
        self.run_lock = threading.RLock()

    @property
    def thread(self) -> threading.Thread | None:
        """The worker thread, once a request started it."""
        return self._thread

    def submit(self, request: Request) -> None:
        """Queues ``request``, superseding the queued and running ones of its action."""
        dropped = []
        with self._cond:
            if self._closed:
                raise RuntimeError("the widget was closed: it takes no more requests")
            for queued in list(self._queue):
                if queued.action == request.action:
                    self._queue.remove(queued)
                    queued.superseded = True
                    dropped.append(queued)
            current = self._current
            if (
                current is not None
                and current.action == request.action
                and not current.applying
                and not current.superseded
            ):
                current.superseded = True
                dropped.append(current)
            self._queue.append(request)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()
        for old in dropped:
            self._report(old, "superseded", f"superseded by request {request.id}")

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Waits until no request is queued or running (not from the worker thread itself).

        Returns:
            Whether it became idle within ``timeout`` seconds.
        """
        if threading.current_thread() is self._thread:
            return True
        with self._cond:
            return self._cond.wait_for(
                lambda: not self._queue and self._current is None, timeout=timeout
            )

    def close(self) -> None:
        """Takes no more requests; the queued ones are dropped, a running one finishes."""
        with self._cond:
            self._closed = True
            self._queue.clear()
            self._cond.notify_all()

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._closed)
                if not self._queue:
                    return
                request = self._current = self._queue.popleft()
            try:
                self._run(request)
            finally:
                with self._cond:
                    self._current = None
                    idle = not self._queue
                    self._cond.notify_all()
                if idle:
                    self._report(request, "idle", "")

    def _run(self, request: Request) -> None:
        try:
            with self.run_lock:
                # Said once the lock is held: a Python call may hold it still.
                self._report(request, "running", request.describe)
                apply = request.run()
                with self._cond:
                    dropped = request.superseded
                    request.applying = not dropped
                if dropped:
                    return  # its superseded reply went out when the newer request came
                message = apply()
        except Exception as error:  # every failure is a reply and a status, never a hang
            if request.superseded:
                _log.debug("superseded request %s failed", request.id, exc_info=True)
                return
            _log.error(
                "live widget: request %s (%s) failed", request.id, request.action, exc_info=True
            )
            self._report(request, "error", one_line(error))
            return
        self._report(request, "done", message)


def one_line(error: BaseException) -> str:
    """The status line's sentence for a failed request: the error's message on one line (its
    further lines joined by a space; the spaces within a line, such as a quoted prompt's, kept),
    starting with a capital when it starts with a plain word and ending with a full stop.

    The exception's class is left out (``"ValueError: text must be ..."`` read as a crash,
    not as the widget's answer); the log keeps it, with the traceback. An error with no message
    says which class it was: ``"The request failed (KeyError)."``.
    """
    text = re.sub(r"\s*[\r\n]+\s*", " ", str(error.args[0] if isinstance(error, KeyError) and
                  len(error.args) == 1 else error).strip())  # fmt: skip
    if not text:
        return f"The request failed ({type(error).__name__})."
    if re.match(r"[a-z]+\b(?![._(\[])", text):  # a plain word, not a name such as w.patch
        text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?…" else text + "."


def status(state: str, request: int, action: str, message: str = "") -> dict[str, Any]:
    """The ``live_status`` trait's value."""
    return {"state": state, "request": int(request), "action": action, "message": message}
