"""Activation patching seen through the lens: ``patch_lens(model, prompt, layer=, position=, source=)``.

One block output of one prompt is overwritten at one position (with another prompt's, with
zeros, or with a mean), the forward pass runs on through the remaining layers, and the lens of
every layer is read from that patched run and compared with the clean one, cell by cell: a
:class:`PatchComparison` (a :class:`~murano_widgets.LensComparison` whose ``a`` is the clean
lens and ``b`` the patched one), which ``show_lens_diff`` shows as it is.

How it runs: the :class:`~murano_widgets.LogitLens` step, once, on the batch
``[prompt, prompt, *source prompts]``: row 0 is the clean run, row 1 the patched one (every
model row of it: a multi-token answer's extra rows too) and the rest are only read (prompt B's
block output, the prompts a mean is taken over). The intervention runs inside the step's one
trace (:attr:`LogitLens.intervention`), before the block's output is read, so the lens of the
patched layer itself already reads the patched state; with ``remote=True`` it runs on NDIF
with the rest of the trace. Clean and patched rows run side by side in one batch, so the cells
outside the patch's causal cone (rows below ``layer``, positions before ``position``) are the
same computation on the same numbers, equal up to the last bits (a GEMM may round a row by
where it falls in the batch: MKL's AVX2 kernels do, by about 1e-7; the tests check them at
that tolerance).

The two results are the step's own (every field of :class:`~murano_widgets.LogitLensResult`,
teacher-forced answers included). The comparison's per-cell numbers (the chosen token's
probability under both, KL(clean ‖ patched) in bits) come from the step's pair reduction
(:func:`~murano_widgets.step.reductions.reduce_pair`, as in ``compare_lenses``) on the block
outputs of the clean and the patched row, so they are known at every cell, also where the
chosen token left the patched run's top-k (``compare(a, b)`` from the two results alone could
not know them there, and that is where a patch acts). Locally those block outputs are saved
and reduced after the trace in chunks; with ``remote=True`` they are reduced inside the trace
and only ``[n_layers, seq]`` numbers come back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import nnsight
import numpy as np
import torch

from murano_widgets._checks import check_bool, check_int, check_model, check_str
from murano_widgets.comparison.compare import LensComparison, _assemble, _plan
from murano_widgets.lenses import as_lens
from murano_widgets.results.combine import select_prompts
from murano_widgets.results.result import LogitLensResult
from murano_widgets.step.inputs import InputPlan, plan_inputs
from murano_widgets.step.logit_lens import DEFAULT_MAX_CHUNK_BYTES, LogitLens
from murano_widgets.step.reductions import Buffers, chunks, reduce_pair
from murano_widgets.types import check_encodable, validate_answers, validate_prompts

__all__ = ["PATCH_SOURCES", "Patch", "PatchComparison", "patch_lens"]

#: The sources that are not a prompt: zero ablation and mean ablation.
PATCH_SOURCES = ("zero", "mean")

# The batch: the clean prompt, its patched copy, then the prompts that are only read.
_CLEAN, _PATCHED, _FIRST_SOURCE = 0, 1, 2


@dataclass(frozen=True)
class Patch:
    """What was patched, and with what.

    Attributes:
        layer: The block whose output was overwritten (``0`` to ``n_layers - 1``).
        position: The position in the prompt's tokens (``0`` to ``length - 1``, the index
            into ``comparison.a.input_words[0]``).
        source: ``"prompt"`` (another prompt's block output), ``"zero"`` or ``"mean"``.
        source_prompt: The prompt whose block output was copied in (with ``"prompt"``).
        source_position: Its position there (with ``"prompt"``).
        mean_over: The prompts the mean was taken over (with ``"mean"``; ``None``: every
            position of the patched prompt itself).
        token: The patched prompt's token at ``position``, as the tokenizer decodes it.
        source_token: The source prompt's token at ``source_position`` (with ``"prompt"``).
    """

    layer: int
    position: int
    source: str
    source_prompt: str | None = None
    source_position: int | None = None
    mean_over: tuple[str, ...] | None = None
    token: str = ""
    source_token: str | None = None

    def describe(self) -> str:
        """One sentence: which block output was overwritten, with what."""
        where = f"block {self.layer}'s output at position {self.position} ({self.token!r})"
        if self.source == "zero":
            return f"{where} set to zero"
        if self.source == "mean":
            over = (
                "every position of this prompt"
                if self.mean_over is None
                else f"every position of {len(self.mean_over)} prompt"
                + ("s" if len(self.mean_over) != 1 else "")
            )
            return f"{where} set to its mean over {over}"
        return (
            f"{where} replaced by prompt B's at position {self.source_position} "
            f"({self.source_token!r}): {_short(self.source_prompt)}"
        )


@dataclass(repr=False)
class PatchComparison(LensComparison):
    """The lens of a prompt with and without a patch: ``a`` is the clean run, ``b`` the
    patched one, on the prompt's grid ``[n_layers, 1, seq]`` (see :class:`LensComparison`).

    Every cell is known (``aligned`` is true wherever the lens has a value): ``delta_prob``
    and ``kl_a_to_b`` (KL(clean ‖ patched), bits) were reduced from both runs' block outputs.
    Below the patched layer and before the patched position they are 0: the patch cannot reach
    those cells.

    Attributes:
        patch: What was patched (:class:`Patch`).
        (and every attribute of :class:`LensComparison`.)
    """

    patch: Patch | None = None

    @property
    def answer_probs_clean(self) -> torch.Tensor | None:
        """``[n_layers]`` the answer's probability (its first answer set; the whole answer,
        teacher-forced, at the prompt's last position) under each row's lens, clean run; or
        ``None`` without answers."""
        probs = self.a.answer_probs
        return None if probs is None else probs[:, 0]

    @property
    def answer_probs_patched(self) -> torch.Tensor | None:
        """The same in the patched run."""
        probs = self.b.answer_probs
        return None if probs is None else probs[:, 0]

    @property
    def answer_prob_clean(self) -> float | None:
        """The model's own probability of the answer (its last layer's row), clean run;
        ``None`` without answers or when the rows leave out the model's last layer."""
        return self._at_last(self.answer_probs_clean)

    @property
    def answer_prob_patched(self) -> float | None:
        """The model's own probability of the answer, patched run (as
        :attr:`answer_prob_clean`)."""
        return self._at_last(self.answer_probs_patched)

    def _at_last(self, probs: torch.Tensor | None) -> float | None:
        last = (self.a.n_model_layers or 0) - 1
        if probs is None or last not in self.layers:
            return None
        return float(probs[self.layers.index(last)])

    def __repr__(self) -> str:
        patch = self.patch.describe() if self.patch else "?"
        answer = ""
        if self.answer_prob_clean is not None:
            words = (self.a.answers or [[""]])[0] or [""]
            answer = (
                f", answer {words[0]!r}: {self.answer_prob_clean:.4g} → "
                f"{self.answer_prob_patched:.4g}"
            )
        return f"PatchComparison({list(self.delta_prob.shape)}, {patch}{answer})"


