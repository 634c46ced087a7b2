"""Answers and targets: the tokens they are scored by, the rows that score them, their scores.

The step feeds the model one batch: each prompt's row, with the tokens of one multi-token
answer appended (a causal model reads the prompt the same with or without them), and one more
row for each further multi-token answer. The reductions then track, at every position shown,
the targets' tokens and the answers' first tokens, and at the appended positions the answer
tokens they predict (see :class:`~murano_widgets.step.reductions.Tracked`). From those few numbers
:func:`score` assembles the per-cell target fields and the teacher-forced answer scores.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import torch

from murano_widgets.results.result import AnswerScores
from murano_widgets.step.reductions import Tracked
from murano_widgets.types import AnswerSets

__all__ = ["InputPlan", "disjoint_sequences", "plan_inputs", "score", "variant_forms"]


@dataclass
class _SetPlan:
    answers: list[list[str] | None]
    token_ids: list[list[list[int]] | None]
    first_columns: torch.Tensor  # [n_shown, a] bool: this set's first tokens at each shown row
    term_sequence: torch.Tensor  # [n_terms] which sequence a factor belongs to
    term_index: torch.Tensor  # [n_terms] which of its tokens it is
    term_row: torch.Tensor  # [n_terms] the reduced row that predicts it
    term_column: torch.Tensor  # [n_terms] its column in row_ids
    sequence_prompt: torch.Tensor  # [n_sequences] the prompt of each sequence


@dataclass
class InputPlan:
    """What the step feeds the model, and where answers and targets are read.

    Attributes:
        input_ids, attention_mask: ``[n_rows, width]`` the model's batch (prompts, then the
            extra rows of further multi-token answers), padded on the tokenizer's side.
        display_ids, display_mask: ``[n_inputs, seq]`` the prompts alone, as the result shows
            them (what ``tokenizer(prompts, padding=True)`` gives).
        shown_mask: ``[n_inputs, seq]`` the cells the result holds values for: every real
            position, or only each prompt's last one.
        reduce_rows: ``[R]`` flat indices into ``[n_rows * width]`` of the positions to reduce:
            every shown position (in the shown mask's order), then the appended ones.
        n_shown: How many of ``reduce_rows`` are shown.
        row_prompt: The prompt of each model row.
        tracked: The token ids the reductions keep, or ``None``.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    display_ids: torch.Tensor
    display_mask: torch.Tensor
    shown_mask: torch.Tensor
    reduce_rows: torch.Tensor
    n_shown: int
    row_prompt: list[int]
    tracked: Tracked | None
    targets: list[str] | None
    target_token_ids: list[list[int]] | None
    target_columns: list[list[int]] | None
    answer_sets: dict[str, _SetPlan]


def variant_forms(text: str) -> list[str]:
    """``text`` with and without a leading space, and with its first letter's case changed."""
    bare = text[1:] if text.startswith(" ") else text
    cased = [bare]
    if bare[:1].swapcase() != bare[:1]:
        cased.append(bare[:1].swapcase() + bare[1:])
    forms = [text]
    for form in cased:
        forms += [form, " " + form]
    return list(dict.fromkeys(forms))


def disjoint_sequences(sequences: list[list[int]]) -> list[list[int]]:
    """The accepted token sequences whose events are disjoint and cover the same union.

    An answer set's probability is that of the event "the continuation starts with one of the
    accepted sequences". Two sequences where one extends the other are not disjoint: every
    continuation that starts with the longer also starts with the shorter. So a sequence is
    dropped when an accepted sequence is a prefix of it (a duplicate is its own prefix); what
    remains is prefix-free, and the events "starts with s" of a prefix-free set are disjoint
    (two of them differ at some position both reach), so their probabilities sum to the
    union's, which is at most 1.

    Args:
        sequences: The accepted sequences (answers, their variants), in order of preference.

    Returns:
        The shortest accepted forms, each once, in the order they were first given.
    """
    distinct = list(dict.fromkeys(tuple(s) for s in sequences))
    accepted = set(distinct)
    kept = [s for s in distinct if not any(s[:end] in accepted for end in range(1, len(s)))]
    return [list(s) for s in kept]


def plan_inputs(
    tokenizer: Any,
    prompts: list[str],
    answer_sets: AnswerSets | None,
    targets: list[str] | None,
    variants: bool,
    prompt_ids: list[list[int]] | None = None,
    last_only: bool = False,
) -> InputPlan:
    """Tokenizes the prompts once, with what scoring the answers and targets needs.

    In named steps: the targets' tokens (:func:`_plan_targets`), each answer set's token
    sequences (:func:`_answer_sequences`), the model's rows with the answers' tokens appended
    (:func:`_model_rows`), padded; the shown positions (:class:`_Grid`); and the reduced rows
    that score each answer token (:class:`_RowPlanner`).

    Args:
        tokenizer, prompts, answer_sets, targets, variants: What the step was given.
        prompt_ids: The prompts' token ids when they are not to be tokenized from their text
            (generated tokens, a chat template's tokens), or ``None``.
        last_only: Reduce (show) only each prompt's last position, not every position.

    Raises:
        ValueError: If an answer or target adds no token after its prompt.
    """
    encode = _Encoder(tokenizer, prompts, prompt_ids)
    prompt_ids = encode.prompt_ids
    target_token_ids, target_columns, target_ids = _plan_targets(encode, targets, variants)
    sequences_of = _answer_sequences(encode, answer_sets, variants)
    rows, row_prompt, placement = _model_rows(prompt_ids, sequences_of)
    left = getattr(tokenizer, "padding_side", "right") == "left"
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    input_ids, attention_mask = _pad(rows, pad_id, left)
    display_ids, display_mask = _pad(prompt_ids, pad_id, left)
    grid = _Grid(rows, prompt_ids, int(input_ids.shape[1]), left, last_only)
    planner = _RowPlanner(grid, sequences_of)
    set_plans = {
        name: planner.plan_set(name, per_prompt, answer_sets, placement)
        for name, per_prompt in sequences_of.items()
    }
    row_ids = planner.row_ids(set_plans, sequences_of) if answer_sets else None
    tracked = None
    if targets or answer_sets:
        tracked = Tracked(torch.tensor(target_ids, dtype=torch.long), row_ids)
    return InputPlan(
        input_ids=input_ids,
        attention_mask=attention_mask,
        display_ids=display_ids,
        display_mask=display_mask,
        shown_mask=grid.shown_mask(display_mask),
        reduce_rows=torch.tensor(planner.reduce_rows, dtype=torch.long),
        n_shown=len(grid.shown_cells),
        row_prompt=row_prompt,
        tracked=tracked,
        targets=list(targets) if targets else None,
        target_token_ids=target_token_ids,
        target_columns=target_columns,
        answer_sets=set_plans,
    )


def _plan_targets(
    encode: _Encoder, targets: list[str] | None, variants: bool
) -> tuple[list[list[int]] | None, list[list[int]] | None, list[int]]:
    """Each target's counted token ids (its first token, and with ``variants`` its
    single-token forms), each one's columns among the distinct ids tracked, and those ids."""
    if not targets:
        return None, None, []
    encode.prefetch([(0, text) for text in targets], variants)
    target_token_ids = []
    multi = []
    for index, text in enumerate(targets):
        ids = encode.continuation(0, text, f"targets[{index}]")
        if len(ids) > 1:
            multi.append(text)
        counted = [ids[0]]
        if variants:
            counted += encode.single_token_variants(0, text)
        target_token_ids.append(list(dict.fromkeys(counted)))
    if multi:
        warnings.warn(
            f"targets {multi!r} are several tokens long: only their first token is tracked "
            "at every position (score a whole answer with answers=..., teacher-forced)",
            UserWarning,
            stacklevel=5,
        )
    target_ids = list(dict.fromkeys(i for ids in target_token_ids for i in ids))
    column_of = {token: column for column, token in enumerate(target_ids)}
    target_columns = [[column_of[i] for i in ids] for ids in target_token_ids]
    return target_token_ids, target_columns, target_ids


def _answer_sequences(
    encode: _Encoder, answer_sets: AnswerSets | None, variants: bool
) -> dict[str, list[list[list[int]] | None]]:
    """Each answer set's accepted token sequences per prompt (``None`` for a prompt without
    an answer), made disjoint (:func:`disjoint_sequences`)."""
    sequences_of: dict[str, list[list[list[int]] | None]] = {}
    encode.prefetch(
        [
            (index, text)
            for entries in (answer_sets or {}).values()
            for index, accepted in enumerate(entries)
            for text in accepted or []
        ],
        variants,
    )
    for name, entries in (answer_sets or {}).items():
        per_prompt: list[list[list[int]] | None] = []
        for index, accepted in enumerate(entries):
            if accepted is None:
                per_prompt.append(None)
                continue
            where = f"answers[{index}]" if name == "answer" else f"answers[{name!r}][{index}]"
            found = [encode.continuation(index, text, where) for text in accepted]
            if variants:
                found += [
                    [i] for text in accepted for i in encode.single_token_variants(index, text)
                ]
            per_prompt.append(disjoint_sequences(found))
        sequences_of[name] = per_prompt
    return sequences_of


def _model_rows(
    prompt_ids: list[list[int]], sequences_of: dict[str, list[list[list[int]] | None]]
) -> tuple[list[list[int]], list[int], dict[tuple[int, tuple[int, ...]], int]]:
    """The model's rows (each prompt with the tokens of one multi-token answer appended, then
    one more row per further one), each row's prompt, and the row that reads each
    ``(prompt, context)``."""
    n_inputs = len(prompt_ids)
    appended: list[list[int]] = [[] for _ in range(n_inputs)]  # the prompts' own rows
    extra_rows: list[tuple[int, list[int]]] = []  # (prompt, appended tokens)
    placement: dict[tuple[int, tuple[int, ...]], int] = {}  # (prompt, context) -> model row
    for per_prompt in sequences_of.values():
        for prompt, sequences in enumerate(per_prompt):
            for sequence in sequences or []:
                if len(sequence) > 1:
                    placement[(prompt, tuple(sequence[:-1]))] = _place(
                        prompt, sequence[:-1], appended, extra_rows
                    )
    rows = [prompt_ids[i] + appended[i] for i in range(n_inputs)]
    rows += [prompt_ids[prompt] + tokens for prompt, tokens in extra_rows]
    row_prompt = list(range(n_inputs)) + [prompt for prompt, _ in extra_rows]
    return rows, row_prompt, placement


class _Grid:
    """Where the model's rows sit in the padded batch, and the positions shown."""

    def __init__(
        self,
        rows: list[list[int]],
        prompt_ids: list[list[int]],
        width: int,
        left: bool,
        last_only: bool,
    ) -> None:
        self.rows, self.prompt_ids, self.width = rows, prompt_ids, width
        self.left, self.last_only = left, last_only
        #: The shown cells, ``(prompt, position)``, in the order they are reduced.
        self.shown_cells = [(i, k) for i in range(len(prompt_ids)) for k in self.shown_positions(i)]

    def flat(self, row: int, position: int) -> int:
        """The flat index into ``[n_rows * width]`` of a row's token at ``position``."""
        pad = self.width - len(self.rows[row]) if self.left else 0
        return row * self.width + pad + position

    def shown_positions(self, i: int) -> range:
        return range(len(self.prompt_ids[i]) - 1 if self.last_only else 0, len(self.prompt_ids[i]))

    def shown_mask(self, display_mask: torch.Tensor) -> torch.Tensor:
        """``[n_inputs, seq]`` the cells the result holds values for."""
        shown_mask = display_mask.bool()
        if self.last_only:
            ends = [
                display_mask.shape[1] - 1 if self.left else len(ids) - 1 for ids in self.prompt_ids
            ]
            shown_mask = torch.zeros_like(shown_mask)
            shown_mask[torch.arange(len(self.prompt_ids)), ends] = True
        return shown_mask


class _RowPlanner:
    """The reduced rows (every shown position, then the appended ones an answer needs) and,
    per reduced row, the token ids it tracks: the answers' first tokens where shown, the tokens
    the appended positions predict."""

    def __init__(self, grid: _Grid, sequences_of: dict[str, list[list[list[int]] | None]]) -> None:
        self.grid = grid
        self.reduce_rows = [grid.flat(i, k) for i, k in grid.shown_cells]
        self.shown_index = {cell: n for n, cell in enumerate(grid.shown_cells)}
        self.hidden_index: dict[tuple[int, int], int] = {}
        self.row_tokens: list[list[int]] = [[] for _ in grid.shown_cells]
        first_tokens = [
            list(
                dict.fromkeys(
                    s[0] for per_prompt in sequences_of.values() for s in per_prompt[i] or []
                )
            )
            for i in range(len(grid.prompt_ids))
        ]
        for i in range(len(grid.prompt_ids)):
            for k in grid.shown_positions(i):
                self.row_tokens[self.shown_index[(i, k)]] = list(first_tokens[i])

    def column(self, reduced: int, token: int) -> int:
        """``token``'s column among the ids reduced row ``reduced`` tracks (added if new)."""
        tokens = self.row_tokens[reduced]
        if token not in tokens:
            tokens.append(token)
        return tokens.index(token)

    def reduced_row(self, row: int, position: int) -> int:
        """The reduced row of a model row's appended ``position`` (added if new)."""
        key = (row, position)
        if key not in self.hidden_index:
            self.hidden_index[key] = len(self.reduce_rows)
            self.reduce_rows.append(self.grid.flat(row, position))
            self.row_tokens.append([])
        return self.hidden_index[key]

    def plan_set(
        self,
        name: str,
        per_prompt: list[list[list[int]] | None],
        answer_sets: AnswerSets | None,
        placement: dict[tuple[int, tuple[int, ...]], int],
    ) -> _SetPlan:
        """One answer set's plan: each token of each accepted sequence, the reduced row that
        predicts it and its column there (``first_columns`` is filled in by :meth:`row_ids`)."""
        prompt_ids = self.grid.prompt_ids
        term_sequence: list[int] = []
        term_index: list[int] = []
        term_row: list[int] = []
        term_column: list[int] = []
        sequence_prompt: list[int] = []
        for prompt, sequences in enumerate(per_prompt):
            last = self.shown_index[(prompt, len(prompt_ids[prompt]) - 1)]
            for sequence in sequences or []:
                number = len(sequence_prompt)
                sequence_prompt.append(prompt)
                row = placement.get((prompt, tuple(sequence[:-1])), prompt)
                for k, token in enumerate(sequence):
                    reduced = (
                        last if k == 0 else self.reduced_row(row, len(prompt_ids[prompt]) - 1 + k)
                    )
                    term_sequence.append(number)
                    term_index.append(k)
                    term_row.append(reduced)
                    term_column.append(self.column(reduced, token))
        return _SetPlan(
            answers=list(answer_sets[name]),  # type: ignore[index]
            token_ids=per_prompt,
            first_columns=torch.zeros(0, 0, dtype=torch.bool),  # filled in by row_ids
            term_sequence=torch.tensor(term_sequence, dtype=torch.long),
            term_index=torch.tensor(term_index, dtype=torch.long),
            term_row=torch.tensor(term_row, dtype=torch.long),
            term_column=torch.tensor(term_column, dtype=torch.long),
            sequence_prompt=torch.tensor(sequence_prompt, dtype=torch.long),
        )

    def row_ids(
        self,
        set_plans: dict[str, _SetPlan],
        sequences_of: dict[str, list[list[list[int]] | None]],
    ) -> torch.Tensor:
        """``[R, a]`` the ids each reduced row tracks (-1 where it has fewer); each set's
        ``first_columns`` set from them."""
        n_shown = len(self.grid.shown_cells)
        width = max(max((len(t) for t in self.row_tokens), default=0), 1)
        row_ids = torch.tensor(
            [tokens + [-1] * (width - len(tokens)) for tokens in self.row_tokens],
            dtype=torch.long,
        ).reshape(len(self.reduce_rows), width)
        shown_prompt = torch.tensor([i for i, _ in self.grid.shown_cells], dtype=torch.long)
        for name, plan in set_plans.items():
            # This set's first tokens per prompt (-2 pads: matches no id), then per shown row.
            firsts = [sorted({s[0] for s in sequences or []}) for sequences in sequences_of[name]]
            most = max(1, max(len(f) for f in firsts))
            table = torch.tensor([f + [-2] * (most - len(f)) for f in firsts], dtype=torch.long)
            shown_ids = row_ids[:n_shown].unsqueeze(-1)
            plan.first_columns = (shown_ids == table[shown_prompt].unsqueeze(1)).any(-1)
        return row_ids


def score(
    plan: InputPlan, fields: dict[str, torch.Tensor], scatter: Any
) -> tuple[dict[str, Any], dict[str, AnswerScores] | None]:
    """The target fields and the answer sets, from the reduced rows' tracked fields.

    Args:
        plan: The plan the step ran.
        fields: The reduced fields ``[n_layers, R, ...]`` (with ``target_*``/``row_token_*``).
        scatter: ``(values [n_layers, n_shown, ...], fill) -> [n_layers, n_inputs, seq, ...]``.
    """
    targets: dict[str, Any] = {}
    if plan.targets:
        probs = fields["target_probs"][:, : plan.n_shown]
        ranks = fields["target_ranks"][:, : plan.n_shown]
        columns = plan.target_columns or []
        # A target's ids are distinct (disjoint events): their sum is a probability; the
        # clamp only removes float32 rounding above 1.
        summed = torch.stack([probs[..., c].sum(dim=-1) for c in columns], dim=-1).clamp(max=1.0)
        best = torch.stack([ranks[..., c].amin(dim=-1) for c in columns], dim=-1)
        targets = {
            "targets": plan.targets,
            "target_token_ids": plan.target_token_ids,
            "target_probs": scatter(summed, float("nan")),
            "target_ranks": scatter(best, -1),
        }
    if not plan.answer_sets:
        return targets, None
    row_probs = fields["row_token_probs"]
    row_ranks = fields["row_token_ranks"]
    n_layers = row_probs.shape[0]
    n_inputs = plan.display_mask.shape[0]
    last_shown = plan.shown_mask.sum(dim=1).cumsum(0) - 1  # each prompt's last shown row
    # Every set's first-token values at once: [sets, n_layers, n_shown].
    chosen = torch.stack([p.first_columns for p in plan.answer_sets.values()]).unsqueeze(1)
    shown_probs = row_probs[:, : plan.n_shown].unsqueeze(0)
    shown_ranks = row_ranks[:, : plan.n_shown].unsqueeze(0)
    token_probs = torch.where(chosen, shown_probs, 0.0).sum(dim=-1).clamp(max=1.0)
    large = torch.iinfo(torch.long).max
    candidates = torch.where(chosen, shown_ranks, large)
    # The best of a few columns, one elementwise minimum each: an amin over a last dimension
    # of one or two entries runs a reduction kernel per cell (2 ms a batch of the demo model).
    token_ranks = candidates[..., 0]
    for column in range(1, candidates.shape[-1]):
        token_ranks = torch.minimum(token_ranks, candidates[..., column])
    # No answer tracked at a row: no value; nor where the cell's distribution has none (NaN
    # and -1 in every tracked column).
    no_value = ~chosen.any(dim=-1) | torch.isnan(shown_probs).all(dim=-1)
    token_probs = token_probs.masked_fill(no_value, float("nan"))
    token_ranks = token_ranks.masked_fill(no_value | (token_ranks == large), -1)
    sets: dict[str, AnswerScores] = {}
    for number, (name, set_plan) in enumerate(plan.answer_sets.items()):
        has_answer = torch.tensor([ids is not None for ids in set_plan.token_ids])
        factors = row_probs[:, set_plan.term_row, set_plan.term_column]  # [n_layers, n_terms]
        n_sequences = len(set_plan.sequence_prompt)
        # Factors laid out [n_layers, sequence, token] (1 past a sequence's end), multiplied.
        longest = int(set_plan.term_index.max()) + 1 if n_sequences else 1
        grid = torch.ones(n_layers, n_sequences, longest)
        grid[:, set_plan.term_sequence, set_plan.term_index] = factors
        probs = torch.zeros(n_layers, n_inputs).index_add_(
            1, set_plan.sequence_prompt, grid.prod(dim=-1)
        )
        sets[name] = AnswerScores(
            answers=set_plan.answers,
            token_ids=set_plan.token_ids,
            probs=probs.clamp(max=1.0).masked_fill(~has_answer, float("nan")),
            ranks=token_ranks[number][:, last_shown].masked_fill(~has_answer, -1),
            token_probs=scatter(token_probs[number], float("nan")),
            token_ranks=scatter(token_ranks[number], -1),
        )
    return targets, sets


class _Encoder:
    """Token ids of prompts, and of texts as they would follow a prompt."""

    def __init__(
        self, tokenizer: Any, prompts: list[str], prompt_ids: list[list[int]] | None = None
    ) -> None:
        self.tokenizer = tokenizer
        self.prompts = prompts
        if prompt_ids is None:
            prompt_ids = tokenizer(prompts, return_token_type_ids=False)["input_ids"]
        self.prompt_ids: list[list[int]] = [list(ids) for ids in prompt_ids]
        self._cache: dict[tuple[int, str], tuple[list[int], list[int]]] = {}

    def prefetch(self, pairs: list[tuple[int, str]], variants: bool) -> None:
        """Tokenizes every ``(prompt, text)`` pair (and its variant forms) in two batch calls.

        One call per text costs a tenth of a millisecond of Python each: for a hundred
        targets, more than the whole lens on a GPU.
        """
        if variants:
            pairs = [(p, form) for p, text in pairs for form in variant_forms(text)]
        pairs = [pair for pair in dict.fromkeys(pairs) if pair not in self._cache]
        if not pairs:
            return
        full = self.tokenizer([self.prompts[p] + text for p, text in pairs])["input_ids"]
        # A text alone is needed only where it merged into the prompt's own tokens.
        merged = [
            index
            for index, ((p, _), ids) in enumerate(zip(pairs, full, strict=True))
            if list(ids[: len(self.prompt_ids[p])]) != self.prompt_ids[p]
        ]
        by_itself = {}
        if merged:
            alone = self.tokenizer([pairs[i][1] for i in merged], add_special_tokens=False)
            by_itself = dict(zip(merged, alone["input_ids"], strict=True))
        for index, (pair, with_prompt) in enumerate(zip(pairs, full, strict=True)):
            self._cache[pair] = (list(with_prompt), list(by_itself.get(index, [])))

    def continuation(self, prompt: int, text: str, where: str) -> list[int]:
        """The tokens ``text`` adds after prompt ``prompt``.

        The prompt and the text are tokenized together, so that a text reads as it would in
        the prompt; if that changes the prompt's own tokens (the text merges with its last
        one), the text is tokenized on its own.
        """
        context = self.prompt_ids[prompt]
        self.prefetch([(prompt, text)], variants=False)
        full, alone = self._cache[(prompt, text)]
        if full[: len(context)] == context and len(full) > len(context):
            return full[len(context) :]
        if not alone:
            raise ValueError(f"{where} ({text!r}) adds no token after the prompt")
        return list(alone)

    def single_token_variants(self, prompt: int, text: str) -> list[int]:
        """The ids of ``text``'s variant forms that are one token long."""
        found = []
        for form in variant_forms(text):
            try:
                ids = self.continuation(prompt, form, "variant")
            except ValueError:
                continue
            if len(ids) == 1:
                found.append(ids[0])
        return found


def _place(
    prompt: int,
    context: list[int],
    appended: list[list[int]],
    extra_rows: list[tuple[int, list[int]]],
) -> int:
    """The model row whose appended tokens start with ``context`` (extended or added)."""
    own = appended[prompt]
    if own[: len(context)] == context:
        return prompt
    if context[: len(own)] == own:
        appended[prompt] = list(context)
        return prompt
    for number, (owner, tokens) in enumerate(extra_rows):
        if owner != prompt:
            continue
        if tokens[: len(context)] == context:
            return len(appended) + number
        if context[: len(tokens)] == tokens:
            extra_rows[number] = (owner, list(context))
            return len(appended) + number
    extra_rows.append((prompt, list(context)))
    return len(appended) + len(extra_rows) - 1


def _pad(rows: list[list[int]], pad_id: int, left: bool) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(row) for row in rows)
    ids, mask = [], []
    for row in rows:
        pad = width - len(row)
        ids.append([pad_id] * pad + row if left else row + [pad_id] * pad)
        mask.append([0] * pad + [1] * len(row) if left else [1] * len(row) + [0] * pad)
    return torch.tensor(ids, dtype=torch.long), torch.tensor(mask, dtype=torch.long)


def encoder_for(
    tokenizer: Any, prompts: list[str], prompt_ids: list[list[int]] | None = None
) -> Any:
    """The tokenizer's view of texts that follow prompts (answers, foils, targets): an object
    with ``continuation(prompt, text, where) -> token ids``."""
    return _Encoder(tokenizer, prompts, prompt_ids)
