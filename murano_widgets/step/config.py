"""The step's options record: every option of :class:`~murano_widgets.LogitLens`, checked once,
before any model work, and what follows from them (the rows, the lenses by name, the
decomposition's layout).

:func:`configure` checks the options and returns a frozen :class:`StepConfig`; the step's
functions read it, in the order a run takes: :mod:`~murano_widgets.step.trace` (the forward pass
or trace), :mod:`~murano_widgets.step.chunk_loop` (the reduction after it),
:mod:`~murano_widgets.step.reductions` (the per-cell fields) and
:mod:`~murano_widgets.step.assemble` (one run laid out as its result). A remote trace sends the
record by value with the code that reads it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from murano_widgets._checks import check_bool, check_int, check_model
from murano_widgets.attribution.components import ComponentLayout, check_mid_rows
from murano_widgets.attribution.readout import Readout, readout_of
from murano_widgets.attribution.sublayers import sublayers_of
from murano_widgets.backends.base import ModelBackend
from murano_widgets.backends.contract import BlockBackend, block_backend
from murano_widgets.backends.nnsight import check_ndif_client
from murano_widgets.lenses import Lens, as_lens, named_lenses
from murano_widgets.step.groups import check_groups
from murano_widgets.types import RESID_MID, RESID_POST, SITES, Node, validate_targets

__all__ = ["DEFAULT_MAX_CHUNK_BYTES", "StepConfig", "check_sites", "configure", "resolve_layers"]

DEFAULT_MAX_CHUNK_BYTES = 256 * 2**20


# eq=False: compared and hashed by identity (it holds the model, dicts and lists).
@dataclass(frozen=True, eq=False)
class StepConfig:
    """The options of one :class:`~murano_widgets.LogitLens`, checked (see its Args), and what
    follows from them. Made by :func:`configure`; a changed copy by :meth:`replace`.

    Attributes:
        model: The model.
        layers: The requested block indices, sorted, non-negative.
        rows: The rows, in order: a block index for its output, ``Node(l, "resid_mid")`` before it.
        lenses: The lenses by name (one lens: its kind names it).
        named: Whether ``lens`` named its lenses (then results are :class:`LensResults`).
        store_full_probs, top_k, max_chunk_bytes, remote, reduce_in_trace, kl_between_lenses,
        targets, variants, positions, sites, decompose, heads, groups: The options, checked.
        mid_path: Where a ``resid_mid`` row is read inside a block (its MLP's input path), or
            ``None`` without such rows.
        components, readout: With ``decompose``: the components read in the trace and the
            lens's readout linearised; else ``None``.
        block_model: The model as a :class:`BlockBackend`, where the rows or the decomposition
            read inside its blocks (else ``None``): checked here, not in the trace.
    """

    model: ModelBackend
    layers: list[int]
    rows: list[int | Node]
    lenses: dict[str, Lens]
    named: bool
    store_full_probs: bool
    top_k: int
    max_chunk_bytes: int
    remote: bool
    reduce_in_trace: bool
    kl_between_lenses: bool
    targets: list[str] | None
    variants: bool
    positions: str
    sites: tuple[str, ...]
    decompose: bool
    heads: bool
    groups: dict[str, Any] | None
    mid_path: str | None
    components: ComponentLayout | None
    readout: Readout | None
    block_model: BlockBackend | None

    @property
    def lens(self) -> Lens | None:
        """The lens of a single-lens step (``None`` with named lenses)."""
        return None if self.named else next(iter(self.lenses.values()))

    @property
    def addresses(self) -> list[Node]:
        """One :class:`Node` per row."""
        return [key if isinstance(key, Node) else Node(key, RESID_POST) for key in self.rows]

    @property
    def last(self) -> int:
        """The model's last block (the final distribution is read from its output)."""
        return int(self.model.n_layers) - 1

    def replace(self, **changes: Any) -> StepConfig:
        """A copy with ``changes``, checked: only ``targets`` and ``groups`` change after a step
        is made (a live widget's tracked tokens and word groups, a data set's batch groups).

        Raises:
            TypeError: For another option.
            TypeError, ValueError: For bad targets or groups.
        """
        unknown = set(changes) - {"targets", "groups"}
        if unknown:
            raise TypeError(f"only targets and groups change in a made step, got {sorted(unknown)}")
        if "targets" in changes:
            targets = changes["targets"]
            changes["targets"] = None if not targets else validate_targets(targets)
        if "groups" in changes:
            changes["groups"] = check_groups(changes["groups"])
        return dataclasses.replace(self, **changes)


def configure(
    model: ModelBackend,
    layers: Sequence[int] | str = "all",
    store_full_probs: bool = False,
    *,
    top_k: int = 5,
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
    remote: bool = False,
    reduce_in_trace: bool | None = None,
    lens: Any = None,
    targets: Sequence[str] | None = None,
    variants: bool = False,
    positions: str = "all",
    kl_between_lenses: bool = False,
    sites: Sequence[str] = (RESID_POST,),
    decompose: bool = False,
    heads: bool = False,
    groups: Mapping[str, Any] | None = None,
) -> StepConfig:
    """The options of :class:`~murano_widgets.LogitLens` (its Args and Raises say each),
    checked against ``model`` before any model work, as a :class:`StepConfig`."""
    check_model(model)
    checked_layers = resolve_layers(layers, model.n_layers)
    store_full_probs = check_bool("store_full_probs", store_full_probs)
    top_k = check_int("top_k", top_k, 1, int(model.vocab_size), "the vocabulary size")
    max_chunk_bytes = check_int("max_chunk_bytes", max_chunk_bytes, 1, None, None)
    remote = check_bool("remote", remote)
    in_trace = remote if reduce_in_trace is None else check_bool("reduce_in_trace", reduce_in_trace)
    lenses, named = _check_lenses(lens, model, checked_layers)
    kl_between_lenses = check_bool("kl_between_lenses", kl_between_lenses)
    if kl_between_lenses and not named:
        raise ValueError(
            "kl_between_lenses=True measures KL between named lenses: give them as "
            "lens={'logit': None, 'tuned': tuned}"
        )
    checked_targets = None if targets is None else validate_targets(targets)
    variants = check_bool("variants", variants)
    if not isinstance(positions, str) or positions not in ("all", "last"):
        raise ValueError(f"positions must be 'all' or 'last', got {positions!r}")
    checked_sites = check_sites(sites)
    decompose = check_bool("decompose", decompose)
    heads = check_bool("heads", heads)
    checked_groups = check_groups(groups)
    if heads and not decompose:
        raise ValueError(
            "heads=True splits the attention terms of direct logit attribution: pass "
            "decompose=True as well"
        )
    mid = RESID_MID in checked_sites
    if mid:
        check_mid_rows(model)
    rows: list[int | Node] = [
        key
        for layer in checked_layers
        for key in ((Node(layer, RESID_MID),) if mid else ())
        + ((layer,) if RESID_POST in checked_sites else ())
    ]
    # A resid_mid row of block l reads the lens's translator of block l - 1.
    mid_sources = sorted({key.layer - 1 for key in rows if isinstance(key, Node)} - {-1})
    if mid_sources:
        for each in lenses.values():
            each.check_layers(mid_sources, model.n_layers)
    mid_path = sublayers_of(getattr(model, "config", None), _MID_OPTION).mid if mid else None
    components = ComponentLayout(model, heads) if decompose else None
    readout = readout_of(model) if decompose else None
    block_model = None
    if decompose or mid:
        block_model = block_backend(model, "decompose=True" if decompose else _MID_OPTION)
    config = StepConfig(
        model=model,
        layers=checked_layers,
        rows=rows,
        lenses=lenses,
        named=named,
        store_full_probs=store_full_probs,
        top_k=top_k,
        max_chunk_bytes=max_chunk_bytes,
        remote=remote,
        reduce_in_trace=in_trace,
        kl_between_lenses=kl_between_lenses,
        targets=checked_targets,
        variants=variants,
        positions=positions,
        sites=checked_sites,
        decompose=decompose,
        heads=heads,
        groups=checked_groups,
        mid_path=mid_path,
        components=components,
        readout=readout,
        block_model=block_model,
    )
    # Last, with every option set: a lens that cannot run with them says so now.
    for each in lenses.values():
        each.check_step(config)
    if remote:
        # Last, after the arguments: an nnsight that NDIF's server refuses (0.7, which
        # nnterp 1.3 needs) is one clear error now, not an HTTP error from the server.
        check_ndif_client()
    return config


_MID_OPTION = "sites=('resid_mid', ...)"


def _check_lenses(
    lens: Any, model: ModelBackend, layers: list[int]
) -> tuple[dict[str, Lens], bool]:
    """The lenses by name (one lens: its kind names it) and whether ``lens`` named them; a
    lens fitted for some layers only (a Jacobian lens's source layers) says so now."""
    named = named_lenses(lens, model)
    if named is None:
        single = as_lens(lens, model)
        named_or_single, is_named = {single.kind: single}, False
    else:
        named_or_single, is_named = named, True
    for each in named_or_single.values():
        each.check_layers(layers, model.n_layers)
    return named_or_single, is_named


def resolve_layers(layers: Sequence[int] | str, n_layers: int) -> list[int]:
    """Validates ``layers`` against a model of ``n_layers`` and returns them sorted, non-negative.

    Raises:
        ValueError: For a string other than ``"all"``, an empty list, an index out of range or
            a duplicate (after resolving negative indices).
        TypeError: For anything that is not a string or a list of ints.
    """
    if isinstance(layers, str):
        if layers != "all":
            raise ValueError(f"layers must be 'all' or a list of ints, got the string {layers!r}")
        return list(range(n_layers))
    if isinstance(layers, np.ndarray) and layers.ndim == 0:
        layers = layers.item()
    if isinstance(layers, (bool, int, np.integer, np.bool_)) or not isinstance(layers, Iterable):
        hint = (
            f"; for one layer write layers=[{layers}]"
            if isinstance(layers, (int, np.integer)) and not isinstance(layers, bool)
            else ""
        )
        raise TypeError(
            f"layers must be 'all' or a list of ints, got {type(layers).__name__} {layers!r}{hint}"
        )
    if isinstance(layers, (set, frozenset, Mapping)):
        raise TypeError(
            f"layers must be 'all' or a list of ints, got a {type(layers).__name__}; "
            "give a list, e.g. layers=[0, 3, -1]"
        )
    layers = list(layers)
    if not layers:
        raise ValueError("layers is an empty list: give at least one layer index, or 'all'")
    resolved: dict[int, Any] = {}
    for given in layers:
        if isinstance(given, (bool, np.bool_)) or not isinstance(given, (int, np.integer)):
            raise TypeError(
                f"layers must hold ints, got {type(given).__name__} {given!r} in {layers!r}"
            )
        if not -n_layers <= given < n_layers:
            raise ValueError(
                f"layers holds {given}, out of range for a model with {n_layers} layers "
                f"(allowed: {-n_layers} to {n_layers - 1})"
            )
        index = int(given) % n_layers
        if index in resolved:
            raise ValueError(
                f"layers holds layer {index} twice ({resolved[index]!r} and {given!r} in {layers!r})"
            )
        resolved[index] = given
    return sorted(resolved)


def check_sites(sites: Any) -> tuple[str, ...]:
    """``sites`` as a tuple of known sites, each once, in model order.

    Raises:
        TypeError: For a string or anything that is not a list of strings.
        ValueError: For an empty list, an unknown site or a duplicate.
    """
    allowed = ", ".join(repr(site) for site in SITES)
    if isinstance(sites, str) or not isinstance(sites, (list, tuple)):
        raise TypeError(
            f"sites must be a tuple of sites ({allowed}), e.g. sites=('resid_mid', "
            f"'resid_post'); got {type(sites).__name__} {sites!r:.60}"
        )
    if not sites:
        raise ValueError(f"sites is empty: give at least one of {allowed}")
    for site in sites:
        if site not in SITES:
            raise ValueError(f"sites holds {site!r}; allowed: {allowed}")
    if len(set(sites)) != len(sites):
        raise ValueError(f"sites holds a site twice: {tuple(sites)!r}")
    return tuple(site for site in SITES if site in sites)
