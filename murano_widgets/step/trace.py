"""The step's model work: the forward pass or nnsight trace, and the reduction inside it.

What the rows read (block outputs, the residual stream inside blocks, the decomposition's terms)
comes out of one pass over the model: a plain forward pass with hooks where that suffices, else
an nnsight trace (:func:`read_states`, run inside it). With ``remote=True`` the reductions run
inside the trace too (:func:`reduce_in_trace`), so that only reduced tensors travel back from
NDIF. The chunk loop that reduces saved outputs after the trace is
:mod:`murano_widgets.step.chunk_loop`.

Each function reads the step's checked options (:class:`~murano_widgets.step.config.StepConfig`)
and, where activation patching sets one, the step's ``intervention``. Everything here is sent to
NDIF by value with the rest of the package (the options record with it).
"""

from __future__ import annotations

import warnings
from typing import Any

import nnsight
import torch

from murano_widgets._memory import return_freed_memory
from murano_widgets.attribution.components import ComponentLayout
from murano_widgets.attribution.direct import decompose_rows, read_row
from murano_widgets.attribution.readout import Readout
from murano_widgets.backends.base import ModelBackend
from murano_widgets.lenses import Lens
from murano_widgets.step.config import StepConfig
from murano_widgets.step.inputs import InputPlan
from murano_widgets.step.reductions import reduce_lenses, stack_layers
from murano_widgets.types import RESID_MID, Node


def trace_kwargs(config: StepConfig) -> dict[str, Any]:
    """The keywords of the model's trace (or forward pass) for ``config``."""
    kwargs: dict[str, Any] = {"remote": True} if config.remote else {}
    accepted = config.model.forward_kwargs
    if "logits_to_keep" in accepted:
        # The lens projects the block outputs itself; the model's own lm_head over every
        # position would be one layer's worth of unembedding spent for nothing.
        kwargs["logits_to_keep"] = 1
    if "use_cache" in accepted:
        # A key/value cache is for generating; here it would only hold every layer's keys
        # and values until the trace ends (0.3 GB at 16 x 256 on GPT-2's shape).
        kwargs["use_cache"] = False
    return kwargs


def uses_plain_forward(config: StepConfig, intervention: Any, plain: bool = True) -> bool:
    """Whether block outputs alone, locally, come from a plain forward pass with hooks rather
    than an nnsight trace (``plain=False``, as the tests ask, always takes the trace). An
    intervention (activation patching) is nnsight code, so it always takes the trace."""
    return (
        plain
        and not config.remote
        and config.components is None
        and intervention is None
        and RESID_MID not in config.sites
        and callable(getattr(config.model, "block_outputs", None))
    )


def trace_states(
    config: StepConfig,
    inputs: dict[str, torch.Tensor],
    intervention: Any = None,
    trim: bool = True,
    plain: bool = True,
) -> dict[str, Any]:
    """One trace saving what the rows (and the decomposition) read, every tensor
    ``[n_inputs * seq, d_model]`` (padding included: rows follow the batch):
    ``{"post": {layer: x}, "mid": {layer: x}}`` and, with ``decompose``, the embedding,
    attention outputs and heads' inputs (see :meth:`ComponentLayout.read`).

    Block outputs alone, locally, need no trace: the model's own forward pass with hooks
    (:meth:`MuranoModel.block_outputs`) gives the same tensors (:func:`uses_plain_forward`).
    ``trim`` hands the forward pass's freed memory back to the operating system afterwards."""
    model = config.model
    saved: dict[str, Any] = {}
    if uses_plain_forward(config, intervention, plain):
        posts = sorted({*config.layers, config.last})
        with torch.inference_mode():
            saved["post"] = model.block_outputs(  # type: ignore[attr-defined]
                dict(inputs), posts, **trace_kwargs(config)
            )
        saved["mid"] = {}
    else:
        with torch.inference_mode(), model.trace(dict(inputs), **trace_kwargs(config)):
            read_states(config, saved, nnsight.save, intervention)
    states = flatten_states(saved)
    del saved
    if trim:
        return_freed_memory()
    return states