def patch_lens(
    model: Any,
    prompt: str,
    *,
    layer: int,
    position: int,
    source: str,
    source_position: int | None = None,
    mean_over: str | Sequence[str] | None = None,
    answers: Any = None,
    lens: Any = None,
    layers: Sequence[int] | str = "all",
    token: int | str | None = None,
    top_k: int = 5,
    max_chunk_bytes: int = DEFAULT_MAX_CHUNK_BYTES,
    remote: bool = False,
    reduce_in_trace: bool | None = None,
) -> PatchComparison:
    """The lens of ``prompt`` with and without a patch of block ``layer``'s output at ``position``.

    Args:
        model: The model (a :class:`~murano_widgets.MuranoModel`).
        prompt: The one prompt patched (a string).
        layer: The block whose output (its ``resid_post``) is overwritten; negative indices
            count from the end.
        position: The position in ``prompt``'s tokens (as the result's ``input_words`` show
            them, a BOS token included where the tokenizer adds one); negative positions count
            from the end (-1: the last token).
        source: What goes in there:

            - a prompt (any other string): activation patching, the block output of that
              prompt ("prompt B") at the same layer, at ``source_position``;
            - ``"zero"``: zero ablation;
            - ``"mean"``: mean ablation, the block output's mean (at the same layer) over every
              real position of the prompts ``mean_over`` (default: of ``prompt`` itself, its
              patched position included).

            A prompt whose text is exactly ``"zero"`` or ``"mean"`` cannot be a source.
        source_position: With a prompt source: the position in prompt B's tokens, counted as
            ``position`` is (negative from B's end). Default ``position``: the same index
            from the start, or from the end when ``position`` is negative, so
            ``position=-1`` pairs the two last tokens whatever the lengths. It must exist in
            B; when the prompts differ in length, say which end to count from.
        mean_over: With ``source="mean"``: the prompts the mean is taken over (a string or a
            list), every real position of each; ``None`` for ``prompt``'s own positions.
        answers: ``prompt``'s answer as the step takes answers, one entry for the one prompt:
            ``[" Paris"]``, ``[[" Paris", " paris"]]`` (accepted alternatives) or named sets
            ``{"capital": [" Paris"]}``. Scored teacher-forced in both runs (the answer's
            tokens follow the prompt, after the patch); see
            :attr:`PatchComparison.answer_prob_clean` and ``answer_prob_patched``.
        lens: One lens for both runs (``None``: the logit lens; a tuned or Jacobian lens).
        layers: The rows read (``"all"`` or a list), as for the step; the patch itself may be
            at any layer.
        token: The token whose probability ``delta_prob`` follows: ``None`` for the clean
            run's own prediction at each position (the model's output, clean), a token id,
            or one token's text.
        top_k, max_chunk_bytes: As for :class:`~murano_widgets.LogitLens`.
        remote: Run on NDIF (nnsight's remote execution): the patch and every reduction
            run inside the one trace there, and only reduced fields come back.
        reduce_in_trace: As for :class:`~murano_widgets.LogitLens` (default ``remote``).

    Returns:
        A :class:`PatchComparison`: ``a`` the clean lens, ``b`` the patched one (each a
        one-prompt :class:`~murano_widgets.LogitLensResult`), ``delta_prob``, ``kl_a_to_b``,
        ``top1_differs`` per cell, the answer's probability before and after, and ``patch``.

    Raises:
        TypeError, ValueError: Before any model work, naming the argument, what was given and
            what is allowed: a prompt that is not one non-empty string; ``layer`` out of range;
            ``position`` or ``source_position`` outside the prompt's (or B's) tokens;
            ``source`` that is neither a prompt nor ``"zero"`` nor ``"mean"``;
            ``source_position`` without a prompt source, ``mean_over`` without ``"mean"``;
            ``lens`` as several named lenses; bad ``answers``, ``layers``, ``token``,
            ``top_k`` or ``max_chunk_bytes``.
        RuntimeError: If the step ran without running the patch (a step path without an
            nnsight trace).
    """
    check_model(model)
    n_layers = int(model.n_layers)
    if not isinstance(prompt, str):
        raise TypeError(
            "prompt must be one string (patch_lens patches one prompt), got "
            f"{type(prompt).__name__} {prompt!r:.60}"
        )
    if not prompt.strip():
        raise ValueError(
            f"prompt is empty or only white space ({prompt!r}): it needs at least one visible "
            "character"
        )
    check_encodable(prompt, "prompt")
    layer = _check_signed("layer", layer, n_layers, f"a model with {n_layers} layers")
    position = _check_int_type("position", position)
    kind, sources = _check_source(source, source_position, mean_over)
    if source_position is not None:
        source_position = _check_int_type("source_position", source_position)
    answer_sets = None if answers is None else validate_answers(answers, 1)
    if isinstance(lens, Mapping):
        as_lens(lens, model)  # raises, saying that one lens goes here
    remote = check_bool("remote", remote)
    token_id = _check_token(token, model)
    step = LogitLens(
        model,
        layers,
        top_k=top_k,
        max_chunk_bytes=max_chunk_bytes,
        remote=remote,
        reduce_in_trace=reduce_in_trace,
        lens=lens,
    )

    # The batch and its plan, as the step will make it (the same call): where every token sits.
    batch = [prompt, prompt, *sources]
    batch_answers = None
    if answer_sets is not None:
        batch_answers = {
            name: [entries[0], entries[0]] + [None] * len(sources)
            for name, entries in answer_sets.items()
        }
    if batch_answers is not None:
        batch_answers = validate_answers(batch_answers, len(batch))
    plan = plan_inputs(model.tokenizer, batch, batch_answers, None, False)
    lengths = [int(n) for n in plan.display_mask.sum(dim=1)]
    tokens_of = _token_texts(model.tokenizer, plan)
    given = position if source_position is None else source_position
    position = _resolve_position("position", position, lengths[_CLEAN], "the prompt", tokens_of(0))
    if kind == "prompt":
        source_position = _resolve_position(
            "source_position",
            given,
            lengths[_FIRST_SOURCE],
            "the source prompt",
            tokens_of(_FIRST_SOURCE),
            note="" if source_position is not None else " (the default: position)",
        )
    patch = Patch(
        layer=layer,
        position=position,
        source=kind,
        source_prompt=sources[0] if kind == "prompt" else None,
        source_position=source_position if kind == "prompt" else None,
        mean_over=tuple(sources) if kind == "mean" and sources else None,
        token=tokens_of(_CLEAN)[position],
        source_token=tokens_of(_FIRST_SOURCE)[source_position] if kind == "prompt" else None,
    )
    intervention = _Intervention(
        plan, patch, len(sources), step.layers, n_layers, step.lens, token_id, step.reduce_in_trace
    )

    step.intervention = intervention
    try:
        result = step.run(batch, batch_answers)
    finally:
        step.intervention = None
    assert isinstance(result, LogitLensResult)
    pair = intervention.pair_fields(model, max_chunk_bytes)

    side = model.tokenizer.padding_side
    clean = select_prompts(result, [_CLEAN], padding_side=side)
    patched = select_prompts(result, [_PATCHED], padding_side=side)
    if token_id is not None:
        # The chosen token is named in the views even where neither run ranks it in its top-k.
        text = model.tokenizer.decode([token_id], clean_up_tokenization_spaces=False)
        for side in (clean, patched):
            side.token_strings.setdefault(token_id, text)  # type: ignore[union-attr]
    chosen = pair["token"].view(1, -1)
    compared = _plan(clean, patched, "tokens", chosen)
    rule = (
        "final prediction of the clean run"
        if token_id is None
        else f"token {clean.token_strings.get(token_id, token_id)!r}"  # type: ignore[union-attr]
    )
    grid = tuple(clean.max_probs.shape)
    base = _assemble(
        compared,
        pair["token_prob_a"].view(grid),
        pair["token_prob_b"].view(grid),
        pair["kl"].view(grid),
        source="patched run",
    )
    values = {f.name: getattr(base, f.name) for f in dataclasses.fields(LensComparison)}
    values.update(
        token_rule=rule,
        alignment_note=f"Patched: {patch.describe()}.",
        labels=("clean", f"patched (L{patch.layer}, position {patch.position}, {kind})"),
    )
    return PatchComparison(**values, patch=patch)


