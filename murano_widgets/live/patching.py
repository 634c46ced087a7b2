"""A live widget's patch: one cell of a shown prompt patched through ``patch_lens``.

The widget names the patch as its views do: a prompt by its index, a layer among the
result's rows, a position among the prompt's real tokens (as ``selected["position"]``), and a
source that is ``"zero"``, ``"mean"`` (the mean of that block output over every real position of
every prompt the widget shows) or another prompt's index (that prompt's block output at the same
layer and position: activation patching). :func:`check_patch` checks all of it against the
results before any model work; :func:`run_patch` calls :func:`~murano_widgets.patch_lens` with
the prompts' texts, the session's rows, top-k and ``remote``, the lens shown and the prompt's
own answers; :func:`patch_state` and :func:`patch_payload` are what the widget syncs.

``patch_lens`` reads text: a prompt whose tokens came from a chat template or from generation
is patched only when its text tokenizes back to exactly those tokens (else the positions would
not be the ones shown), and the patch then runs on the prompt and its reply as shown (nothing is
generated again).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from murano_widgets._checks import check_index, check_layer
from murano_widgets.comparison.patching import PATCH_SOURCES, PatchComparison, patch_lens
from murano_widgets.live.worker import model_lock
from murano_widgets.payload.codec import section_bytes
from murano_widgets.payload.diff import diff_payload
from murano_widgets.results import LensResults, LogitLensResult, lenses_of

if TYPE_CHECKING:
    from murano_widgets.live.session import LiveSession

__all__ = ["check_patch", "patch_payload", "patch_state", "run_patch"]


def check_patch(
    results: LogitLensResult | LensResults,
    *,
    prompt: Any,
    layer: Any,
    position: Any,
    source: Any,
) -> tuple[int, int, int, str | int]:
    """The patch's arguments checked against the shown results, before any model work.

    Returns:
        ``(prompt, layer, position, source)``, the position counted from the start.

    Raises:
        TypeError, ValueError: Naming the argument, what was given and what is allowed: a
            prompt index out of range, a layer that is not one of the rows, a position beyond
            the prompt's (or the source prompt's) real tokens, a source that is none of
            ``"zero"``, ``"mean"`` or a prompt index.
    """
    one = lenses_of(results).first
    n_inputs = one.n_inputs
    prompt = check_index("prompt", prompt, n_inputs, "prompts")
    layer = check_layer(layer, sorted(set(one.layers)))
    length = one.lengths[prompt]
    if isinstance(position, (bool, np.bool_)) or not isinstance(position, (int, np.integer)):
        raise TypeError(f"position must be an int, got {type(position).__name__} {position!r}")
    if not -length <= position < length:
        raise ValueError(
            f"position must be an int from 0 to {length - 1} (prompt {prompt}'s real tokens: "
            f"{_tokens(one, prompt)}; negative ones count from the end); got {position}"
        )
    position = int(position) % length
    allowed = f"'zero', 'mean' or a prompt index from 0 to {n_inputs - 1}"
    if isinstance(source, str):
        if source not in PATCH_SOURCES:
            raise ValueError(f"source must be {allowed}; got {source!r:.60}")
    elif isinstance(source, (bool, np.bool_)) or not isinstance(source, (int, np.integer)):
        raise TypeError(f"source must be {allowed}; got {type(source).__name__} {source!r:.60}")
    else:
        if not 0 <= source < n_inputs:
            raise ValueError(f"source must be {allowed}; got the prompt index {source}")
        source = int(source)
        if position >= one.lengths[source]:
            raise ValueError(
                f"position {position} is beyond source prompt {source}'s "
                f"{one.lengths[source]} real tokens ({_tokens(one, source)}): the patch copies "
                "the source's block output at the same position; choose one both prompts have"
            )
    return prompt, int(layer), position, source


def run_patch(
    session: LiveSession,
    results: LogitLensResult | LensResults,
    *,
    prompt: int,
    layer: int,
    position: int,
    source: str | int,
    lens_name: str | None = None,
    token: int | None = None,
) -> PatchComparison:
    """:func:`~murano_widgets.patch_lens` on prompt ``prompt`` of ``results`` (arguments as
    :func:`check_patch` returns them), read through the lens ``lens_name`` (default the first);
    its change in probability follows ``token`` (an id; ``None``: the clean run's prediction).

    Raises:
        ValueError: For a lens name the session does not have, or a prompt (the patched one,
            its source, one of the mean's) whose text does not tokenize to its tokens.
    """
    one = lenses_of(results).first
    step = session.step
    lens_name = lens_name or session.lens_names[0]
    if lens_name not in step.lenses:
        raise ValueError(f"lens_name must be one of {session.lens_names}; got {lens_name!r}")
    text = _text_of(session, one, prompt)
    mean_over = None
    if source == "mean":
        # "The mean over the batch": every real position of every prompt shown.
        mean_over = [_text_of(session, one, i) for i in range(one.n_inputs)]
        chosen: str = "mean"
    elif isinstance(source, int):
        chosen = _text_of(session, one, source)
        if chosen in PATCH_SOURCES:
            raise ValueError(
                f"source prompt {source} is the text {chosen!r}, which patch_lens reads as "
                f"the {chosen} ablation, not as a prompt; it cannot be a source"
            )
    else:
        chosen = source
    answers = None
    if one.answer_sets:
        given = {
            name: [scores.answers[prompt]]
            for name, scores in one.answer_sets.items()
            if scores.answers[prompt] is not None
        }
        answers = given or None
    with model_lock(session.model):
        return patch_lens(
            session.model,
            text,
            layer=layer,
            position=position,
            source=chosen,
            mean_over=mean_over,
            answers=answers,
            lens=step.lenses[lens_name],
            layers=step.layers,
            top_k=step.top_k,
            max_chunk_bytes=step.max_chunk_bytes,
            remote=step.remote,
            reduce_in_trace=step.reduce_in_trace,
            token=token,
        )


def patch_state(
    comparison: PatchComparison, prompt: int, source: str | int, target: str | None = None
) -> dict[str, Any]:
    """The ``patch`` trait: where the patch is, the answer's probability before and after
    (``None`` without an answer, or without the model's last layer among the rows), and the
    tracked token ``target`` the comparison follows (its ``token``; ``None``: none is tracked)
    with its probability as the next token after the prompt, before and after (``None``
    without the model's last layer among the rows)."""
    patch = comparison.patch
    assert patch is not None
    answers = comparison.a.answers
    answer = answers[0][0] if answers and answers[0] else None
    clean = patched = None
    if target is not None:
        clean, patched = _next_token_probs(comparison)
    return {
        "prompt": int(prompt),
        "layer": int(patch.layer),
        "position": int(patch.position),
        "source": source,
        "answer": answer,
        "answer_prob_clean": _plain(comparison.answer_prob_clean),
        "answer_prob_patched": _plain(comparison.answer_prob_patched),
        "target": target,
        "target_prob_clean": _plain(clean),
        "target_prob_patched": _plain(patched),
    }


def _next_token_probs(comparison: PatchComparison) -> tuple[float | None, float | None]:
    """The chosen token's probability at the prompt's last position under the model's last
    layer (its own output), clean and patched; ``None`` when the rows leave that layer out."""
    last = (comparison.a.n_model_layers or 0) - 1
    if last not in comparison.layers:
        return None, None
    row = comparison.layers.index(last)
    at = int(comparison.a.positions(0)[-1])
    return (
        float(comparison.token_prob_a[row, 0, at]),
        float(comparison.token_prob_b[row, 0, at]),
    )


def patch_payload(comparison: PatchComparison) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The comparison as the diff widget syncs it (its ``_meta`` and ``_sections``)."""
    meta, arrays = diff_payload(comparison)
    return meta, section_bytes(arrays)


def _text_of(session: LiveSession, result: LogitLensResult, index: int) -> str:
    """Prompt ``index``'s text, checked to tokenize to the tokens the result shows."""
    text = (result.prompts or [])[index]
    assert result.input_ids is not None  # the session's results carry their token ids
    shown = result.input_ids[index][result.attention_mask[index].bool()].tolist()
    again = session.model.tokenizer(text, return_token_type_ids=False)["input_ids"]
    if list(again) != shown:
        came = (
            "a chat template"
            if result.token_roles is not None
            else "generation"
            if result.generated_texts is not None
            else "token ids of their own"
        )
        raise ValueError(
            f"prompt {index} cannot be patched: its tokens came from {came}, and its text "
            f"tokenizes to other tokens ({len(again)} against the {len(shown)} shown), so the "
            "positions patch_lens would patch are not the ones shown"
        )
    return text


def _tokens(result: LogitLensResult, prompt: int, limit: int = 24) -> str:
    words = [result.input_words[prompt][int(s)] for s in result.positions(prompt)]
    shown = ", ".join(f"{i}: {w!r}" for i, w in enumerate(words[:limit]))
    return "[" + shown + (", ..." if len(words) > limit else "") + "]"


def _plain(value: float | None) -> float | None:
    """A float as JSON can carry it (NaN is no JSON number)."""
    return None if value is None or math.isnan(value) else float(value)
