"""The nnsight backend: a model behind plain ``nnsight`` (no nnterp), for nnsight 0.7 and 0.8.

nnterp renames every architecture's modules to one set of names; this backend instead knows,
per architecture, where the decoder blocks, the final norm and the unembedding live in the
Hugging Face model (its :class:`~murano_widgets.backends.architectures.Layout`, in
:data:`~murano_widgets.backends.architectures.ARCHITECTURES`), and reaches them through
nnsight's envoys. It exists because nnterp 1.3 does not work with nnsight 0.8, and NDIF's
servers accept nnsight 0.8 clients only: ``MuranoModel(..., backend="nnsight")`` is the way to
``remote=True``.

Remote traces (``trace(..., remote=True)``) show NDIF's job status (received, queued,
running, completed) as a tqdm line instead of nnsight's own status printer, and a job that
fails reaches the caller as one :class:`NDIFError` whose message is the server's error, not
a traceback from inside nnsight.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from contextlib import nullcontext as _nothing
from typing import Any

import torch

from murano_widgets._checks import is_nnsight_model
from murano_widgets.backends.architectures import LAYOUTS, Layout, UnsupportedModelError
from murano_widgets.backends.base import MuranoModel
from murano_widgets.backends.loading import (
    check_source_argument,
    resolve_device,
    resolve_dtype,
    resolve_source,
    with_tokenizer,
)

__all__ = ["NDIF_NNSIGHT", "NDIFError", "NNsightModel", "check_ndif_client"]


class NDIFError(RuntimeError):
    """A remote trace failed: the server refused or failed the job, or could not be reached.

    Attributes:
        job_id: NDIF's id for the job, when it got one.
        details: The server's full error text (its traceback), for a bug report.
    """

    def __init__(self, message: str, job_id: str | None = None, details: str = "") -> None:
        super().__init__(message)
        self.job_id = job_id
        self.details = details


#: The nnsight clients NDIF's server accepts (ndif 0.1.2, the newest server on PyPI in 2026-12,
#: requires ``nnsight>=0.8.0rc1,<0.9``; nnsight 0.7's client is refused with a 403 or a 422).
NDIF_NNSIGHT = ">=0.8.0rc1,<0.9"


def check_ndif_client() -> None:
    """Raises :class:`NDIFError` unless the installed nnsight is a client NDIF's server accepts.

    Called wherever ``remote=True`` is given (the step, a backend's remote trace), before any
    work: nnsight 0.7 (what ``murano-widgets[nnterp-local]`` installs, for nnterp 1.3) would
    otherwise fail at the server with an HTTP error.

    Raises:
        NDIFError: Naming the installed nnsight, the versions the server accepts and the fix.
    """
    from importlib.metadata import PackageNotFoundError, version

    from packaging.specifiers import SpecifierSet

    try:
        installed = version("nnsight")
    except PackageNotFoundError:  # pragma: no cover - the package depends on nnsight
        installed = "(none)"
    if installed != "(none)" and SpecifierSet(NDIF_NNSIGHT).contains(installed, prereleases=True):
        return
    # Here, like the imports above: only a failed check needs them, on the client.
    from murano_widgets.backends.loading import NNTERP_EXTRA, nnterp_works

    why = (
        f" (nnterp needs it: {NNTERP_EXTRA} installs nnsight below 0.8 for nnterp 1.3)"
        if nnterp_works()
        else ""
    )
    raise NDIFError(
        f"remote=True needs an nnsight client that NDIF's server accepts, nnsight{NDIF_NNSIGHT} "
        f"(0.8.x); this environment has nnsight {installed}{why}. To run on NDIF, install "
        "nnsight 0.8 (pip install 'nnsight>=0.8,<0.9'; nnterp 1.3 then stops importing, and "
        "backend='auto' takes the nnsight backend), or run locally with remote=False."
    )


class NNsightModel(MuranoModel):
    """``MuranoModel(..., backend="nnsight")``: see :class:`murano_widgets.MuranoModel`.

    Args:
        model_id_or_path: A hub id, a local folder in Hugging Face format, or an nnsight
            ``LanguageModel`` / ``TransformersModel`` you built yourself (then ``device`` and
            ``dtype`` are its own and must not be given).
        device: Where the weights live (see :class:`MuranoModel`).
        dtype: The weights' dtype (see :class:`MuranoModel`).
        layout: Where the blocks, final norm and unembedding are, for an architecture not in
            :data:`LAYOUTS`: a :class:`Layout` or a dict of its fields.
        **kwargs: Passed on to nnsight's model class (e.g. ``dispatch=True`` to load the
            weights now rather than at the first local trace, ``trust_remote_code``).

    Raises:
        ValueError: For an architecture not in :data:`LAYOUTS` and no ``layout``, or a layout
            whose paths do not name modules of the model.
    """

    backend = "nnsight"

    def __init__(
        self,
        model_id_or_path: Any,
        *,
        device: str | torch.device | None = None,
        dtype: torch.dtype | str | None = None,
        backend: str = "nnsight",
        layout: Layout | dict[str, Any] | None = None,
        self_check: bool = True,
        **kwargs: Any,
    ) -> None:
        if is_nnsight_model(model_id_or_path):
            if device is not None or dtype is not None or kwargs:
                raise ValueError(
                    "model_id_or_path is an nnsight model, which is already loaded: give "
                    "device, dtype and loading options when you build it, not here "
                    f"(got device={device!r}, dtype={dtype!r}, options {sorted(kwargs)})"
                )
            self.lm = model_id_or_path
            name = str(
                getattr(model_id_or_path, "repo_id", None) or type(model_id_or_path).__name__
            )
            self.device = _device_of(model_id_or_path)
        else:
            check_source_argument(model_id_or_path)
            self.device = resolve_device(device)
            source = resolve_source(model_id_or_path)
            torch_dtype = resolve_dtype(dtype, self.device, source)
            if self.device.type != "cpu":
                # transformers loads on the CPU by itself; elsewhere it needs a device map,
                # and a device map needs accelerate (nnsight 0.7 brings it, 0.8 does not).
                _require_accelerate(self.device)
                kwargs.setdefault("device_map", str(self.device))
            self.lm = _load(source, dtype=torch_dtype, **kwargs)
            name = str(model_id_or_path)
        hf_model = self.lm._module
        self.layout = _resolve_layout(hf_model, layout)
        blocks = _get(hf_model, self.layout.blocks)
        self._setup(name, self.lm.tokenizer, hf_model, len(blocks), self_check)

    @property
    def config(self) -> Any:
        """The Hugging Face config of the model."""
        return self.lm._module.config

    # -- outside a trace: the plain modules ------------------------------------------------------

    @property
    def _final_norm(self) -> torch.nn.Module:
        # Looked up on every use: nnsight swaps its meta model for the real one when it
        # loads the weights (at the first local trace), so a module kept from before would
        # be the meta one.
        hf_model = self.lm._module
        modules = [
            module
            for path in ((self.layout.norm,) if self.layout.norm else ()) + self.layout.between
            if (module := _get(hf_model, path, optional=True)) is not None
        ]
        if not modules:
            return torch.nn.Identity()
        return modules[0] if len(modules) == 1 else torch.nn.Sequential(*modules)

    @property
    def _lm_head(self) -> torch.nn.Module:
        return _get(self.lm._module, self.layout.lm_head)

    @property
    def _hf_model(self) -> torch.nn.Module:
        # The real weights: nnsight keeps a meta model until the first local use.
        self._dispatch()
        return self.lm._module

    @property
    def _blocks(self) -> list[torch.nn.Module]:
        return list(_get(self._hf_model, self.layout.blocks))

    @property
    def _root(self) -> Any:
        return self.lm

    # -- inside a trace: envoys -----------------------------------------------------------------

    def trace(self, inputs: dict[str, torch.Tensor], **kwargs: Any) -> Any:
        """Opens one nnsight tracing context on ``inputs``.

        ``remote=True`` runs it on NDIF (nnsight 0.8 clients only; set the host and API key
        in ``nnsight.CONFIG``): the job's status shows as a progress line, and a failure is
        raised as :class:`NDIFError`.
        """
        remote = kwargs.get("remote")
        on_ndif = bool(remote) and remote != "local"
        if on_ndif:
            check_ndif_client()
            from nnsight.ndif import register

            # The trace refers to this object, whose class NDIF does not have: its code
            # travels by value (as source).
            register("murano_widgets")
            # Weights that stay on the server are checked there, by one small job.
            self._ensure_self_checked(remote=True)
        else:
            self._dispatch()
        tracer = self.lm.trace(inputs, **kwargs)
        if on_ndif:
            tracer.backend = _ReportedJob(tracer.backend)
        return tracer

    def _nnsight_model(self) -> Any:
        self._dispatch()
        return self.lm

    def _loaded(self) -> NNsightModel:
        """This model with its weights loaded and checked (see :meth:`_dispatch`)."""
        self._dispatch()
        return self

    def _dispatch(self) -> None:
        """Loads the weights before the first local trace (nnsight builds the model on the meta
        device until then, so a remote-only user never loads them), keeping the tokenizer's
        settings: nnsight 0.8 sets ``padding_side`` back to left when it loads."""
        if getattr(self.lm, "dispatched", True):
            self._ensure_self_checked(remote=False)
            return
        tokenizer = self.tokenizer
        kept = {name: getattr(tokenizer, name) for name in ("padding_side", "pad_token")}
        self.lm.dispatch()
        for name, value in kept.items():
            if getattr(tokenizer, name) != value:
                setattr(tokenizer, name, value)
        self._ensure_self_checked(remote=False)

    def layer(self, index: int) -> Any:
        """Inside a trace: decoder block ``index``'s output, a ``[batch, seq, d_model]`` tensor."""
        output = self._envoy(self.layout.blocks)[index].output
        # transformers 5 blocks return a tensor; older ones a tuple whose [0] is the hidden state.
        return output[0] if isinstance(output, tuple) else output

    def block(self, index: int) -> Any:
        """Inside a trace: decoder block ``index``'s envoy (its sublayers by their own names)."""
        return self._envoy(self.layout.blocks)[index]

    def unembedding_weight(self) -> Any:
        """Inside a trace: ``lm_head``'s weight where the model runs (on NDIF, the server's)."""
        return self._envoy(self.layout.lm_head).weight

    def project_on_vocab(self, hidden: Any) -> Any:
        """Inside a trace: final norm, unembedding and any final-logit soft-capping."""
        # nnsight may run this code in another thread than the forward pass, where an
        # enclosing torch.inference_mode() is not in force: an inference tensor then cannot
        # meet weights that require grad, and no gradient could flow through it anyway.
        with torch.no_grad() if _is_inference(hidden) else _nothing():
            for path in ((self.layout.norm,) if self.layout.norm else ()) + self.layout.between:
                envoy = self._envoy(path, optional=True)
                if envoy is not None:
                    hidden = envoy(hidden)
            return self.finalize_logits(self._envoy(self.layout.lm_head)(hidden))

    def _envoy(self, path: str, optional: bool = False) -> Any:
        envoy = self.lm
        for part in path.split("."):
            envoy = getattr(envoy, part, None)
            if envoy is None and optional:
                return None
        return envoy

    def __reduce__(self) -> tuple[Any, ...]:
        # A remote trace pickles the objects its code refers to, this one included. The
        # server needs the nnsight model (sent as a reference to its own) and the layout,
        # not the tokenizer. Rebuilt with object.__new__: nnsight sends this package's
        # functions as source, which loses the cell a zero-argument super() needs, so
        # MuranoModel.__new__ cannot run there.
        state = self.__dict__.copy()
        state["tokenizer"] = None
        return (object.__new__, (type(self),), state)