# ---------------------------------------------------------------------------------------------
# Checks (before any model work)


def _check_int_type(name: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r:.60}")
    return int(value)


def _check_signed(name: str, value: Any, size: int, what: str) -> int:
    value = _check_int_type(name, value)
    if not -size <= value < size:
        raise ValueError(
            f"{name} is {value}, out of range for {what} (allowed: {-size} to {size - 1}; "
            "negative ones count from the end)"
        )
    return value % size


def _check_source(source: Any, source_position: Any, mean_over: Any) -> tuple[str, list[str]]:
    """The kind of source and the prompts it adds to the batch."""
    allowed = "a prompt (a non-empty string), 'zero' or 'mean'"
    if not isinstance(source, str):
        raise TypeError(f"source must be {allowed}; got {type(source).__name__} {source!r:.60}")
    kind = source if source in PATCH_SOURCES else "prompt"
    if kind == "prompt":
        if not source.strip():
            raise ValueError(f"source is empty or only white space ({source!r}); give {allowed}")
        check_encodable(source, "source")
    elif source_position is not None:
        raise ValueError(
            f"source_position is the position in a source prompt; source={source!r} has none "
            "(give source a prompt, or leave source_position out)"
        )
    if mean_over is not None and kind != "mean":
        raise ValueError(
            f"mean_over says what source='mean' averages over; source is {_short(source)} "
            "(give source='mean', or leave mean_over out)"
        )
    if kind == "prompt":
        return kind, [source]
    if kind == "mean" and mean_over is not None:
        over = [mean_over] if isinstance(mean_over, str) else mean_over
        return kind, validate_prompts(over, "mean_over")
    return kind, []


