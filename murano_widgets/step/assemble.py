"""One run of the step, end to end (:func:`run_step`), and the result it assembles.

The input plan, the forward pass and one of the two reduction paths (inside the trace:
:mod:`murano_widgets.step.trace`; after it, in chunks: :mod:`murano_widgets.step.chunk_loop`),
then the reduced rows scattered back into the result's padded ``[n_layers, n_inputs, seq]``
grid, token ids decoded, answers and targets scored: one :class:`LogitLensResult` per lens.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from murano_widgets._memory import preflight
from murano_widgets.lenses import FINAL
from murano_widgets.metrics import REDUCED_FIELDS, SECTIONS, missing_value
from murano_widgets.results import LensResults, LogitLensResult, as_given
from murano_widgets.step.chunk_loop import memory_needs, reduce_after_trace, reduction_bytes
from murano_widgets.step.config import StepConfig
from murano_widgets.step.groups import GroupPlan, PromptRows, plan_groups
from murano_widgets.step.inputs import InputPlan, encoder_for, plan_inputs, score
from murano_widgets.step.reductions import Tracked
from murano_widgets.step.token_strings import decode_unique, subset, words
from murano_widgets.step.trace import (
    decompose_after_trace,
    model_inputs,
    reduce_in_trace,
    row_states,
    trace_states,
)
from murano_widgets.types import AnswerSets, validate_answers, validate_foils

# When the reduction allocates less than this, the forward pass's freed memory is not handed
# back to the operating system. Handing it back costs more than the call (malloc_trim, 4 ms on
# the demo bench's 64 prompts): the next call faults the same pages in again, and the step
# ran 6-9 % faster there without it (bench/demo_model.py, 70 MB of chunk buffers), for 28 MB
# more peak (527 -> 555 MB). From here on the chunks grow towards their 256 MiB, and keeping
# the forward pass's memory would add to their peak (0.5 GB at 16 x 256 on GPT-2's shape).
_TRIM_ABOVE = 128 * 2**20


def run_step(
    config: StepConfig,
    prompts: list[str],
    answers: Any = None,
    prompt_ids: list[list[int]] | None = None,
    foils: list[str | None] | None = None,
    *,
    intervention: Any = None,
    plain: bool = True,
) -> tuple[LogitLensResult | LensResults, dict[int, torch.Tensor] | None]:
    """One run of the step on ``prompts`` (already validated): its result, and the block
    outputs the after-trace path saved (``None`` where it reduced inside the trace).

    In order: the input plan (:mod:`~murano_widgets.step.inputs`), checked against the memory
    before any model work; one reduction path, inside the trace
    (:func:`~murano_widgets.step.trace.reduce_in_trace`) or after it, chunk by chunk
    (:func:`~murano_widgets.step.chunk_loop.reduce_after_trace`); the reduced rows laid out as
    the result (:func:`lay_out`).

    Args:
        config: The step's options.
        prompts, answers, prompt_ids, foils: As for :meth:`LogitLens.run`.
        intervention: The step's intervention inside the trace, or ``None``
            (:attr:`LogitLens.intervention`).
        plain: Whether block outputs alone may come from a plain forward pass
            (:func:`~murano_widgets.step.trace.uses_plain_forward`).
    """
    answer_sets: AnswerSets | None = (
        None if answers is None else validate_answers(answers, len(prompts))
    )
    if prompt_ids is not None:
        prompt_ids = check_prompt_ids(prompt_ids, len(prompts), int(config.model.vocab_size))
    plan = plan_inputs(
        config.model.tokenizer,
        prompts,
        answer_sets,
        config.targets,
        config.variants,
        prompt_ids,
        last_only=config.positions == "last",
    )
    # Before any model work: a request too large for the free memory (or the budget).
    preflight(f"LogitLens on {len(prompts)} prompts", memory_needs(config, plan))
    inputs = model_inputs(config.model, plan)
    if foils is not None:
        if answer_sets is None:
            raise ValueError("foils are alternatives to the answers: give answers as well")
        foils = validate_foils(foils, len(prompts))
    # Answer and foil tokens now: a foil that adds no token fails before the model runs.
    tokens = (
        answer_tokens(plan, config.model.tokenizer, prompts, prompt_ids, foils)
        if config.decompose or foils is not None
        else (None, None)
    )
    groups = track_groups_and_pairs(config, plan, len(prompts), tokens)
    if not config.decompose:
        tokens = (None, None)
    hidden: dict[Any, torch.Tensor] | None = None
    decomposed: list[dict[str, torch.Tensor]] | None = None
    if config.reduce_in_trace:
        reduced, final, all_probs, between, decomposed = reduce_in_trace(
            config, inputs, plan, tokens, intervention
        )
    else:
        trim = reduction_bytes(config, plan) >= _TRIM_ABOVE
        states = trace_states(config, inputs, intervention, trim=trim, plain=plain)
        hidden = row_states(states, config.rows)
        reduced, final, all_probs, between = reduce_after_trace(config, hidden, plan)
        if config.decompose:
            decomposed = decompose_after_trace(config, states, plan, reduced, tokens)
        del states
    reductions = Reduced(reduced, final[: plan.n_shown], all_probs, between, decomposed)
    return lay_out(config, plan, prompts, reductions, groups, foils), hidden


@dataclass
class Reduced:
    """What either reduction path gives, per lens where it says so.

    Attributes:
        fields: Per lens, its reduced fields ``{name: [n_layers, R, ...]}``.
        final: The model's own predictions at the shown positions ``[n_shown]``.
        all_probs: Per lens, its full probabilities in the result's layout, or ``None``.
        between: With ``kl_between_lenses``: ``{(a, b): [n_layers, R]}`` (lens indices, the
            final distribution last); else ``None``.
        decomposed: With ``decompose``: per lens, its attribution fields; else ``None``.
    """

    fields: list[dict[str, torch.Tensor]]
    final: torch.Tensor
    all_probs: list[torch.Tensor | None]
    between: dict[tuple[int, int], torch.Tensor] | None
    decomposed: list[dict[str, torch.Tensor]] | None


def lay_out(
    config: StepConfig,
    plan: InputPlan,
    prompts: list[str],
    reduced: Reduced,
    groups: GroupPlan | None,
    foils: list[str | None] | None,
) -> LogitLensResult | LensResults:
    """The reduced rows scattered back into the result's padded ``[n_layers, n_inputs, seq]``
    grid, token ids decoded once, answers and targets scored: one :class:`LogitLensResult` per
    lens (a :class:`LensResults` where the lenses were named)."""
    mask = plan.display_mask.bool()
    shown = plan.shown_mask
    n_layers, (n_inputs, seq) = len(config.rows), mask.shape
    # Scatter the shown positions back into padded [n_layers, n_inputs, seq] tensors (by
    # their flat index, found once: a boolean mask would be searched again for each field).
    at = torch.nonzero(shown.reshape(-1)).squeeze(1)

    def padded(values: torch.Tensor, fill: float | int) -> torch.Tensor:
        rest = values.shape[2:]
        out = torch.full((n_layers, n_inputs * seq, *rest), fill, dtype=values.dtype)
        out.index_copy_(1, at, values[:, : plan.n_shown])
        return out.view(n_layers, n_inputs, seq, *rest)

    final_tokens = torch.full((n_inputs * seq,), -1, dtype=torch.long)
    final_tokens = final_tokens.index_copy_(0, at, reduced.final).view(n_inputs, seq)
    input_ids = plan.display_ids
    topk = [padded(fields["topk_tokens"], -1) for fields in reduced.fields]
    # Each distinct token id is decoded once, whatever the number of lenses.
    decoded = decode_unique(config.model.tokenizer, [*topk, final_tokens, input_ids[mask]])
    results: dict[str, LogitLensResult] = {}
    for k, ((name, lens), fields, topk_tokens, probs) in enumerate(
        zip(config.lenses.items(), reduced.fields, topk, reduced.all_probs, strict=True)
    ):
        real = {key: values[:, : plan.n_shown] for key, values in fields.items()}
        tracked_fields, answer_sets_scored = score(plan, fields, padded)
        token_strings = (
            decoded
            if len(config.lenses) == 1
            else subset(decoded, [topk_tokens, final_tokens, input_ids[mask]])
        )
        topk_probs = padded(real["topk_probs"], float("nan"))
        predicted_tokens = topk_tokens[..., 0]
        max_probs = topk_probs[..., 0]
        # The model's own output is the same under every lens: said once, with the first.
        _warn_non_finite(
            max_probs,
            final_tokens if not results else None,
            shown,
            [key if isinstance(key, int) else str(key) for key in config.rows],
            name if config.named else None,
        )
        input_words_ids = input_ids.masked_fill(~mask, -1)
        # Keyed by field name at run time, so typed as keyword arguments of any field.
        reduced_fields: dict[str, Any] = {
            key: padded(real[key], missing_value(SECTIONS[key]))
            for key in REDUCED_FIELDS
            if key in real  # logit_diff: with foils only
        }
        decomposed_fields: dict[str, Any] = (
            {}
            if reduced.decomposed is None
            else _decomposed_fields(reduced.decomposed[k], padded, config, foils)
        )
        results[name] = LogitLensResult(
            all_probs=probs,
            max_probs=max_probs,
            predicted_tokens=predicted_tokens,
            predicted_words=words(predicted_tokens, token_strings),
            input_words=words(input_words_ids, token_strings),
            attention_mask=plan.display_mask.long(),
            addresses=config.addresses,
            topk_tokens=topk_tokens,
            topk_probs=topk_probs,
            **reduced_fields,
            final_tokens=final_tokens,
            input_ids=input_ids,
            prompts=list(prompts),
            token_strings=token_strings,
            vocab_size=int(config.model.vocab_size),
            model_name=getattr(config.model, "name", None),
            n_model_layers=int(config.model.n_layers),
            lens_kind=lens.kind,
            lens_provenance=lens.provenance,
            lens_title=lens.title,
            answer_sets=answer_sets_scored,
            **_group_fields(real, groups, padded),
            **decomposed_fields,
            **tracked_fields,
        )
    kl_between = None
    if reduced.between is not None:
        names = [*config.lenses, FINAL]
        kl_between = {
            (names[a], names[b]): padded(values, float("nan"))
            for (a, b), values in reduced.between.items()
        }
    return as_given(LensResults(results, kl_between, named=config.named))


def track_groups_and_pairs(
    config: StepConfig,
    plan: InputPlan,
    n_prompts: int,
    tokens: tuple[torch.Tensor | None, torch.Tensor | None],
) -> GroupPlan | None:
    """Adds the step's token groups, and each prompt's answer and foil token (for the logit
    difference), to what the reductions track; returns the groups' plan (or ``None``)."""
    answers, foils = tokens
    group_plan = (
        None
        if config.groups is None
        else plan_groups(
            config.model.tokenizer, config.groups, n_prompts, int(config.model.vocab_size)
        )
    )
    if group_plan is None and foils is None:
        return None
    # Each reduced row's prompt: its model row's (an appended answer's row is its prompt's).
    width = plan.input_ids.shape[1]
    prompt = torch.tensor(plan.row_prompt, dtype=torch.long)[plan.reduce_rows // width]
    if plan.tracked is None:
        plan.tracked = Tracked(torch.zeros(0, dtype=torch.long))
    if group_plan is not None:
        plan.tracked.groups = PromptRows(group_plan.table, prompt)
    if foils is not None and answers is not None:
        pairs = torch.stack([answers, foils], dim=1)
        pairs[(pairs < 0).any(dim=1)] = -1
        plan.tracked.pairs = PromptRows(pairs, prompt)
    return group_plan


def _group_fields(real: dict[str, torch.Tensor], groups: GroupPlan | None, padded: Any) -> dict:
    """The result's group fields, from the reduced rows."""
    out: dict[str, Any] = {}
    if groups is not None:
        out["group_names"] = list(groups.names)
        out["group_token_ids"] = [[list(ids) for ids in each] for each in groups.token_ids]
        out["group_probs"] = padded(real["group_probs"], float("nan"))
    return out


def check_prompt_ids(prompt_ids: Any, n_prompts: int, vocab_size: int) -> list[list[int]]:
    if not isinstance(prompt_ids, (list, tuple)) or len(prompt_ids) != n_prompts:
        raise ValueError(
            f"prompt_ids must be a list of {n_prompts} token id lists (one per prompt), got "
            f"{type(prompt_ids).__name__} of length {len(prompt_ids) if hasattr(prompt_ids, '__len__') else '?'}"
        )
    checked = []
    for index, ids in enumerate(prompt_ids):
        ids = ids.tolist() if isinstance(ids, (torch.Tensor, np.ndarray)) else ids
        if (
            not isinstance(ids, (list, tuple))
            or not ids
            or not all(
                isinstance(i, (int, np.integer)) and not isinstance(i, bool) and 0 <= i < vocab_size
                for i in ids
            )
        ):
            raise ValueError(
                f"prompt_ids[{index}] must be a non-empty list of token ids from 0 to "
                f"{vocab_size - 1}, got {ids!r:.80}"
            )
        checked.append([int(i) for i in ids])
    return checked


def _warn_non_finite(
    max_probs: torch.Tensor,
    final_tokens: torch.Tensor | None,
    mask: torch.Tensor,
    layers: list[int | str],
    lens_name: str | None = None,
) -> None:
    """One warning naming the layers and positions whose distributions were not finite (and
    the lens, among lenses side by side)."""
    bad_cells = torch.isnan(max_probs) & mask
    bad_final = torch.zeros_like(mask) if final_tokens is None else (final_tokens < 0) & mask
    if not bad_cells.any() and not bad_final.any():
        return
    parts = []
    if bad_cells.any():
        rows, prompts, positions = torch.nonzero(bad_cells, as_tuple=True)
        where = sorted(
            {(layers[r], p) for r, p in zip(rows.tolist(), prompts.tolist(), strict=True)}
        )
        shown = ", ".join(f"layer {layer} of prompt {p}" for layer, p in where[:8])
        more = f" and {len(where) - 8} more" if len(where) > 8 else ""
        parts.append(
            f"{int(bad_cells.sum())} cells ({shown}{more}) have non-finite logits and are shown "
            "as missing"
        )
    if bad_final.any():
        prompts, positions = torch.nonzero(bad_final, as_tuple=True)
        shown = ", ".join(
            f"prompt {p} position {s}"
            for p, s in list(zip(prompts.tolist(), positions.tolist(), strict=True))[:8]
        )
        parts.append(
            f"the model's own output is not finite at {shown}: the final-based fields "
            "(final_token_probs, final_token_ranks, kl_to_final) are missing there"
        )
    label = "logit lens" if lens_name is None else f"logit lens, lens {lens_name!r}"
    warnings.warn(f"{label}: " + "; ".join(parts), RuntimeWarning, stacklevel=5)


def answer_tokens(
    plan: InputPlan,
    tokenizer: Any,
    prompts: list[str],
    prompt_ids: list[list[int]] | None,
    foils: list[str | None] | None,
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """Each prompt's answer token (its first answer set's first accepted string's first
    token) and foil token, -1 where there is none; ``None`` without answers (or foils)."""
    if not plan.answer_sets:
        return None, None
    first = next(iter(plan.answer_sets.values()))
    answers = torch.tensor([sequences[0][0] if sequences else -1 for sequences in first.token_ids])
    if foils is None:
        return answers, None
    encoder = encoder_for(tokenizer, prompts, prompt_ids)
    foil_ids = torch.tensor(
        [
            -1 if foil is None else encoder.continuation(index, foil, f"foils[{index}]")[0]
            for index, foil in enumerate(foils)
        ]
    )
    return answers, foil_ids


def _decomposed_fields(
    fields: dict[str, torch.Tensor],
    padded: Any,
    config: StepConfig,
    foils: list[str | None] | None,
) -> dict[str, Any]:
    """The result's attribution fields, cells laid out as the result's padded grid."""
    assert config.components is not None and config.readout is not None
    out: dict[str, Any] = {
        "component_labels": list(config.components.labels),
        "contributions": padded(fields["contributions"], float("nan")),
        "contribution_bias": padded(fields["contribution_bias"], float("nan")),
        "top1_logits": padded(fields["top1_logits"], float("nan")),
        "foils": None if foils is None else list(foils),
        "logit_softcap": config.readout.softcap,
    }
    for name in (
        "answer_row_contributions",
        "answer_row_bias",
        "answer_contributions",
        "answer_contribution_bias",
    ):
        if name in fields:
            out[name] = fields[name]
    if "answer_token_contributions" in fields:
        out["answer_token_contributions"] = padded(
            fields["answer_token_contributions"], float("nan")
        )
        out["answer_token_bias"] = padded(fields["answer_token_bias"], float("nan"))
    if "target_contributions" in fields:
        out["target_contributions"] = padded(fields["target_contributions"], float("nan"))
        out["target_bias"] = padded(fields["target_bias"], float("nan"))
    return out