def _is_inference(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.is_inference()


# -- loading --------------------------------------------------------------------------------------


def _nnsight_model_class() -> Any:
    """nnsight's class for a Hugging Face causal LM: ``TransformersModel`` with the
    text-generation task on nnsight 0.8 (where ``LanguageModel`` is a deprecated alias of it),
    ``LanguageModel`` before."""
    import inspect

    from nnsight.modeling.transformers import TransformersModel

    if "task" in inspect.signature(TransformersModel.__init__).parameters:
        return lambda source, **kwargs: TransformersModel(source, task="text-generation", **kwargs)
    from nnsight import LanguageModel

    return LanguageModel


def _require_accelerate(device: torch.device) -> None:
    import importlib.util

    if importlib.util.find_spec("accelerate") is None:
        raise ImportError(
            f"loading a model onto {device} needs accelerate (for transformers' device_map): "
            "pip install accelerate"
        )


def _load(source: str, **kwargs: Any) -> Any:
    # The tokenizer explicitly: nnsight 0.8.1's meta load finds none by itself on
    # transformers >= 5.23 (see with_tokenizer). Remote users load through here too.
    return _nnsight_model_class()(source, **with_tokenizer(source, kwargs))


def _device_of(lm: Any) -> torch.device:
    """Where a user's nnsight model runs: its weights' device, or, while they are still on the
    meta device (nnsight loads them at the first local trace), where it will load them."""
    parameter = next(lm._module.parameters(), None)
    if parameter is not None and parameter.device.type != "meta":
        return parameter.device
    device_map = getattr(lm, "kwargs", {}).get("device_map")
    if isinstance(device_map, (str, torch.device)) and device_map != "auto":
        return torch.device(device_map)
    return torch.device("cpu")


def _resolve_layout(hf_model: torch.nn.Module, given: Layout | dict[str, Any] | None) -> Layout:
    config = getattr(hf_model, "config", None)
    model_type = getattr(config, "model_type", None)
    if given is None:
        if model_type not in LAYOUTS:
            raise UnsupportedModelError(
                f"backend='nnsight' does not know where {type(hf_model).__name__} "
                f"(model_type {model_type!r}) keeps its decoder blocks, final norm and "
                f"unembedding. Known model types: {', '.join(sorted(LAYOUTS))}. Use "
                "backend='nnterp' if nnterp supports it, or pass layout=dict(blocks=..., "
                "norm=..., lm_head=...) with dotted paths from the model, e.g. "
                "layout=dict(blocks='model.layers', norm='model.norm', lm_head='lm_head')."
            )
        layout = LAYOUTS[model_type]
    elif isinstance(given, Layout):
        layout = given
    elif isinstance(given, dict):
        try:
            layout = Layout(**given)
        except TypeError as error:
            raise ValueError(
                f"layout must have the keys blocks, norm, lm_head (and optionally between); "
                f"got {sorted(given)}"
            ) from error
    else:
        raise TypeError(f"layout must be a Layout or a dict, got {type(given).__name__}")
    layout = Layout(
        blocks=_pick(hf_model, layout.blocks),
        norm=None if layout.norm is None else _pick(hf_model, layout.norm),
        lm_head=_pick(hf_model, layout.lm_head),
        between=tuple(_pick(hf_model, path) for path in layout.between),
    )
    where = f"{type(hf_model).__name__} (model_type {model_type!r})"
    blocks = _get(hf_model, layout.blocks, optional=True)
    if not isinstance(blocks, torch.nn.ModuleList) or len(blocks) == 0:
        raise ValueError(f"{where} has no list of decoder blocks at {layout.blocks!r}")
    head = _get(hf_model, layout.lm_head, optional=True)
    if not isinstance(getattr(head, "weight", None), torch.Tensor):
        raise ValueError(f"{where} has no unembedding with a weight at {layout.lm_head!r}")
    # OPT's post-norm checkpoints (OPT-350m) have the attribute, set to None: no final norm.
    if layout.norm is not None and not _has_path(hf_model, layout.norm):
        raise ValueError(f"{where} has no final norm at {layout.norm!r}")
    return layout


def _pick(root: Any, paths: str) -> str:
    """The first of ``"a.b|c.d"``'s alternatives that ``root`` has (the last if none)."""
    choices = paths.split("|")
    return next((path for path in choices if _has_path(root, path)), choices[-1])


def _get(root: Any, path: str, optional: bool = False) -> Any:
    value = root
    for part in path.split("."):
        value = getattr(value, part, None)
        if value is None:
            if optional:
                return None
            raise ValueError(f"{type(root).__name__} has no module at {path!r}")
    return value


def _has_path(root: Any, path: str) -> bool:
    *parents, last = path.split(".")
    value = root
    for part in parents:
        value = getattr(value, part, None)
        if value is None:
            return False
    return hasattr(value, last)


# -- remote jobs: status and errors ---------------------------------------------------------------


class _ReportedJob:
    """Stands in for nnsight's remote backend on one tracer: the same job, with its status
    shown by :class:`_JobStatus` and its failures raised as :class:`NDIFError`."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __call__(self, tracer: Any) -> Any:
        status = _JobStatus(enabled=_remote_logging())
        # nnsight 0.8 calls its status printer `display`, 0.7 `status_display`; both call
        # update() with each status and update()/refresh() to animate.
        for name in ("display", "status_display"):
            if hasattr(self.inner, name):
                setattr(self.inner, name, status)
        host = str(getattr(self.inner, "host", None) or getattr(self.inner, "address", "NDIF"))
        try:
            return self.inner(tracer)
        except Exception as error:
            if not _is_remote_failure(error):
                raise
            job_id = getattr(self.inner, "job_id", None) or status.job_id
            raise NDIFError(
                _summary(error, host, job_id), job_id=job_id, details=str(error)
            ) from None
        finally:
            status.close()


#: Where remote jobs' statuses go instead of their own progress line, while set: a callable
#: taking the status (``"RECEIVED"``, ``"QUEUED"``, ``"RUNNING"``, ``"COMPLETED"``, ...) and the
#: job's id. A caller that shows its own progress over many jobs (``lens_dataset(...,
#: remote=True)``) sets it with :func:`job_statuses_to`, so that a thousand jobs are one bar,
#: not a thousand lines. Read through :func:`_job_listener` only.
_JOB_LISTENER: Any = None


def _job_listener() -> Any:
    """The listener, looked up by name when a status arrives. Not a global this module's code
    names: a remote trace pickles the package's code by value with the globals it names, and
    the listener (a progress bar, its file and locks) must not travel with it (measured: the
    server refused such a payload, "RecursionError: maximum recursion depth exceeded")."""
    module = sys.modules.get(__name__)
    return getattr(module, "_JOB_LISTENER", None)


@contextlib.contextmanager
def job_statuses_to(listener: Any) -> Iterator[None]:
    """Within the block, remote jobs report their statuses to ``listener(status, job_id)``
    rather than drawing a progress line each (their log messages still print)."""
    global _JOB_LISTENER
    before, _JOB_LISTENER = _JOB_LISTENER, listener
    try:
        yield
    finally:
        _JOB_LISTENER = before


def _remote_logging() -> bool:
    try:
        from nnsight import CONFIG

        return bool(CONFIG.APP.REMOTE_LOGGING)
    except (ImportError, AttributeError):
        return True


class _JobStatus:
    """NDIF's job status on one tqdm line: ``NDIF job <id>: queued``, then ``running``,
    ``completed``, with the elapsed time. Duck-types nnsight's status printers (0.7 and 0.8)."""

    verbose = False

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.job_id: str | None = None
        self.status: str | None = None
        self._bar: Any = None

    def update(self, *args: Any, **kwargs: Any) -> None:
        # nnsight 0.8: update(response); nnsight 0.7: update(job_id, status_name, description),
        # or update() to refresh.
        if args and hasattr(args[0], "status"):
            response = args[0]
            job_id = getattr(response, "id", None)
            status = getattr(response.status, "name", str(response.status))
            description = getattr(response, "description", "") or ""
        else:
            values = dict(zip(("job_id", "status_name", "description"), args, strict=False))
            values.update(kwargs)
            job_id = values.get("job_id") or None
            status = values.get("status_name") or ""
            description = values.get("description") or ""
            if not status:
                self.refresh()
                return
        self.job_id = job_id or self.job_id
        if status in ("LOG", "STREAM"):
            if status == "LOG" and description and self.enabled:
                self._ensure_bar().write(f"NDIF: {description}", file=sys.stderr)
            return
        self.status = status
        listener = _job_listener()
        if listener is not None:
            listener(status, self.job_id)
            return
        if not self.enabled:
            return
        bar = self._ensure_bar()
        job = f" {self.job_id}" if self.job_id else ""
        bar.set_description_str(f"NDIF job{job}: {status.lower()}", refresh=False)
        bar.refresh()

    def refresh(self) -> None:
        # Called between messages to animate: update(0) redraws the elapsed time at most
        # every mininterval, where refresh() would print a line each time to a non-terminal.
        if self._bar is not None:
            self._bar.update(0)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _ensure_bar(self) -> Any:
        if self._bar is None:
            # Here, not at the top: the package's code travels to NDIF by value with the
            # globals it names, and the bar is the client's alone.
            from murano_widgets._progress import progress_bar

            self._bar = progress_bar(
                total=None,
                desc="NDIF job",
                unit="update",
                bar_format="{desc} [{elapsed}]",
                file=sys.stderr,
                leave=True,
            )
        return self._bar


def _is_remote_failure(error: BaseException) -> bool:
    """Whether ``error`` is the server's or the network's, not a bug on this side."""
    names = {cls.__name__ for cls in type(error).__mro__}
    if names & {"RemoteError", "RemoteException"}:
        return True
    modules = {cls.__module__.split(".")[0] for cls in type(error).__mro__}
    return isinstance(error, (ConnectionError, TimeoutError)) or bool(
        modules & {"httpx", "httpcore", "websocket", "socketio", "engineio"}
    )


def _summary(error: BaseException, host: str, job_id: str | None) -> str:
    """One line saying what failed: the last line of the server's traceback, not all of it."""
    text = str(error).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reason = lines[-1] if lines else type(error).__name__
    if reason.startswith("Failed to send request"):
        where = f"NDIF at {host} refused the request"
        reason = reason.removeprefix("Failed to send request").lstrip(": ")
    elif job_id:
        where = f"NDIF job {job_id} on {host} failed"
    else:
        where = f"cannot run the trace on NDIF at {host}"
    if not lines:
        reason = f"{type(error).__name__}: {error!r}"
    hint = ""
    if isinstance(error, (ConnectionError, OSError)) and not job_id:
        hint = " (is nnsight.CONFIG.API.HOST right, and the server up?)"
    elif "api key" in text.lower() or "apikey" in text.lower():
        hint = " (set nnsight.CONFIG.API.APIKEY, or the NDIF_API_KEY environment variable)"
    return f"{where}: {reason}{hint}"
