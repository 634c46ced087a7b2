"""``LogitLensResult``: what the logit-lens step writes into the results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from murano_widgets.metrics import REDUCED_FIELDS
from murano_widgets.results.schema import (
    CELL,
    Spec,
    cell,
    nested,
    own,
    per_prompt,
    run,
    specs,
    tensor,
)
from murano_widgets.types import RESID_POST, Node

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["AnswerScores", "LogitLensResult"]

# Fields of shape [n_layers, n_inputs, seq] beyond the contract's max_probs/predicted_tokens:
# the registry's reduced fields.
_CELL_FIELDS = REDUCED_FIELDS


@dataclass(repr=False)
class AnswerScores:
    """How likely each prompt's answer is, layer by layer: one answer set of a result.

    An answer is scored teacher-forced: its tokens follow the prompt, and its probability at a
    layer is the product of that layer's probabilities of each of its tokens at the position
    that predicts it. The probability of an answer set is that of one event: "the
    continuation starts with one of the accepted token sequences" (the alternatives and, with
    ``variants=True``, the single-token forms with and without a leading space and with the
    first letter's case changed). A sequence that extends another accepted one adds nothing to
    that event and is not counted; the rest are disjoint and summed, so the value is at most 1
    (see :func:`murano_widgets.step.inputs.disjoint_sequences`).

    Attributes:
        answers: The accepted strings of each prompt, or ``None`` for a prompt with no answer.
        token_ids: The token sequences counted for each prompt, none a prefix of another
            (``None`` with no answer).
        probs: ``[n_layers, n_inputs]`` the answer's probability at the prompt's last real
            position. NaN where the prompt has no answer or the layer's cell has no value.
        ranks: ``[n_layers, n_inputs]`` the rank of its first token there (the best of the
            alternatives'; rank 0 is the top-1 token), -1 where there is none.
        token_probs: ``[n_layers, n_inputs, seq]`` the probability that the next token is
            one of the answer's first tokens, at every cell (each distinct id once).
        token_ranks: ``[n_layers, n_inputs, seq]`` their best rank at every cell.
    """

    answers: list[list[str] | None]
    token_ids: list[list[list[int]] | None]
    probs: torch.Tensor
    ranks: torch.Tensor
    token_probs: torch.Tensor
    token_ranks: torch.Tensor

    @property
    def first_token_ids(self) -> list[list[int]]:
        """The distinct first tokens counted for each prompt (empty with no answer)."""
        return [
            list(dict.fromkeys(ids[0] for ids in sequences)) if sequences else []
            for sequences in self.token_ids
        ]


@dataclass(repr=False)
class LogitLensResult:
    """The logit lens of a batch of prompts: per layer and position, what the model would predict.

    Rows follow ``addresses`` (ascending layer order). Padded positions
    (``attention_mask == 0``) hold no prediction: float fields are NaN there, token ids and
    ranks are -1 and words are ``""``.

    Attributes:
        all_probs: ``[n_layers, n_inputs, seq, vocab]`` softmax outputs, or ``None`` unless the
            step ran with ``store_full_probs=True``.
        max_probs: ``[n_layers, n_inputs, seq]`` the top-1 probabilities.
        predicted_tokens: ``[n_layers, n_inputs, seq]`` the top-1 token ids.
        predicted_words: The top-1 tokens decoded, ``[n_layers][n_inputs][seq]``.
        input_words: The input tokens decoded, ``[n_inputs][seq]``.
        attention_mask: ``[n_inputs, seq]``, 1 for real tokens and 0 for padding.
        addresses: One :class:`Node` per row, the block output (``resid_post``) of its layer.
        topk_tokens: ``[n_layers, n_inputs, seq, k]`` the top-k token ids, best first.
        topk_probs: ``[n_layers, n_inputs, seq, k]`` their probabilities.
        entropy: ``[n_layers, n_inputs, seq]`` the entropy of each layer's distribution, in bits.
        final_token_probs: ``[n_layers, n_inputs, seq]`` the probability each layer gives to the
            token the model finally predicts at that position.
        final_token_ranks: ``[n_layers, n_inputs, seq]`` that token's rank in the layer's
            distribution, counted from 0: **rank 0 is the top-1 token** (everywhere a rank is
            shown: widget, plot, ``selected``, CLI). -1 where there is no value.
        kl_to_final: ``[n_layers, n_inputs, seq]`` KL(final || layer) in bits.
        final_tokens: ``[n_inputs, seq]`` the model's own top-1 prediction at each position.
        input_ids: ``[n_inputs, seq]`` the token ids the model read.
        prompts: The prompts, in batch order.
        token_strings: The decoded text of every token id that appears in the result.
        vocab_size: The size of the model's vocabulary.
        model_name: Where the model was loaded from.
        n_model_layers: The model's number of decoder blocks (its last layer is
            ``n_model_layers - 1``), or ``None`` when unknown (a result from another library).
        lens_kind: Which kind of lens made the result (:attr:`murano_widgets.Lens.kind`:
            ``"logit"``, ``"tuned"``, or a kind of the user's).
        lens_provenance: Where the lens came from (a tuned lens's training and base model), if
            any.
        lens_title: What the views call that lens (:attr:`murano_widgets.Lens.title`), or
            ``None`` (a result from elsewhere: see :func:`murano_widgets.lenses.title_of`).
        targets: The strings tracked at every position (``LogitLens(targets=...)``).
        target_token_ids: The token ids counted for each target: its first token (and, with
            ``variants=True``, its single-token variants).
        target_probs: ``[n_layers, n_inputs, seq, n_targets]`` each target's probability.
        target_ranks: ``[n_layers, n_inputs, seq, n_targets]`` its rank (the best of the ids
            counted; rank 0 is the top-1 token).
        answer_sets: The scores of each answer set (``PromptBatch(answers=...)``), by name; a
            plain list of answers is the one set ``"answer"``.
        generated_texts: The text the model generated after each prompt
            (``show_logit_lens(..., generate=N)``; special tokens left out), or ``None``.
        generation_starts: Where each prompt's generated tokens start: the position, among the
            prompt's real tokens, of the first generated one (every position from there on was
            generated), or ``None``.
        token_roles: Each real token's role in a chat (``show_logit_lens(..., chat=...)``):
            ``"system"``, ``"user"``, ``"assistant"`` (generated tokens too), another message
            role, or ``"template"`` for the chat template's own tokens; ``[n_inputs][length]``
            over each prompt's real positions, or ``None``.

        component_labels: With ``LogitLens(decompose=True)``: the components, in model order:
            ``"embed"`` (everything that enters block 0), then per layer ``"L3.attn"`` and
            ``"L3.mlp"``; with ``heads=True``, ``"L3.H0"`` ... and ``"L3.attn_bias"`` (the
            output projection's bias) in place of ``"L3.attn"``. They cover every layer of the
            model, whatever rows were asked for.
        contributions: ``[n_layers, n_inputs, seq, n_components]`` each component's direct
            contribution to the logit of the cell's top-1 token under that row's lens (the
            readout linearised at the cell: the final norm's scale from the cell's own state).
            NaN for the components after the row's point and at cells without a value.
        contribution_bias: ``[n_layers, n_inputs, seq]`` what no component wrote (a lens's
            translator bias, the final norm's bias, the unembedding's bias):
            ``contributions.nansum(-1) + contribution_bias == top1_logits``.
        top1_logits: ``[n_layers, n_inputs, seq]`` the top-1 token's lens logit, before a final
            soft-cap (``logit_softcap``).
        answer_contributions: ``[n_components, n_inputs]`` each component's direct contribution
            to the logit of each prompt's answer (its first answer set's first accepted
            string's first token), minus its foil's (``PromptBatch(foils=...)``), at the
            prompt's last position under the model's own readout. NaN without an answer.
        answer_contribution_bias: ``[n_inputs]`` the bias term of the same.
        answer_token_contributions: ``[n_layers, n_inputs, seq, n_components]`` the same at
            every cell, under the row's lens (the answer's first token as the next token, minus
            the foil's); ``answer_token_bias`` ``[n_layers, n_inputs, seq]``.
        answer_row_contributions: ``[n_layers, n_inputs, n_components]`` the same at the last
            position under every row's lens; ``answer_row_bias`` ``[n_layers, n_inputs]``.
        target_contributions: ``[n_layers, n_inputs, seq, n_targets, n_components]`` each
            component's contribution to each target's (first) token at every cell;
            ``target_bias`` ``[n_layers, n_inputs, seq, n_targets]``.
        foils: The foil of each prompt, when the contributions are to answer − foil.
        logit_softcap: The final soft-cap the attributed logits stop before (Gemma 2), if any.
        group_names: The token groups' names (``LogitLens(groups=...)``), in order.
        group_token_ids: Per prompt, each group's token ids (a group given as one word per
            prompt has each prompt's word's tokens; a :class:`~murano_widgets.TokenGroup` for
            every prompt has the same in each).
        group_probs: ``[n_layers, n_inputs, seq, n_groups]`` each group's probability: the
            probability that the next token is one of its tokens (each token counted once, so
            in [0, 1]).
        logit_diff: ``[n_layers, n_inputs, seq]`` with answers and foils
            (``PromptBatch(foils=...)``): the lens logit of the answer's first token minus that
            of the foil's first token, at every cell; NaN for a prompt without a foil.

    Cells without a value: padding, and cells whose logits were not finite (NaN or infinite
    somewhere in the model), hold NaN, -1 and ``""``. Where the model's own output at a position
    was not finite, ``final_tokens`` is -1 and the final-based fields (``final_token_probs``,
    ``final_token_ranks``, ``kl_to_final``) have no value in any layer.
    """

    all_probs: torch.Tensor | None = cell("vocab", required=True)
    max_probs: torch.Tensor = cell(required=True)
    predicted_tokens: torch.Tensor = cell(fill="-1", required=True)
    predicted_words: list[list[list[str]]] = nested(*CELL, required=True)
    input_words: list[list[str]] = nested("prompt", "seq", shared=True, required=True)
    attention_mask: torch.Tensor = tensor("prompt", "seq", fill="0", shared=True, required=True)
    addresses: list[Node] = run(shared=True, required=True)
    topk_tokens: torch.Tensor | None = cell("k", fill="-1")
    topk_probs: torch.Tensor | None = cell("k")
    entropy: torch.Tensor | None = cell()
    final_token_probs: torch.Tensor | None = cell()
    final_token_ranks: torch.Tensor | None = cell(fill="-1")
    kl_to_final: torch.Tensor | None = cell()
    final_tokens: torch.Tensor | None = tensor("prompt", "seq", fill="-1", shared=True)
    input_ids: torch.Tensor | None = tensor("prompt", "seq", fill="pad_id", shared=True)
    prompts: list[str] | None = per_prompt(shared=True)
    token_strings: dict[int, str] | None = own()
    vocab_size: int | None = run()
    model_name: str | None = run()
    n_model_layers: int | None = run()
    lens_kind: str | None = run()
    lens_provenance: dict[str, Any] | None = run()
    lens_title: str | None = run()
    targets: list[str] | None = run()
    target_token_ids: list[list[int]] | None = run()
    target_probs: torch.Tensor | None = cell("target")
    target_ranks: torch.Tensor | None = cell("target", fill="-1")
    answer_sets: dict[str, AnswerScores] | None = own()
    generated_texts: list[str] | None = per_prompt()
    generation_starts: list[int] | None = per_prompt()
    token_roles: list[list[str]] | None = per_prompt()
    component_labels: list[str] | None = run()
    contributions: torch.Tensor | None = cell("component")
    contribution_bias: torch.Tensor | None = cell()
    top1_logits: torch.Tensor | None = cell()
    answer_contributions: torch.Tensor | None = tensor("component", "prompt", answers=True)
    answer_contribution_bias: torch.Tensor | None = tensor("prompt", answers=True)
    answer_token_contributions: torch.Tensor | None = cell("component", answers=True)
    answer_token_bias: torch.Tensor | None = cell(answers=True)
    answer_row_contributions: torch.Tensor | None = tensor(
        "layer", "prompt", "component", answers=True
    )
    answer_row_bias: torch.Tensor | None = tensor("layer", "prompt", answers=True)
    target_contributions: torch.Tensor | None = cell("target", "component")
    target_bias: torch.Tensor | None = cell("target")
    foils: list[str | None] | None = per_prompt(answers=True)
    logit_softcap: float | None = run()
    group_names: list[str] | None = run()
    group_token_ids: list[list[list[int]]] | None = per_prompt()
    group_probs: torch.Tensor | None = cell("group")
    logit_diff: torch.Tensor | None = cell(answers=True)

    def _first_set(self) -> AnswerScores | None:
        return next(iter(self.answer_sets.values())) if self.answer_sets else None

    @property
    def answers(self) -> list[list[str] | None] | None:
        """The first answer set's accepted strings per prompt, or ``None``."""
        first = self._first_set()
        return None if first is None else first.answers

    @property
    def answer_probs(self) -> torch.Tensor | None:
        """``[n_layers, n_inputs]`` the first answer set's probabilities (teacher-forced)."""
        first = self._first_set()
        return None if first is None else first.probs

    @property
    def answer_ranks(self) -> torch.Tensor | None:
        """``[n_layers, n_inputs]`` the rank of the first answer set's first token."""
        first = self._first_set()
        return None if first is None else first.ranks

    @property
    def answer_token_probs(self) -> torch.Tensor | None:
        """``[n_layers, n_inputs, seq]`` the first answer set's first-token probability."""
        first = self._first_set()
        return None if first is None else first.token_probs

    @property
    def answer_token_ranks(self) -> torch.Tensor | None:
        """``[n_layers, n_inputs, seq]`` the first answer set's first-token rank."""
        first = self._first_set()
        return None if first is None else first.token_ranks

    @property
    def layers(self) -> list[int]:
        """The model layer of each row."""
        return [node.layer for node in self.addresses]

    @property
    def n_inputs(self) -> int:
        """The number of prompts."""
        return int(self.attention_mask.shape[0])

    @property
    def lengths(self) -> list[int]:
        """The number of real (non-padding) tokens of each prompt."""
        return [int(n) for n in self.attention_mask.sum(dim=1).tolist()]

    def positions(self, prompt: int) -> torch.Tensor:
        """The padded-sequence indices of ``prompt``'s real tokens, in order."""
        return torch.nonzero(self.attention_mask[prompt], as_tuple=False).flatten()

    def validate(self) -> LogitLensResult:
        """Checks that the fields' shapes agree with each other.

        Returns:
            The result itself.

        Raises:
            ValueError: Naming the first field whose shape disagrees.
        """
        if not isinstance(self.attention_mask, torch.Tensor) or self.attention_mask.dim() != 2:
            shape = tuple(getattr(self.attention_mask, "shape", ()))
            raise ValueError(f"attention_mask must be a [n_inputs, seq] tensor, got shape {shape}")
        n_inputs, seq = self.attention_mask.shape
        n_layers = len(self.addresses)
        if n_layers == 0:
            raise ValueError("LogitLensResult has no layers (addresses is empty): nothing to show")
        if n_inputs == 0:
            raise ValueError("LogitLensResult has no prompts (attention_mask has 0 rows)")
        for index, node in enumerate(self.addresses):
            if not isinstance(node, Node):
                raise ValueError(
                    f"LogitLensResult.addresses[{index}] must be a Node, got "
                    f"{type(node).__name__} {node!r}"
                )
        sizes = {
            "layer": n_layers,
            "prompt": n_inputs,
            "seq": seq,
            "target": len(self.targets or []),
            "group": len(self.group_names or []),
        }
        if self.component_labels is not None:
            sizes["component"] = len(self.component_labels)
        if self.target_token_ids is not None and len(self.target_token_ids) != sizes["target"]:
            raise ValueError(
                f"LogitLensResult.target_token_ids has {len(self.target_token_ids)} entries "
                f"for {sizes['target']} targets"
            )
        for name, spec in SPECS.items():
            value = getattr(self, name)
            if spec.role == "tensor" and value is not None:
                _check_tensor(name, spec, value, sizes)
            elif spec.role == "nested":
                _check_nested(name, value, tuple(sizes[axis] for axis in spec.axes))
            elif spec.role == "per_prompt" and value is not None:
                _check_per_prompt(name, value, n_inputs)
        for set_name, scores in (self.answer_sets or {}).items():
            _check_answer_set(set_name, scores, (n_layers, n_inputs, seq))
        _check_generation_fields(self)
        return self

    def describe_cell(self, prompt: int, layer_index: int, position: int) -> dict[str, Any]:
        """Everything the result knows of one cell, as plain Python values.

        Args:
            prompt: The prompt's index.
            layer_index: The row (an index into :attr:`layers`).
            position: The position among the prompt's real tokens (padding excluded).

        Returns:
            ``prompt``, ``layer_index``, ``layer`` (the model layer), ``address`` (the row's
            address, ``"L3.resid_mid"``: only when the result has rows other than block
            outputs, ``sites=("resid_mid", "resid_post")``, where a layer has two), ``position``,
            ``sequence_index`` (into the padded tensors), ``input_token``, ``predicted_token``,
            ``probability``, ``top_k`` ((token, probability) pairs) and each per-cell field
            the result has (``entropy``, ``final_token_probs``, ``final_token_ranks``: rank 0
            is the top-1 token, ``kl_to_final``); ``targets`` (each target's ``prob`` and
            ``rank``), ``groups`` (each token group's probability, by name) and ``answers``
            (per answer set: its first token's ``token_prob`` and
            ``token_rank``, and at the prompt's last position the whole answer's ``prob`` and
            ``rank``) when the result has them; ``generated`` (whether the model generated
            the token) and ``role`` (its chat role) when the result records them. Missing
            values are NaN or -1.

        Raises:
            ValueError: For an index out of range.
        """
        from murano_widgets._checks import check_index

        prompt = check_index("prompt", prompt, self.n_inputs, "prompts")
        row = check_index("layer_index", layer_index, len(self.addresses), "rows")
        positions = self.positions(prompt).tolist()
        position = check_index(
            "position", position, len(positions), f"real tokens in prompt {prompt}"
        )
        seq = positions[position]
        at = (row, prompt, seq)
        described: dict[str, Any] = {
            "prompt": prompt,
            "layer_index": row,
            "layer": self.layers[row],
            "position": position,
            "sequence_index": seq,
            "input_token": self.input_words[prompt][seq],
            "predicted_token": self.predicted_words[row][prompt][seq],
            "probability": float(self.max_probs[at]),
        }
        # A layer number alone does not say which of a layer's two rows (after its attention,
        # or its output) the cell is; a result of block outputs alone describes as it did.
        if any(node.module != RESID_POST for node in self.addresses):
            described["address"] = str(self.addresses[row])
        if (
            self.topk_tokens is not None
            and self.topk_probs is not None
            and self.token_strings is not None
        ):
            described["top_k"] = [
                (self.token_strings.get(int(token), ""), float(prob))
                for token, prob in zip(
                    self.topk_tokens[at].tolist(), self.topk_probs[at].tolist(), strict=True
                )
                if token >= 0
            ]
        for name in _CELL_FIELDS:
            field = getattr(self, name)
            if field is not None:
                described[name] = field[at].item()
        if self.targets and self.target_probs is not None and self.target_ranks is not None:
            described["targets"] = {
                target: {"prob": float(prob), "rank": int(rank)}
                for target, prob, rank in zip(
                    self.targets,
                    self.target_probs[at].tolist(),
                    self.target_ranks[at].tolist(),
                    strict=True,
                )
            }
        if self.group_names and self.group_probs is not None:
            described["groups"] = dict(
                zip(self.group_names, self.group_probs[at].tolist(), strict=True)
            )
        if self.generation_starts is not None:
            described["generated"] = position >= self.generation_starts[prompt]
        if self.token_roles is not None:
            described["role"] = self.token_roles[prompt][position]
        if self.answer_sets:
            last = position == len(positions) - 1
            described["answers"] = {
                name: {
                    "answers": scores.answers[prompt],
                    "token_prob": float(scores.token_probs[at]),
                    "token_rank": int(scores.token_ranks[at]),
                    # The whole answer, teacher-forced, is scored where the prompt ends.
                    **(
                        {
                            "prob": float(scores.probs[row, prompt]),
                            "rank": int(scores.ranks[row, prompt]),
                        }
                        if last
                        else {}
                    ),
                }
                for name, scores in self.answer_sets.items()
            }
        return described

    def plot(
        self,
        prompt: int = 0,
        layers: Any = None,
        metric: str = "prob",
        ax: Any = None,
        **options: Any,
    ) -> Figure:
        """Draws the static heatmap of one prompt (see :func:`murano_widgets.plot_logit_lens`).

        Args:
            prompt, layers, metric, ax: As for :func:`~murano_widgets.plot_logit_lens`.
            **options: Its keyword-only options (``max_token_chars``, ``marks``,
                ``hide_template``).
        """
        from murano_widgets.plot import plot_logit_lens

        return plot_logit_lens(self, prompt=prompt, layers=layers, metric=metric, ax=ax, **options)

    def __repr__(self) -> str:
        parts = []
        for name, spec in SPECS.items():
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, torch.Tensor):
                parts.append(f"{name}=Tensor{list(value.shape)}")
            elif name == "addresses":
                parts.append(f"layers={self.layers}")
            elif spec.role in ("nested", "per_prompt", "own"):
                parts.append(f"{name}=<{len(value)}>")
            else:
                parts.append(f"{name}={value!r}")
        return "LogitLensResult(" + ", ".join(parts) + ")"