def read_states(
    config: StepConfig, states: dict[str, Any], take: Any, intervention: Any = None
) -> None:
    """Inside a trace: every state the rows and the decomposition need, in forward order,
    into ``states`` (``take`` keeps each: saves it, or selects the reduced rows); the
    intervention, if any, runs at every block before its output is read."""
    model = config.model
    last = config.last
    mids = {key.layer for key in config.rows if isinstance(key, Node)}
    if config.components is not None:
        config.components.read(model, last, mids, take, states)
        return
    posts = {*config.layers, last}
    states.update({"post": {}, "mid": {}})
    blocks = config.block_model
    for index in range(last + 1):
        if index in mids:
            # Rows inside a block are resid_mid rows: the step checked its model for them.
            assert blocks is not None
            states["mid"][index] = take(_path(blocks.block(index), config.mid_path).input)
        if intervention is not None:
            intervention(model, index)
        if index in posts:
            states["post"][index] = take(model.layer(index))


def decompose(
    config: StepConfig,
    states: dict[str, Any],
    shown: torch.Tensor,
    per_layer: list[dict[str, torch.Tensor]],
    plan: InputPlan,
    tokens: tuple[torch.Tensor | None, torch.Tensor | None],
    lens: Lens,
    layout: ComponentLayout | None = None,
    readout: Readout | None = None,
) -> dict[str, torch.Tensor]:
    """One lens's attribution fields over the shown cells (see :func:`decompose_rows`)."""
    layout = layout or config.components
    readout = readout or config.readout
    assert layout is not None and readout is not None
    top1 = torch.stack([fields["topk_tokens"][: plan.n_shown, 0] for fields in per_layer])
    answers, foil_ids = tokens
    device = shown.device
    targets = (
        torch.tensor([ids[0] for ids in plan.target_token_ids], device=device)
        if plan.target_token_ids is not None
        else None
    )
    return decompose_rows(
        layout,
        readout,
        lens,
        int(config.model.n_layers),
        states,
        config.rows,
        shown,
        top1.to(device),
        (plan.shown_mask.sum(dim=1).cumsum(0) - 1).to(device),
        torch.repeat_interleave(
            torch.arange(plan.shown_mask.shape[0]), plan.shown_mask.sum(dim=1)
        ).to(device),
        None if answers is None else answers.to(device),
        None if foil_ids is None else foil_ids.to(device),
        targets,
    )


def decompose_after_trace(
    config: StepConfig,
    states: dict[str, Any],
    plan: InputPlan,
    reduced: list[dict[str, torch.Tensor]],
    tokens: tuple[torch.Tensor | None, torch.Tensor | None],
) -> list[dict[str, torch.Tensor]]:
    """Every lens's attribution fields, from the saved states and the reduced top-1s."""
    shown = plan.reduce_rows[: plan.n_shown].to(states["post"][0].device)
    out = []
    with torch.inference_mode():
        for fields, lens in zip(reduced, config.lenses.values(), strict=True):
            per_layer = [{"topk_tokens": fields["topk_tokens"][i]} for i in range(len(config.rows))]
            out.append(to_cpu(decompose(config, states, shown, per_layer, plan, tokens, lens)))
    return out


#: What :func:`reduce_in_trace` returns: per lens its fields, the final predictions, per lens its
#: full probabilities (or ``None``), the KLs between lenses (or ``None``) and with ``decompose``
#: per lens its attribution fields (else ``None``).
InTrace = tuple[
    list[dict[str, torch.Tensor]],
    torch.Tensor,
    list[torch.Tensor | None],
    dict[tuple[int, int], torch.Tensor] | None,
    list[dict[str, torch.Tensor]] | None,
]