def _check_token(token: Any, model: Any) -> int | None:
    """``token`` as an id (``None`` stays ``None``: the clean run's own prediction)."""
    vocab = int(model.vocab_size)
    if token is None:
        return None
    if isinstance(token, str):
        check_str("token", token)
        ids = model.tokenizer.encode(token, add_special_tokens=False)
        if len(ids) != 1:
            raise ValueError(
                f"token {token!r} is {len(ids)} tokens to this tokenizer ({ids[:8]}); give one "
                "token's text or its id"
            )
        return int(ids[0])
    if isinstance(token, (bool, np.bool_)) or not isinstance(token, (int, np.integer)):
        raise TypeError(
            "token must be None (the clean run's prediction), a token id or one token's text; "
            f"got {type(token).__name__} {token!r:.60}"
        )
    return check_int("token", token, 0, vocab - 1, "the vocabulary size - 1")


def _token_texts(tokenizer: Any, plan: InputPlan) -> Any:
    """``tokens_of(prompt)``: that prompt's tokens as text, in order (for messages)."""

    def tokens_of(index: int) -> list[str]:
        ids = plan.display_ids[index][plan.display_mask[index].bool()].tolist()
        return [tokenizer.decode([i]) for i in ids]

    return tokens_of


def _resolve_position(
    name: str, value: int, length: int, whose: str, tokens: list[str], note: str = ""
) -> int:
    if not -length <= value < length:
        shown = ", ".join(f"{i}: {t!r}" for i, t in enumerate(tokens[:40]))
        more = ", ..." if len(tokens) > 40 else ""
        raise ValueError(
            f"{name} is {value}{note}, out of range for {whose}'s {length} tokens (allowed: "
            f"{-length} to {length - 1}; negative ones count from the end); its tokens are "
            f"[{shown}{more}]"
        )
    return value % length