#: Every field's layout (:mod:`murano_widgets.results.schema`), read from the class: a field
#: declared without one is refused here, when the package is imported.
SPECS: dict[str, Spec] = specs(LogitLensResult)

#: What a cell without a value holds, by the spec's ``fill`` (``pad_id`` is the caller's).
_FILLS: dict[str, float | int] = {"nan": float("nan"), "-1": -1, "0": 0}


def fill_value(spec: Spec, pad_id: int) -> float | int:
    """What a field holds where a cell has no value (padding): its spec's ``fill``."""
    return pad_id if spec.fill == "pad_id" else _FILLS[spec.fill]


def _check_tensor(name: str, spec: Spec, value: Any, sizes: dict[str, int]) -> None:
    """``value`` is a tensor of ``spec``'s axes: each named size as the result's, and the
    sizes only a field sets (``k``, ``vocab``) the same in every field that has them."""
    if not isinstance(value, torch.Tensor):
        raise ValueError(f"LogitLensResult.{name} must be a tensor, got {type(value).__name__}")
    shape = tuple(value.shape)
    if len(shape) != len(spec.axes):
        raise ValueError(
            f"LogitLensResult.{name} has shape {shape}, but it is [{', '.join(spec.axes)}]"
        )
    for axis, size in zip(spec.axes, shape, strict=True):
        sizes.setdefault(axis, size)
    expected = tuple(sizes[axis] for axis in spec.axes)
    if shape != expected:
        raise ValueError(
            f"LogitLensResult.{name} has shape {shape}, but addresses and attention_mask "
            f"(and the labels of its axes [{', '.join(spec.axes)}]) imply {expected}"
        )
    if spec.fill == "nan" and not value.is_floating_point():
        raise ValueError(f"LogitLensResult.{name} must hold floats, got {value.dtype}")


