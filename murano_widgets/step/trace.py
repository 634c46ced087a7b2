"""The step's model work: the forward pass or nnsight trace, and the reduction inside it.

What the rows read (block outputs, the residual stream inside blocks, the decomposition's terms)
comes out of one pass over the model: a plain forward pass with hooks where that suffices, else
an nnsight trace (:meth:`StepTrace._read_states`, run inside it). With ``remote=True`` the
reductions run inside the trace too (:meth:`StepTrace._reduce_in_trace`), so that only reduced
tensors travel back from NDIF. The chunk loop that reduces saved outputs after the trace is
:mod:`murano_widgets.step.chunk_loop`.

Everything here is sent to NDIF by value with the rest of the package; the methods are the
:class:`~murano_widgets.LogitLens` step's, reached through its bases.
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
from murano_widgets.backends.contract import BlockBackend
from murano_widgets.lenses import Lens
from murano_widgets.step.inputs import InputPlan
from murano_widgets.step.reductions import reduce_lenses, stack_layers
from murano_widgets.types import RESID_MID, Node


class StepTrace:
    """The step's forward pass or trace, the states it reads, the reduction inside it and the
    decomposition: a base of :class:`~murano_widgets.LogitLens`, whose option checks set the
    attributes declared here.

    A plain class, not a dataclass: a remote trace sends the step, bases included, by value,
    and NDIF's dry run rebuilds it.
    """

    model: ModelBackend
    layers: list[int]
    rows: list[int | Node]
    lenses: dict[str, Lens]
    top_k: int
    store_full_probs: bool
    max_chunk_bytes: int
    remote: bool
    kl_between_lenses: bool
    sites: tuple[str, ...]
    components: ComponentLayout | None
    readout: Readout | None
    block_model: BlockBackend | None
    _mid_path: str | None
    intervention: Any

    def _trace_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"remote": True} if self.remote else {}
        accepted = self.model.forward_kwargs
        if "logits_to_keep" in accepted:
            # The lens projects the block outputs itself; the model's own lm_head over every
            # position would be one layer's worth of unembedding spent for nothing.
            kwargs["logits_to_keep"] = 1
        if "use_cache" in accepted:
            # A key/value cache is for generating; here it would only hold every layer's keys
            # and values until the trace ends (0.3 GB at 16 x 256 on GPT-2's shape).
            kwargs["use_cache"] = False
        return kwargs

    def _trace_states(self, inputs: dict[str, torch.Tensor], trim: bool = True) -> dict[str, Any]:
        """One trace saving what the rows (and the decomposition) read, every tensor
        ``[n_inputs * seq, d_model]`` (padding included: rows follow the batch):
        ``{"post": {layer: x}, "mid": {layer: x}}`` and, with ``decompose``, the embedding,
        attention outputs and heads' inputs (see :meth:`ComponentLayout.read`).

        Block outputs alone, locally, need no trace: the model's own forward pass with hooks
        (:meth:`MuranoModel.block_outputs`) gives the same tensors. ``trim`` hands the forward
        pass's freed memory back to the operating system afterwards."""
        model = self.model
        saved: dict[str, Any] = {}
        if self._plain_forward():
            posts = sorted({*self.layers, model.n_layers - 1})
            with torch.inference_mode():
                saved["post"] = model.block_outputs(  # type: ignore[attr-defined]
                    dict(inputs), posts, **self._trace_kwargs()
                )
            saved["mid"] = {}
        else:
            with torch.inference_mode(), model.trace(dict(inputs), **self._trace_kwargs()):
                self._read_states(saved, nnsight.save)
        states = _flatten_states(saved)
        del saved
        if trim:
            return_freed_memory()
        return states

    # Whether block outputs alone, locally, come from a plain forward pass with hooks rather
    # than an nnsight trace (the tests turn it off to check that both give the same result).
    # An intervention (activation patching) is nnsight code, so it always takes the trace.
    _PLAIN_FORWARD = True

    def _plain_forward(self) -> bool:
        return (
            self._PLAIN_FORWARD
            and not self.remote
            and self.components is None
            and self.intervention is None
            and RESID_MID not in self.sites
            and callable(getattr(self.model, "block_outputs", None))
        )

    def _read_states(self, states: dict[str, Any], take: Any) -> None:
        """Inside a trace: every state the rows and the decomposition need, in forward order,
        into ``states`` (``take`` keeps each: saves it, or selects the reduced rows)."""
        model = self.model
        last = model.n_layers - 1
        mids = {key.layer for key in self.rows if isinstance(key, Node)}
        if self.components is not None:
            self.components.read(model, last, mids, take, states)
            return
        posts = {*self.layers, last}
        states.update({"post": {}, "mid": {}})
        blocks = self.block_model
        for index in range(last + 1):
            if index in mids:
                # Rows inside a block are resid_mid rows: the step checked its model for them.
                assert blocks is not None
                states["mid"][index] = take(_path(blocks.block(index), self._mid_path).input)
            if self.intervention is not None:
                self.intervention(model, index)
            if index in posts:
                states["post"][index] = take(model.layer(index))

    def _decompose(
        self,
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
        layout = layout or self.components
        readout = readout or self.readout
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
            int(self.model.n_layers),
            states,
            self.rows,
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

    def _decompose_after_trace(
        self,
        states: dict[str, Any],
        plan: InputPlan,
        reduced: list[dict[str, torch.Tensor]],
        tokens: tuple[torch.Tensor | None, torch.Tensor | None],
    ) -> list[dict[str, torch.Tensor]]:
        """Every lens's attribution fields, from the saved states and the reduced top-1s."""
        shown = plan.reduce_rows[: plan.n_shown].to(states["post"][0].device)
        out = []
        with torch.inference_mode():
            for fields, lens in zip(reduced, self.lenses.values(), strict=True):
                per_layer = [
                    {"topk_tokens": fields["topk_tokens"][i]} for i in range(len(self.rows))
                ]
                out.append(_to_cpu(self._decompose(states, shown, per_layer, plan, tokens, lens)))
        return out

    def _reduce_in_trace(
        self,
        inputs: dict[str, torch.Tensor],
        plan: InputPlan,
        tokens: tuple[torch.Tensor | None, torch.Tensor | None],
    ) -> tuple[
        list[dict[str, torch.Tensor]],
        torch.Tensor,
        list[torch.Tensor | None],
        dict[tuple[int, int], torch.Tensor] | None,
        list[dict[str, torch.Tensor]] | None,
    ]:
        """Reduces inside the trace, so that only the reduced fields are saved (and travel):
        per lens its fields, the final predictions, per lens its full probabilities (or
        ``None``), the KLs between lenses (or ``None``) and with ``decompose`` per lens its
        attribution fields (else ``None``)."""
        model = self.model
        last = model.n_layers - 1
        mask = plan.shown_mask
        rows = plan.reduce_rows.to(model.device)
        tracked = None if plan.tracked is None else plan.tracked.to(model.device)
        lenses = list(self.lenses.values())
        if self.remote:
            from nnsight.ndif import register

            # NDIF does not have this package: send the reduction code along by value.
            register("murano_widgets")
        # Before the trace: nnsight 0.7 hands back to this frame only the values saved inside
        # it, so a plain ``decomposed = None`` in there would leave the name unbound here.
        decomposed = None
        intervened = None
        with torch.inference_mode(), model.trace(dict(inputs), **self._trace_kwargs()):
            # Block outputs must be read in the order the forward pass produces them, and the
            # final distribution comes from the last one: collect first, reduce after.
            states: dict[str, Any] = {}
            self._read_states(states, lambda proxy: proxy.flatten(0, 1).index_select(0, rows))
            hidden = _row_states(states, self.rows)
            per_lens, final, between = reduce_lenses(
                lambda k, key: model.project_on_vocab(
                    _read_in_trace(lenses[k], model, key, hidden[key], last + 1)
                ),
                len(lenses),
                self.rows,
                last,
                self.top_k,
                self.store_full_probs,
                tracked=tracked,
                between=self.kl_between_lenses,
            )
            # A remote trace sends back only what is saved inside it, so the containers are
            # made here: one saved tensor per field and lens, the final predictions, the KLs.
            fields = nnsight.save([stack_layers(per_layer) for per_layer in per_lens])
            # reduce_lenses has a final distribution whenever it is given the final layer.
            assert final is not None
            predictions = nnsight.save(final.predictions)
            kl = nnsight.save(
                {pair: torch.stack(values) for pair, values in (between or {}).items()}
            )
            if self.components is not None and self.readout is not None:
                # decompose=True: the step checked its model for what reading blocks needs.
                blocks = self.block_model
                assert blocks is not None
                # The weights where the model runs (on NDIF: the server's), not copies sent
                # along with the trace.
                readout = self.readout.with_head(blocks.unembedding_weight())
                layout = self.components
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
                        self._decompose(
                            states, shown, per_layer, plan, tokens, lens, layout, readout
                        )
                        for per_layer, lens in zip(per_lens, lenses, strict=True)
                    ]
                )
            if self.intervention is not None:
                intervened = nnsight.save(self.intervention.reduce_in_trace(model))
        if self.intervention is not None:
            self.intervention.reduced = intervened
        reduced, all_probs = [], []
        for lens_fields in fields:
            real = _to_cpu({name: torch.as_tensor(value) for name, value in lens_fields.items()})
            probs = real.pop("probs", None)
            full = None
            if probs is not None:
                full = torch.full((len(self.rows), *mask.shape, probs.shape[-1]), float("nan"))
                full[:, mask] = probs[:, : plan.n_shown]
            reduced.append(real)
            all_probs.append(full)
        kl_cpu = (
            {pair: torch.as_tensor(v).cpu() for pair, v in kl.items()}
            if self.kl_between_lenses
            else None
        )
        decomposed_cpu = (
            None
            if decomposed is None
            else [_to_cpu({k: torch.as_tensor(v) for k, v in each.items()}) for each in decomposed]
        )
        return reduced, torch.as_tensor(predictions).cpu(), all_probs, kl_cpu, decomposed_cpu