def _short(text: str | None, limit: int = 40) -> str:
    if text is None:
        return "None"
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


# ---------------------------------------------------------------------------------------------
# The intervention, inside the step's trace


class _Intervention:
    """What :attr:`LogitLens.intervention` runs: the patch, and the clean and patched rows'
    block outputs read for the pair reduction.

    Built from the step's input plan (the same call the step makes), so it knows where every
    token of the batch sits: each model row's first real column (padding may be on either
    side), and which rows belong to the patched prompt (its own, and a multi-token answer's
    extra rows).
    """

    def __init__(
        self,
        plan: InputPlan,
        patch: Patch,
        n_sources: int,
        layers: list[int],
        n_layers: int,
        lens: Any,
        token: int | None,
        in_trace: bool,
    ) -> None:
        mask = plan.attention_mask
        starts = [int(torch.nonzero(row)[0]) for row in mask]
        lengths = [int(n) for n in plan.display_mask.sum(dim=1)]
        self.layer = patch.layer
        # Every model row of the patched prompt, at the patched position.
        rows = [r for r, p in enumerate(plan.row_prompt) if p == _PATCHED]
        self.target_rows = rows
        self.target_columns = [starts[r] + patch.position for r in rows]
        # Where the new value comes from: (rows, columns) whose mean it is (one cell for a
        # prompt), or nothing (zero).
        self.kind = patch.source
        if patch.source == "prompt":
            assert patch.source_position is not None
            self.source_rows = [_FIRST_SOURCE]
            self.source_columns = [starts[_FIRST_SOURCE] + patch.source_position]
        elif patch.source == "mean":
            over = range(_FIRST_SOURCE, _FIRST_SOURCE + n_sources) if n_sources else [_CLEAN]
            self.source_rows = [r for r in over for _ in range(lengths[r])]
            self.source_columns = [starts[r] + k for r in over for k in range(lengths[r])]
        else:
            self.source_rows, self.source_columns = [], []
        # The clean and the patched row are the same tokens, so the same columns.
        assert starts[_CLEAN] == starts[_PATCHED]
        self.columns = list(range(starts[_CLEAN], starts[_CLEAN] + lengths[_CLEAN]))
        self.width = int(mask.shape[1])
        self.n_rows = int(mask.shape[0])
        self.layers = list(layers)
        self.read_layers = sorted({*layers, n_layers - 1})
        self.n_layers = n_layers
        self.lens = lens
        self.token = token
        self.in_trace = in_trace
        self.states: dict[int, Any] = {}
        self.applied = 0
        self.reduced: Any = None

    def __call__(self, model: Any, index: int) -> None:
        """Inside the trace, at block ``index``, before the step reads its output."""
        if index == self.layer:
            output = model.layer(index)
            if tuple(output.shape[:2]) != (self.n_rows, self.width):
                raise RuntimeError(
                    f"patch_lens: block {index}'s output is {tuple(output.shape)}, not the "
                    f"[{self.n_rows}, {self.width}, d] batch it planned for"
                )
            self._patch(output)
            self.applied += 1
        if index in self.read_layers:
            output = model.layer(index)
            rows = torch.tensor([_CLEAN, _PATCHED], device=output.device)
            columns = torch.tensor(self.columns, device=output.device)
            pair = output.index_select(0, rows).index_select(1, columns)  # [2, seq, d]
            self.states[index] = pair if self.in_trace else nnsight.save(pair)

    def _patch(self, output: Any) -> None:
        device = output.device
        rows = torch.tensor(self.target_rows, device=device)
        columns = torch.tensor(self.target_columns, device=device)
        # The trace's code may run in another thread than the forward pass, where an enclosing
        # torch.inference_mode() is not in force; an inference tensor is written in it only.
        with torch.inference_mode() if output.is_inference() else torch.no_grad():
            if self.kind == "zero":
                value = torch.zeros_like(output[0, 0])
            else:
                cells = output[
                    torch.tensor(self.source_rows, device=device),
                    torch.tensor(self.source_columns, device=device),
                ]  # [cells, d], a copy
                value = cells[0] if self.kind == "prompt" else cells.float().mean(0)
            output[rows, columns] = value.to(output.dtype).expand(len(self.target_rows), -1)

    def reduce_in_trace(self, model: Any) -> dict[str, Any]:
        """Inside the trace, after every block: the pair reduction, on one chunk."""
        with torch.no_grad():
            return _pair_reduce(
                self.states,
                self.layers,
                self.n_layers,
                self.token,
                lambda layer, hidden, role, buffers: model.project_on_vocab(
                    # A lens that runs the model to read a state (a Patchscope) does it here.
                    self.lens.read_in_trace(model, layer, hidden, self.n_layers)
                    if hasattr(self.lens, "read_in_trace")
                    else self.lens.read(layer, hidden, self.n_layers)
                ),
                [slice(0, len(self.columns))],
            )

    def pair_fields(self, model: Any, max_chunk_bytes: int) -> dict[str, torch.Tensor]:
        """After the step's run: the pair's fields, reduced here (locally) or in the trace."""
        if self.in_trace:
            if self.reduced is None:
                raise RuntimeError(
                    "patch_lens: the step's trace did not hand back the patched run's "
                    "reduction; the patch may not have run"
                )
            return {key: torch.as_tensor(value).cpu() for key, value in self.reduced.items()}
        if self.applied != 1 or set(self.states) != set(self.read_layers):
            raise RuntimeError(
                "patch_lens: the step ran without running the patch (the patch ran "
                f"{self.applied} times and read layers {sorted(self.states)} of "
                f"{self.read_layers}); a step path without an nnsight trace cannot patch"
            )
        vocab = int(model.vocab_size)

        def logits(layer: int, hidden: torch.Tensor, role: str, buffers: Buffers) -> torch.Tensor:
            out = buffers.get(role, hidden.shape[0], vocab, hidden.device)
            return self.lens.logits(model, layer, hidden, self.n_layers, out=out)

        states = {layer: torch.as_tensor(value) for layer, value in self.states.items()}
        with torch.inference_mode():
            # Two [rows, vocab] logits and reduce_pair's scratch: the step's three buffers.
            fields = _pair_reduce(
                states,
                self.layers,
                self.n_layers,
                self.token,
                logits,
                list(chunks(max_chunk_bytes, vocab, len(self.columns))),
            )
        return {key: value.cpu() for key, value in fields.items()}