def _check_per_prompt(name: str, value: Any, n_inputs: int) -> None:
    if not isinstance(value, list) or len(value) != n_inputs:
        got = f"{len(value)} entries" if isinstance(value, list) else repr(value)
        raise ValueError(
            f"LogitLensResult.{name} must be a list with one entry per prompt "
            f"({n_inputs}: attention_mask's rows), got {_short(got)}"
        )


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check_generation_fields(result: LogitLensResult) -> None:
    """Generation starts inside each prompt, and one role per real token."""
    lengths = result.lengths
    for p, start in enumerate(result.generation_starts or []):
        if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start <= lengths[p]:
            raise ValueError(
                f"LogitLensResult.generation_starts[{p}] must be an int from 0 to "
                f"{lengths[p]} (the prompt's real tokens), got {start!r}"
            )
    for p, roles in enumerate(result.token_roles or []):
        if not isinstance(roles, list) or len(roles) != lengths[p]:
            got = len(roles) if isinstance(roles, list) else type(roles).__name__
            raise ValueError(
                f"LogitLensResult.token_roles[{p}] must hold one role per real token "
                f"({lengths[p]}), got {got}"
            )
        for j, role in enumerate(roles):
            if not isinstance(role, str) or not role:
                raise ValueError(
                    f"LogitLensResult.token_roles[{p}][{j}] must be a role name, got {role!r}"
                )