def reduce_in_trace(
    config: StepConfig,
    inputs: dict[str, torch.Tensor],
    plan: InputPlan,
    tokens: tuple[torch.Tensor | None, torch.Tensor | None],
    intervention: Any = None,
) -> InTrace:
    """Reduces inside the trace, so that only the reduced fields are saved (and travel)
    (:data:`InTrace` says what comes back). Where an ``intervention`` is given, what its
    ``reduce_in_trace(model)`` returns inside the trace is set as its ``reduced`` after it."""
    model = config.model
    last = config.last
    rows = plan.reduce_rows.to(model.device)
    tracked = None if plan.tracked is None else plan.tracked.to(model.device)
    lenses = list(config.lenses.values())
    if config.remote:
        # nnsight.ndif is nnsight 0.8's (the step checked the client for remote=True).
        from nnsight.ndif import register

        # NDIF does not have this package: send the reduction code along by value.
        register("murano_widgets")
    # Before the trace: nnsight 0.7 hands back to this frame only the values saved inside
    # it, so a plain ``decomposed = None`` in there would leave the name unbound here.
    decomposed = None
    intervened = None
    with torch.inference_mode(), model.trace(dict(inputs), **trace_kwargs(config)):
        # Block outputs must be read in the order the forward pass produces them, and the
        # final distribution comes from the last one: collect first, reduce after.
        states: dict[str, Any] = {}
        read_states(
            config, states, lambda proxy: proxy.flatten(0, 1).index_select(0, rows), intervention
        )
        hidden = row_states(states, config.rows)
        per_lens, final, between = reduce_lenses(
            lambda k, key: model.project_on_vocab(
                read_in_trace(lenses[k], model, key, hidden[key], last + 1)
            ),
            n_lenses=len(lenses),
            layers=config.rows,
            final_layer=last,
            top_k=config.top_k,
            keep_probs=config.store_full_probs,
            tracked=tracked,
            between=config.kl_between_lenses,
        )
        # A remote trace sends back only what is saved inside it, so the containers are
        # made here: one saved tensor per field and lens, the final predictions, the KLs.
        fields = nnsight.save([stack_layers(per_layer) for per_layer in per_lens])
        # reduce_lenses has a final distribution whenever it is given the final layer.
        assert final is not None
        predictions = nnsight.save(final.predictions)
        kl = nnsight.save({pair: torch.stack(values) for pair, values in (between or {}).items()})
        if config.components is not None and config.readout is not None:
            # decompose=True: the step checked its model for what reading blocks needs.
            blocks = config.block_model
            assert blocks is not None
            # The weights where the model runs (on NDIF: the server's), not copies sent
            # along with the trace.
            readout = config.readout.with_head(blocks.unembedding_weight())
            layout = config.components
            if layout.heads:
                layout = layout.with_out_weights(
                    [
                        layout.out_projection(blocks.block(layer)).weight
                        for layer in range(model.n_layers)
                    ]
                )
            shown = torch.arange(plan.n_shown, device=rows.device)
            decomposed = nnsight.save(
                [
                    decompose(config, states, shown, per_layer, plan, tokens, lens, layout, readout)
                    for per_layer, lens in zip(per_lens, lenses, strict=True)
                ]
            )
        if intervention is not None:
            intervened = nnsight.save(intervention.reduce_in_trace(model))
    if intervention is not None:
        intervention.reduced = intervened
    return _from_trace(config, plan, fields, predictions, kl, decomposed)