def _read_in_trace(lens: Lens, model: Any, key: Any, hidden: Any, n_layers: int) -> Any:
    """Inside the trace, a lens's reading of a row's states for the final norm; a lens that
    runs the model to read a state (a Patchscope's ``read_in_trace``) runs it here."""
    reader = getattr(lens, "read_in_trace", None)
    if reader is not None:
        return reader(model, key, hidden, n_layers)
    return read_row(lens, key, hidden, n_layers)


def _model_inputs(model: ModelBackend, plan: InputPlan) -> dict[str, torch.Tensor]:
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


def _to_cpu(fields: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {key: value.detach().cpu() for key, value in fields.items()}


def _path(envoy: Any, path: str | None) -> Any:
    assert path is not None
    for part in path.split("."):
        envoy = getattr(envoy, part)
    return envoy


def _flatten_states(saved: dict[str, Any]) -> dict[str, Any]:
    """Saved trace values as ``[n_inputs * seq, width]`` tensors, in the same nesting."""

    def flat(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: flat(each) for key, each in value.items()}
        tensor = torch.as_tensor(value[0] if isinstance(value, tuple) else value)
        return tensor.reshape(-1, tensor.shape[-1])

    return flat(saved)


def _row_states(states: dict[str, Any], rows: list[Any]) -> dict[Any, Any]:
    """The state each row reads, ``{row key: [positions, d]}``; the last block's output too
    (the final distribution comes from it)."""
    hidden: dict[Any, Any] = dict(states["post"])
    for key in rows:
        if isinstance(key, Node):
            hidden[key] = states["mid"][key.layer]
    return hidden
