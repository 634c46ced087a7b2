"""Results combined and cut along the prompt axis, as one step call on those prompts makes them.

A live widget adds a prompt by running the step on that prompt alone and appending the result
(:func:`concat_results`), and removes one by selecting the others (:func:`select_prompts`):
neither runs the model again on the prompts it already has. Both are pure functions of results,
and they give what one :class:`~murano_widgets.LogitLens` call on all the prompts gives: every
field laid out on the sequence axis of the longest prompt, padded on the tokenizer's side with
the step's own fill (NaN for numbers, -1 for ids and ranks, 0 in ``attention_mask``, the pad id
in ``input_ids``, ``""`` for words), the string table cut to the ids the prompts use.

Every field combines by its layout, declared once on the field
(:mod:`murano_widgets.results.schema`): a tensor along its ``prompt`` axis, padded along its
``seq`` axis with its fill; so a new field combines as soon as it is declared, and a combined
result never drops one. What one step call could not have made (two models, lenses, layer sets or
top-k; one part with targets and one without; generated and plain prompts) is refused, naming
the field and the parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import torch

from murano_widgets.results.lenses import LensResults, as_given, lenses_of
from murano_widgets.results.result import SPECS, AnswerScores, LogitLensResult, fill_value

__all__ = ["concat_results", "padding_of", "select_prompts"]

#: Every field by how it combines, from its layout (:mod:`murano_widgets.results.schema`).
_TENSORS = {name: spec for name, spec in SPECS.items() if spec.role == "tensor"}
_NESTED = {name: spec for name, spec in SPECS.items() if spec.role == "nested"}
_PER_PROMPT = {name: spec for name, spec in SPECS.items() if spec.role == "per_prompt"}
#: The same in every part: the model, the lens, the rows and the options.
_SAME = tuple(name for name, spec in SPECS.items() if spec.role == "run")
#: Fields that only a batch with answers has: a part without answers holds its prompts as
#: prompts without an answer (NaN, None), as one call with ``None`` for them does.
_ANSWER_FIELDS = tuple(name for name, spec in SPECS.items() if spec.answers)


def padding_of(tokenizer: Any) -> tuple[str, int]:
    """The side the step pads on and the id it pads ``input_ids`` with, for ``tokenizer``
    (what :func:`~murano_widgets.step.inputs.plan_inputs` uses: no pad token pads with 0)."""
    side = "left" if getattr(tokenizer, "padding_side", "right") == "left" else "right"
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    return side, int(pad_id)


@overload
def concat_results(
    parts: Sequence[LogitLensResult], *, padding_side: str, pad_id: int
) -> LogitLensResult: ...
@overload
def concat_results(
    parts: Sequence[LensResults], *, padding_side: str, pad_id: int
) -> LensResults: ...
@overload
def concat_results(
    parts: Sequence[LogitLensResult | LensResults], *, padding_side: str, pad_id: int
) -> LogitLensResult | LensResults: ...
def concat_results(
    parts: Sequence[LogitLensResult | LensResults], *, padding_side: str, pad_id: int
) -> LogitLensResult | LensResults:
    """The results of several batches as the result of one batch of all their prompts, in order.

    Args:
        parts: Results of the same step (the same model, rows, lens or lenses and options),
            all :class:`~murano_widgets.LogitLensResult` or all
            :class:`~murano_widgets.LensResults`.
        padding_side: ``"left"`` or ``"right"``: where the tokenizer pads (see
            :func:`padding_of`); each part must be padded on that side.
        pad_id: The id ``input_ids`` holds at padding.

    Returns:
        The combined result, validated; a part's own tensors are not changed.

    Raises:
        ValueError: Naming the field and the parts, for what one call could not have made:
            parts of other models, rows, lenses, targets (or their token ids), top-k or
            attribution; generated or chat prompts with plain ones; a part padded on the
            other side.
        TypeError: For parts that are not results, or of mixed kinds.
    """
    left = _check_side(padding_side)
    parts = list(parts)
    if not parts:
        raise ValueError("concat_results needs at least one result")
    kinds = {type(part) for part in parts}
    if len(kinds) != 1 or not kinds <= {LogitLensResult, LensResults}:
        names = sorted(kind.__name__ for kind in kinds)
        raise TypeError(
            f"concat_results takes LogitLensResults or LensResults, all of one kind; got {names}"
        )
    held = [lenses_of(part) for part in parts]
    names = held[0].names
    for index, part in enumerate(held):
        if part.names != names:
            raise ValueError(
                f"cannot combine lenses {part.names} (part {index}) with {names} (part 0): "
                "every part must hold the same lenses in the same order"
            )
    where = (lambda name: f"lens {name!r}, ") if held[0].named else (lambda name: "")
    combined = LensResults(
        {name: _concat([part[name] for part in held], left, pad_id, where(name)) for name in names},
        _concat_between(held, left),
        named=held[0].named,
    )
    return as_given(combined.check_one_batch())  # _concat validated each lens


@overload
def select_prompts(
    result: LogitLensResult, indices: Sequence[int], *, padding_side: str
) -> LogitLensResult: ...
@overload
def select_prompts(
    result: LensResults, indices: Sequence[int], *, padding_side: str
) -> LensResults: ...
@overload
def select_prompts(
    result: LogitLensResult | LensResults, indices: Sequence[int], *, padding_side: str
) -> LogitLensResult | LensResults: ...
def select_prompts(
    result: LogitLensResult | LensResults, indices: Sequence[int], *, padding_side: str
) -> LogitLensResult | LensResults:
    """The prompts ``indices`` of ``result``, in that order, as one step call on them alone
    would give them (the sequence axis cut to their longest prompt).

    Answers that none of the chosen prompts has are left out with everything that comes with
    them (the answer sets, the answer's attribution, the foils), as a call without answers
    would: one call cannot be given answers that are all ``None``.

    Args:
        result: A :class:`~murano_widgets.LogitLensResult` or
            :class:`~murano_widgets.LensResults`.
        indices: Prompt indices (at least one).
        padding_side: ``"left"`` or ``"right"``, the side ``result`` is padded on.

    Raises:
        ValueError: For no index or one out of range, or a result padded on the other side.
        TypeError: For indices that are not ints.
    """
    left = _check_side(padding_side)
    n_inputs = result.n_inputs
    indices = list(indices)
    if not indices:
        raise ValueError("select_prompts needs at least one prompt index: a result has prompts")
    for index in indices:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n_inputs:
            raise ValueError(
                f"select_prompts: prompt indices must be ints from 0 to {n_inputs - 1}, "
                f"got {index!r} in {indices}"
            )
    held = lenses_of(result)
    between = None
    if held.kl_between is not None:
        width = max(held.lengths[i] for i in indices)
        at = torch.tensor(indices)
        between = {
            pair: _fit(values.index_select(1, at), 2, width, left, float("nan"))
            for pair, values in held.kl_between.items()
        }
    # _select validates each lens: the lenses together are checked once more as one batch.
    return as_given(held.map(lambda one: _select(one, indices, left), between).check_one_batch())


# ---------------------------------------------------------------------------------------------
# One lens's result


def _concat(parts: list[LogitLensResult], left: bool, pad_id: int, lens: str) -> LogitLensResult:
    for index, part in enumerate(parts):
        _check_padded(part, left, f"{lens}part {index}")
    first = parts[0]
    for name in _SAME:
        for index, part in enumerate(parts[1:], 1):
            if getattr(part, name) != getattr(first, name):
                raise ValueError(
                    f"cannot combine results with different {name} ({lens}part {index}: "
                    f"{_short(getattr(part, name))}, part 0: {_short(getattr(first, name))}): "
                    "one step call has one model, lens, set of rows and targets"
                )
    width = max(int(part.attention_mask.shape[1]) for part in parts)
    answered = [part.answer_sets is not None for part in parts]
    values: dict[str, Any] = {name: getattr(first, name) for name in _SAME}
    for name, spec in _TENSORS.items():
        axis, seq_axis = spec.prompt_axis, spec.seq_axis
        present = [getattr(part, name) is not None for part in parts]
        if not any(present):
            values[name] = None
            continue
        model = next(getattr(part, name) for part in parts if getattr(part, name) is not None)
        pieces = []
        for index, part in enumerate(parts):
            tensor = getattr(part, name)
            if tensor is None:
                if name not in _ANSWER_FIELDS or answered[index]:
                    owner = present.index(True)
                    raise ValueError(
                        f"cannot combine: {lens}part {index} has no {name} and part {owner} "
                        "has: the parts were made with different options (decompose, "
                        "store_full_probs, targets, answers)"
                    )
                tensor = _no_answer(model, axis, seq_axis, part)
            if seq_axis is not None:
                tensor = _fit(tensor, seq_axis, width, left, fill_value(spec, pad_id))
            pieces.append(tensor)
        try:
            values[name] = torch.cat(pieces, dim=axis)
        except RuntimeError as error:
            shapes = [tuple(piece.shape) for piece in pieces]
            raise ValueError(
                f"cannot combine {lens}{name}: its shapes {shapes} differ beyond the prompt "
                "axis (another top-k, number of components or of targets)"
            ) from error
    for name, spec in _NESTED.items():
        words = [getattr(part, name) for part in parts]
        values[name] = _concat_words(words, spec.prompt_axis, width, left)
    for name, spec in _PER_PROMPT.items():
        values[name] = _concat_per_prompt(parts, name, spec.answers, lens)
    values["answer_sets"] = _concat_answers(parts, width, left, lens)
    values["token_strings"] = _token_strings(parts, values)
    return LogitLensResult(**values).validate()


def _select(result: LogitLensResult, indices: list[int], left: bool) -> LogitLensResult:
    _check_padded(result, left, "the result")
    width = max(result.lengths[i] for i in indices)
    at = torch.tensor(indices, dtype=torch.long)
    values: dict[str, Any] = {name: getattr(result, name) for name in _SAME}
    for name, spec in _TENSORS.items():
        tensor = getattr(result, name)
        if tensor is not None:
            tensor = tensor.index_select(spec.prompt_axis, at)
            if spec.seq_axis is not None:
                tensor = _fit(tensor, spec.seq_axis, width, left, None)
        values[name] = tensor
    for name, spec in _NESTED.items():
        values[name] = _select_words(getattr(result, name), spec.prompt_axis, indices, width, left)
    for name in _PER_PROMPT:
        entries = getattr(result, name)
        values[name] = None if entries is None else [entries[i] for i in indices]
    sets = None
    if result.answer_sets is not None:
        sets = {
            name: AnswerScores(
                answers=[scores.answers[i] for i in indices],
                token_ids=[scores.token_ids[i] for i in indices],
                probs=scores.probs.index_select(1, at),
                ranks=scores.ranks.index_select(1, at),
                token_probs=_fit(scores.token_probs.index_select(1, at), 2, width, left, None),
                token_ranks=_fit(scores.token_ranks.index_select(1, at), 2, width, left, None),
            )
            for name, scores in result.answer_sets.items()
        }
        if all(entry is None for scores in sets.values() for entry in scores.answers):
            # No chosen prompt has an answer: one call would have been given none.
            sets = None
            values.update({name: None for name in _ANSWER_FIELDS})
    values["answer_sets"] = sets
    values["token_strings"] = _token_strings([result], values)
    return LogitLensResult(**values).validate()


# ---------------------------------------------------------------------------------------------
# Pieces


def _check_side(padding_side: Any) -> bool:
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    return padding_side == "left"


def _check_padded(result: LogitLensResult, left: bool, what: str) -> None:
    """A result padded on the other side would be combined into nonsense: refused."""
    mask = result.attention_mask
    short = mask.sum(dim=1) < mask.shape[1]
    if not short.any():
        return
    padded_left = bool((mask[short, 0] == 0).all())
    if padded_left != left:
        side, other = ("left", "right") if padded_left else ("right", "left")
        raise ValueError(
            f"{what} is padded on the {side}, but padding_side={other!r}: give the side the "
            "tokenizer pads on (murano_widgets.results.combine.padding_of(tokenizer))"
        )


def _fit(
    tensor: torch.Tensor, axis: int, width: int, left: bool, fill: float | int | None
) -> torch.Tensor:
    """``tensor`` padded (with ``fill``) or cut (padding only) to ``width`` along ``axis``."""
    have = int(tensor.shape[axis])
    if have == width:
        return tensor
    if have > width:
        return tensor.narrow(axis, have - width if left else 0, width)
    assert fill is not None
    shape = list(tensor.shape)
    shape[axis] = width - have
    pad = torch.full(shape, fill, dtype=tensor.dtype)
    return torch.cat([pad, tensor] if left else [tensor, pad], dim=axis)


def _no_answer(
    model: torch.Tensor, axis: int, seq_axis: int | None, part: LogitLensResult
) -> torch.Tensor:
    """An answer field of ``part``'s prompts, none of which has an answer: NaN throughout,
    shaped like ``model`` with ``part``'s prompts (and positions)."""
    shape = list(model.shape)
    shape[axis] = part.n_inputs
    if seq_axis is not None:
        shape[seq_axis] = int(part.attention_mask.shape[1])
    return torch.full(shape, float("nan"), dtype=model.dtype)


def _concat_words(parts: list[list[Any]], depth: int, width: int, left: bool) -> list[Any]:
    def fit(row: list[str]) -> list[str]:
        pad = [""] * (width - len(row))
        return pad + row if left else row + pad

    if depth == 0:
        return [fit(row) for part in parts for row in part]
    # [n_layers][n_inputs][seq]: each layer's prompts, part after part.
    return [[fit(row) for part in parts for row in part[layer]] for layer in range(len(parts[0]))]


def _select_words(
    words: list[Any], depth: int, indices: list[int], width: int, left: bool
) -> list[Any]:
    def cut(row: list[str]) -> list[str]:
        return row[len(row) - width :] if left else row[:width]

    if depth == 0:
        return [cut(words[i]) for i in indices]
    return [[cut(layer[i]) for i in indices] for layer in words]


def _concat_per_prompt(
    parts: list[LogitLensResult], name: str, answers: bool, lens: str
) -> list[Any] | None:
    entries = [getattr(part, name) for part in parts]
    if all(entry is None for entry in entries):
        return None
    if answers:
        # A part without foils: its prompts have none (one call takes None for them).
        return [
            f
            for part, entry in zip(parts, entries, strict=True)
            for f in entry or [None] * part.n_inputs
        ]
    if any(entry is None for entry in entries):
        has = [i for i, entry in enumerate(entries) if entry is not None]
        lacks = [i for i, entry in enumerate(entries) if entry is None]
        raise ValueError(
            f"cannot combine: {lens}parts {has} have {name} and parts {lacks} do not (generated "
            "or chat prompts with plain ones: one call makes all its prompts alike)"
        )
    return [item for entry in entries for item in entry]


def _concat_answers(
    parts: list[LogitLensResult], width: int, left: bool, lens: str
) -> dict[str, AnswerScores] | None:
    owners = [i for i, part in enumerate(parts) if part.answer_sets is not None]
    if not owners:
        return None
    names = list(parts[owners[0]].answer_sets)  # type: ignore[arg-type]
    for index in owners:
        got = list(parts[index].answer_sets)  # type: ignore[arg-type]
        if got != names:
            raise ValueError(
                f"cannot combine answer sets {got} ({lens}part {index}) with {names} "
                f"(part {owners[0]}): one call has one list of answer sets"
            )
    sets = {}
    for name in names:
        pieces = []
        for part in parts:
            scores = (part.answer_sets or {}).get(name)
            if scores is None:
                scores = _unanswered(part)
            pieces.append(scores)
        sets[name] = AnswerScores(
            answers=[a for s in pieces for a in s.answers],
            token_ids=[t for s in pieces for t in s.token_ids],
            probs=torch.cat([s.probs for s in pieces], dim=1),
            ranks=torch.cat([s.ranks for s in pieces], dim=1),
            token_probs=torch.cat(
                [_fit(s.token_probs, 2, width, left, float("nan")) for s in pieces], dim=1
            ),
            token_ranks=torch.cat([_fit(s.token_ranks, 2, width, left, -1) for s in pieces], dim=1),
        )
    return sets


def _unanswered(part: LogitLensResult) -> AnswerScores:
    """The scores of prompts without an answer, as the step writes them."""
    n_layers, n_inputs, seq = part.max_probs.shape
    return AnswerScores(
        answers=[None] * n_inputs,
        token_ids=[None] * n_inputs,
        probs=torch.full((n_layers, n_inputs), float("nan")),
        ranks=torch.full((n_layers, n_inputs), -1, dtype=torch.long),
        token_probs=torch.full((n_layers, n_inputs, seq), float("nan")),
        token_ranks=torch.full((n_layers, n_inputs, seq), -1, dtype=torch.long),
    )


def _token_strings(parts: list[LogitLensResult], values: dict[str, Any]) -> dict[int, str] | None:
    """The string table of the combined prompts: the ids the step decodes (the top-k, the
    final predictions, the real input tokens), ascending, from the parts' tables."""
    tables = [part.token_strings for part in parts]
    if all(table is None for table in tables):
        return None
    known: dict[int, str] = {}
    for table in tables:
        known.update(table or {})
    mask = values["attention_mask"].bool()
    used = [
        values["topk_tokens"] if values["topk_tokens"] is not None else values["predicted_tokens"],
        values["final_tokens"],
        None if values["input_ids"] is None else values["input_ids"][mask],
    ]
    ids = torch.unique(torch.cat([t.reshape(-1) for t in used if t is not None]))
    missing = [i for i in ids.tolist() if i >= 0 and i not in known]
    if missing:
        raise ValueError(
            f"cannot combine: the parts' token_strings lack ids {missing[:8]} that their tokens use"
        )
    return {i: known[i] for i in ids.tolist() if i >= 0}


def _concat_between(
    parts: list[LensResults], left: bool
) -> dict[tuple[str, str], torch.Tensor] | None:
    kinds = [part.kl_between is None for part in parts]
    if all(kinds):
        return None
    if any(kinds):
        raise ValueError(
            "cannot combine: some parts have kl_between and some do not (kl_between_lenses differs)"
        )
    pairs = list(parts[0].kl_between)  # type: ignore[arg-type]
    width = max(int(part.attention_mask.shape[1]) for part in parts)
    return {
        pair: torch.cat(
            [_fit(part.kl_between[pair], 2, width, left, float("nan")) for part in parts],  # type: ignore[index]
            dim=1,
        )
        for pair in pairs
    }


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