def _from_trace(
    config: StepConfig,
    plan: InputPlan,
    fields: list[dict[str, Any]],
    predictions: Any,
    kl: dict[tuple[int, int], Any],
    decomposed: list[dict[str, Any]] | None,
) -> InTrace:
    """What the trace saved, as CPU tensors (the full probabilities in the result's padded
    layout)."""
    mask = plan.shown_mask
    reduced, all_probs = [], []
    for lens_fields in fields:
        real = to_cpu({name: torch.as_tensor(value) for name, value in lens_fields.items()})
        probs = real.pop("probs", None)
        full = None
        if probs is not None:
            full = torch.full((len(config.rows), *mask.shape, probs.shape[-1]), float("nan"))
            full[:, mask] = probs[:, : plan.n_shown]
        reduced.append(real)
        all_probs.append(full)
    kl_cpu = (
        {pair: torch.as_tensor(v).cpu() for pair, v in kl.items()}
        if config.kl_between_lenses
        else None
    )
    decomposed_cpu = (
        None
        if decomposed is None
        else [to_cpu({k: torch.as_tensor(v) for k, v in each.items()}) for each in decomposed]
    )
    return reduced, torch.as_tensor(predictions).cpu(), all_probs, kl_cpu, decomposed_cpu


def read_in_trace(lens: Lens, model: Any, key: Any, hidden: Any, n_layers: int) -> Any:
    """Inside the trace, a lens's reading of a row's states for the final norm; a lens that
    runs the model to read a state (a Patchscope's ``read_in_trace``) runs it here."""
    reader = getattr(lens, "read_in_trace", None)
    if reader is not None:
        return reader(model, key, hidden, n_layers)
    return read_row(lens, key, hidden, n_layers)


def model_inputs(model: ModelBackend, plan: InputPlan) -> dict[str, torch.Tensor]:
    """The model's batch from the plan, with the position ids one-by-one runs would get.

    Raises:
        ValueError: Before any model work, if a prompt (with an appended answer) is longer
            than a model with a table of absolute positions can read. Beyond a rotary or ALiBi
            model's trained length it warns instead: the model runs, but its predictions there
            are untested.
    """
    # No token-type ids: they make GPT-2 add a token-type embedding to every position.
    inputs = {"input_ids": plan.input_ids, "attention_mask": plan.attention_mask}
    lengths = inputs["attention_mask"].sum(dim=1)
    longest_row = int(lengths.argmax())
    tokens = int(lengths[longest_row])
    longest = plan.row_prompt[longest_row]
    own = int(plan.display_mask[longest].sum())
    what = f"prompts[{longest}]" + (
        f" with its answer's {tokens - own} tokens appended" if tokens > own else ""
    )
    if model.context_length is not None and tokens > model.context_length:
        raise ValueError(
            f"{what} is {tokens} tokens long, more than the model's context of "
            f"{model.context_length} tokens (its table of absolute positions); shorten it"
        )
    if model.trained_length is not None and tokens > model.trained_length:
        warnings.warn(
            f"{what} is {tokens} tokens long, beyond the {model.trained_length} "
            "tokens the model was trained on; its predictions past that are unreliable",
            stacklevel=4,
        )
    if "position_ids" in model.forward_kwargs:
        # Left padding would otherwise shift every real token's position.
        inputs["position_ids"] = (inputs["attention_mask"].cumsum(dim=1) - 1).clamp_min(0)
    inputs = {key: value.to(model.device) for key, value in inputs.items()}
    return inputs


def to_cpu(fields: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: value.detach().cpu() for key, value in fields.items()}


def _path(envoy: Any, path: str | None) -> Any:
    assert path is not None
    for part in path.split("."):
        envoy = getattr(envoy, part)
    return envoy


def flatten_states(saved: dict[str, Any]) -> dict[str, Any]:
    """Saved trace values as ``[n_inputs * seq, width]`` tensors, in the same nesting."""

    def flat(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: flat(each) for key, each in value.items()}
        tensor = torch.as_tensor(value[0] if isinstance(value, tuple) else value)
        return tensor.reshape(-1, tensor.shape[-1])

    return flat(saved)


def row_states(states: dict[str, Any], rows: list[Any]) -> dict[Any, Any]:
    """The state each row reads, ``{row key: [positions, d]}``; the last block's output too
    (the final distribution comes from it)."""
    hidden: dict[Any, Any] = dict(states["post"])
    for key in rows:
        if isinstance(key, Node):
            hidden[key] = states["mid"][key.layer]
    return hidden