def _pair_reduce(
    states: dict[int, Any],
    layers: list[int],
    n_layers: int,
    token: int | None,
    logits_of: Any,
    slices: list[slice],
) -> dict[str, Any]:
    """The chosen token at each position, and per row and position its probability in the
    clean and the patched run and KL(clean ‖ patched) in bits.

    Args:
        states: ``{layer: [2, seq, d]}`` the clean (0) and patched (1) block outputs.
        layers: The rows.
        n_layers: The model's depth (the last layer gives the clean run's own prediction).
        token: A token id, or ``None`` for the clean run's own prediction at each position.
        logits_of: ``(layer, hidden, role, buffers) -> [rows, vocab]`` the lens's logits.
        slices: The chunks of positions.
    """
    last = n_layers - 1
    buffers = Buffers()
    tokens, prob_a, prob_b, kl = [], [], [], []
    for chunk in slices:
        if token is None:
            final = logits_of(last, states[last][0, chunk], "logits_a", buffers)
            finite = torch.isfinite(final).all(dim=-1)
            chosen = final.argmax(dim=-1).masked_fill(~finite, -1)
        else:
            hidden = states[last][0, chunk]
            chosen = torch.full((hidden.shape[0],), token, device=hidden.device)
        index = chosen.clamp_min(0).unsqueeze(-1)
        missing = chosen < 0
        per_row = []
        for layer in layers:
            a = logits_of(layer, states[layer][0, chunk], "logits_a", buffers)
            b = logits_of(layer, states[layer][1, chunk], "logits_b", buffers)
            pa, pb, bits = reduce_pair(a, b, index.to(a.device), buffers)
            per_row.append(
                (pa.masked_fill(missing, float("nan")), pb.masked_fill(missing, float("nan")), bits)
            )
        tokens.append(chosen)
        prob_a.append(torch.stack([row[0] for row in per_row]))
        prob_b.append(torch.stack([row[1] for row in per_row]))
        kl.append(torch.stack([row[2] for row in per_row]))
    return {
        "token": torch.cat(tokens),
        "token_prob_a": torch.cat(prob_a, dim=1),
        "token_prob_b": torch.cat(prob_b, dim=1),
        "kl": torch.cat(kl, dim=1),
    }