def _check_answer_set(name: str, scores: Any, cell: tuple[int, int, int]) -> None:
    where = f"LogitLensResult.answer_sets[{name!r}]"
    if not isinstance(scores, AnswerScores):
        raise ValueError(f"{where} must be an AnswerScores, got {type(scores).__name__}")
    shapes = {
        "probs": cell[:2],
        "ranks": cell[:2],
        "token_probs": cell,
        "token_ranks": cell,
    }
    for field_name, shape in shapes.items():
        value = getattr(scores, field_name)
        if not isinstance(value, torch.Tensor) or tuple(value.shape) != shape:
            got = tuple(value.shape) if isinstance(value, torch.Tensor) else type(value).__name__
            raise ValueError(f"{where}.{field_name} has shape {got}, expected {shape}")
    for field_name in ("answers", "token_ids"):
        value = getattr(scores, field_name)
        if not isinstance(value, list) or len(value) != cell[1]:
            raise ValueError(f"{where}.{field_name} must be a list with one entry per prompt")


def _check_nested(name: str, value: Any, shape: tuple[int, ...]) -> None:
    """Checks every level of a nested list against ``shape`` (ragged rows included)."""

    def check(level: Any, depth: int, where: str) -> None:
        size = shape[depth]
        if not isinstance(level, (list, tuple)) or len(level) != size:
            got = f"{len(level)} entries" if isinstance(level, (list, tuple)) else repr(level)
            raise ValueError(
                f"LogitLensResult.{name}{where} has {got}, expected {size} (shape {shape})"
            )
        if depth + 1 < len(shape):
            for index, item in enumerate(level):
                check(item, depth + 1, f"{where}[{index}]")
        else:
            for index, item in enumerate(level):
                if not isinstance(item, str):
                    raise ValueError(
                        f"LogitLensResult.{name}{where}[{index}] must be a string, got "
                        f"{type(item).__name__} {item!r}"
                    )

    check(value, 0, "")
