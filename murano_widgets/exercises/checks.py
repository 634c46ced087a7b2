"""One check per core idea: the student's numbers against the package's, and their mistake named.

Each check takes what the student computed (an array, or a function the check calls with the
check's own inputs) and the inputs it was computed on. It computes the correct answer with the
package (``run_logit_lens``, its decomposition, the backend's final norm and unembedding) and,
when the student's numbers differ, rebuilds each known mistake from the same model and prompt:
numbers that match one get that mistake named in one sentence with a hint. A pass prints one
line; a failure raises ``AssertionError`` with the message alone.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import torch

from murano_widgets._checks import check_int, check_model, check_str
from murano_widgets.exercises._reference import States, continuation_id, raw_logits, states
from murano_widgets.groups import TokenGroup
from murano_widgets.results.result import LogitLensResult

__all__ = [
    "check_dla",
    "check_group_prob",
    "check_kl_bits",
    "check_layer_probs",
    "check_logit_diff",
    "check_patch",
    "check_top1",
]

_LN2 = math.log(2.0)
_HALF = (torch.float16, torch.bfloat16)


@dataclass(frozen=True)
class _Mistake:
    """A known mistake: what a teacher would say, a hint, and the numbers it gives."""

    says: str
    hint: str
    numbers: torch.Tensor
    part: slice | None = None  # where the mistake shows (None: everywhere)


@dataclass(frozen=True)
class _Tolerance:
    atol: float
    rtol: float


def _tolerance(model: Any, kind: str) -> _Tolerance:
    """How far a correct answer may be from the reference: float32 rounding of another order
    of the same operations, or half precision's three digits on an accelerator."""
    half = model.dtype in _HALF
    if kind == "prob":
        return _Tolerance(model.SELF_CHECK_TOLERANCE.get(model.dtype, 1e-4), 0.0)
    if kind == "bits":
        return _Tolerance(0.05, 0.02) if half else _Tolerance(2e-4, 1e-3)
    return _Tolerance(0.1, 1e-2) if half else _Tolerance(1e-3, 1e-4)  # logits


def _fail(check: str, says: str, hint: str | None = None) -> NoReturn:
    message = f"{check}: {says}" + (f" Hint: {hint}" if hint else "")
    raise AssertionError(message) from None


def _passed(check: str, what: str) -> None:
    print(f"✓ {check} passed: {what}")


def _name(model: Any) -> str:
    """The model's name, a local folder's by its last part (the demo model's is a long path)."""
    name = str(model.name)
    return Path(name).name if Path(name).is_absolute() else name


def _as_tensor(check: str, name: str, value: Any, integer: bool = False) -> torch.Tensor:
    """The student's answer as a CPU float64 (or int64) tensor."""
    if value is None:
        _fail(check, f"{name} is None.", "does your code end with `return ...`?")
    try:
        if isinstance(value, torch.Tensor):
            tensor = value.detach().cpu()
        else:
            tensor = torch.as_tensor(np.asarray(value))
    except (TypeError, ValueError, RuntimeError):
        _fail(check, f"{name} is not an array of numbers (got {type(value).__name__}).")
    if integer:
        if tensor.is_floating_point():
            if not bool((tensor == tensor.round()).all()):
                _fail(check, f"{name} should hold token ids (integers), not {tensor.dtype}.")
        elif tensor.dtype == torch.bool or tensor.is_complex():
            _fail(check, f"{name} should hold token ids (integers), not {tensor.dtype}.")
        return tensor.long()
    if not (tensor.is_floating_point() or tensor.dtype in (torch.int32, torch.int64)):
        _fail(check, f"{name} should hold numbers, not {tensor.dtype}.")
    return tensor.double()


def _close(given: torch.Tensor, want: torch.Tensor, tol: _Tolerance) -> bool:
    return (
        given.shape == want.shape
        and bool(torch.isfinite(given).all())
        and bool(torch.allclose(given, want.double(), atol=tol.atol, rtol=tol.rtol))
    )


def _judge(
    check: str,
    name: str,
    given: torch.Tensor,
    want: torch.Tensor,
    mistakes: list[_Mistake],
    tol: _Tolerance,
    axes: str,
) -> None:
    """Returns if ``given`` is ``want``; else fails, naming the first mistake it matches."""
    if given.shape != want.shape:
        _fail(
            check,
            f"{name} has shape {tuple(given.shape)}, but {tuple(want.shape)} was expected "
            f"({axes}).",
        )
    if _close(given, want, tol):
        return
    for mistake in mistakes:
        part = slice(None) if mistake.part is None else mistake.part
        numbers = mistake.numbers[part]
        # Held to its own scale: a mistake whose numbers are all near 0 (probabilities of two
        # unlikely tokens subtracted) must not take in any answer near 0.
        scale = float(numbers.abs().max()) if numbers.numel() else 0.0
        strict = _Tolerance(min(tol.atol, 1e-3 * scale), tol.rtol)
        if mistake.numbers.shape == want.shape and _close(given[part], numbers, strict):
            _fail(check, mistake.says, mistake.hint)
    if not bool(torch.isfinite(given).all()):
        _fail(check, f"{name} holds NaN or infinite values.", "look for a log of 0 or 0/0.")
    wrong = ~torch.isclose(given, want.double(), atol=tol.atol, rtol=tol.rtol)
    where = tuple(int(i) for i in torch.nonzero(wrong)[0])
    _fail(
        check,
        f"{name} is wrong at {int(wrong.sum())} of {want.numel()} entries; at index "
        f"{list(where)} it is {float(given[where]):.6g}, and {float(want[where]):.6g} was "
        "expected.",
        "no known mistake matches these numbers: compare your steps with the notebook's "
        "description, one at a time.",
    )


def _text(name: str, value: Any) -> str:
    """A check's text argument (a prompt, a word), checked."""
    text = check_str(name, value)
    assert text is not None  # check_str refuses None unless told otherwise
    return text


def _layer(model: Any, layer: Any) -> int:
    n = int(model.n_layers)
    value = check_int(
        "layer", layer, -n, n - 1, f"a model with {n} layers; negative counts from the end"
    )
    return value % n


def _call(value: Any, *args: Any) -> Any:
    """The student's answer: ``value``, or what ``value(*args)`` returns when it is a function."""
    return value(*args) if callable(value) else value


def _token(model: Any, token_id: Any) -> str:
    return repr(model.tokenizer.decode([int(token_id)]))


# Per model, the references already computed: a student reruns a cell, a test tries many
# mistakes on one prompt. Small entries only (a real model's full softmax is not kept).
_MEMO: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], Any]] = weakref.WeakKeyDictionary()
_MEMO_ENTRIES = 32
_MEMO_NUMEL = 1 << 24


def _memo(model: Any, key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    try:
        memo = _MEMO.setdefault(model, {})
    except TypeError:  # a model that takes no weak reference
        return build()
    if key not in memo:
        value = build()
        numel = sum(
            t.numel()
            for t in (value if isinstance(value, tuple) else (value,))
            if isinstance(t, torch.Tensor)
        )
        if numel > _MEMO_NUMEL:
            return value
        if len(memo) >= _MEMO_ENTRIES:
            memo.pop(next(iter(memo)))
        memo[key] = value
    return memo[key]


def _lens_probs(model: Any, prompt: str, layers: Any = "all") -> torch.Tensor:
    """``[layers, seq, vocab]`` the package's logit lens of one prompt (its full softmax)."""
    from murano_widgets.run import run_logit_lens

    def build() -> torch.Tensor:
        result = run_logit_lens(model, prompt, layers, store_full_probs=True)
        assert isinstance(result, LogitLensResult) and result.all_probs is not None
        return result.all_probs[:, 0]

    key = ("lens", prompt, layers if isinstance(layers, str) else tuple(layers))
    return _memo(model, key, build).double()


def _states(model: Any, prompt: str) -> States:
    return _memo(model, ("states", prompt), lambda: states(model, prompt))


_LAYER_HINT = (
    "layer i is block i's output (model_parts(model).blocks[i]); in output_hidden_states, "
    "entry 0 is the embeddings, so block i's output is entry i + 1."
)


def check_layer_probs(probs: Any, model: Any, prompt: str, layer: int) -> None:
    """Checks one layer's logit lens computed by hand.

    Args:
        probs: ``[seq, vocab]`` the lens distribution at every position of ``prompt``, read
            from block ``layer``'s output (final norm, unembedding, the model's logit
            transform, softmax); or a function ``f(model, prompt, layer)`` returning it.
        model: The model it was computed on.
        prompt: The prompt.
        layer: The layer (block) read.

    Raises:
        AssertionError: If ``probs`` is wrong, naming the mistake its numbers match.
    """
    check = "check_layer_probs"
    check_model(model)
    prompt = _text("prompt", prompt)
    layer = _layer(model, layer)
    given = _as_tensor(check, "probs", _call(probs, model, prompt, layer))
    want = _lens_probs(model, prompt, [layer])[0]
    seq, vocab = want.shape
    if given.shape == (vocab, seq) and seq != vocab:
        _fail(check, "probs is transposed: one row per position, one column per token.")
    st = _states(model, prompt)
    n = int(model.n_layers)

    def lens(hidden: torch.Tensor, norm: bool = True, transform: bool = True) -> torch.Tensor:
        logits = raw_logits(model, hidden, norm)
        return (model.finalize_logits(logits) if transform else logits).double().cpu()

    h = st.blocks[layer]
    logits = lens(h)
    mistakes = [
        _Mistake(
            "you skipped the final norm: these are the probabilities of unembedding(h), not of "
            "unembedding(final_norm(h)).",
            "apply the final norm to the block's output before the unembedding.",
            lens(h, norm=False).softmax(-1),
        ),
        _Mistake(
            "these are logits, not probabilities.",
            "finish with a softmax over the vocabulary, softmax(dim=-1).",
            logits,
        ),
        _Mistake(
            "the softmax ran over the positions (dim 0), not over the vocabulary.",
            "each position's row must sum to 1: softmax(dim=-1).",
            logits.softmax(0),
        ),
    ]
    before = st.embeddings if layer == 0 else st.blocks[layer - 1]
    early = "the embeddings (what enters block 0)" if layer == 0 else f"block {layer - 1}'s output"
    mistakes.append(
        _Mistake(
            f"off by one layer: you read {early}, not block {layer}'s output.",
            _LAYER_HINT,
            lens(before).softmax(-1),
        )
    )
    if layer + 1 < n:
        mistakes.append(
            _Mistake(
                f"off by one layer: you read block {layer + 1}'s output, not block {layer}'s.",
                _LAYER_HINT,
                lens(st.blocks[layer + 1]).softmax(-1),
            )
        )
    normed = model._final_norm(h.to(model.dtype))
    mistakes.append(
        _Mistake(
            "the final norm was applied twice.",
            "with transformers 5 the last entry of output_hidden_states has been through the "
            "final norm already; read block outputs with a forward hook.",
            lens(normed).softmax(-1),
        )
    )
    if model.logit_transform:
        words = model.logit_transform.describe()
        mistakes += [
            _Mistake(
                f"you skipped the model's logit transform ({words}).",
                "this model changes lm_head's output before its softmax; apply "
                "model_parts(model).logit_transform to the logits first.",
                lens(h, transform=False).softmax(-1),
            ),
            _Mistake(
                f"you skipped the final norm and the model's logit transform ({words}).",
                "final norm, unembedding, logit transform, softmax: in that order.",
                lens(h, norm=False, transform=False).softmax(-1),
            ),
        ]
    _judge(check, "probs", given, want, mistakes, _tolerance(model, "prob"), "[seq, vocab]")
    _passed(check, f"layer {layer} of {_name(model)}, {seq} positions")


def check_top1(tokens: Any, probs: Any, model: Any, prompt: str) -> None:
    """Checks the top-1 token and its probability at every layer and position.

    Args:
        tokens: ``[n_layers, seq]`` the top-1 token id of each layer's lens at each position;
            or a function ``f(model, prompt)`` returning ``(tokens, probs)`` (then ``probs``
            is ``None``).
        probs: ``[n_layers, seq]`` their probabilities.
        model: The model.
        prompt: The prompt.

    Raises:
        AssertionError: If either is wrong, naming the mistake the numbers match.
    """
    check = "check_top1"
    check_model(model)
    prompt = _text("prompt", prompt)
    if callable(tokens):
        answer = tokens(model, prompt)
        if not isinstance(answer, tuple) or len(answer) != 2:
            _fail(check, "your function should return two things: (tokens, probs).")
        tokens, probs = answer
    given_tokens = _as_tensor(check, "tokens", tokens, integer=True)
    given_probs = _as_tensor(check, "probs", probs)
    lens = _lens_probs(model, prompt)  # [layers, seq, vocab]
    want_probs, want_tokens = lens.max(dim=-1)
    n, seq, vocab = lens.shape
    for given in (given_tokens, given_probs):
        if given.shape == (n, vocab) and seq != vocab:
            _fail(
                check,
                "you took the maximum over the positions, not over the vocabulary: your rows "
                "have one entry per vocabulary token.",
                "the top-1 token of a cell is probs[layer, position].argmax(); take max/argmax "
                "over the last axis (dim=-1).",
            )
        if given.shape == (seq, n) and seq != n:
            _fail(check, "the answer is transposed: one row per layer, one column per position.")
    if given_tokens.shape != want_tokens.shape:
        _fail(
            check,
            f"tokens has shape {tuple(given_tokens.shape)}, but {(n, seq)} was expected "
            "([n_layers, seq]).",
        )
    tol = _tolerance(model, "prob")
    in_range = (given_tokens >= 0) & (given_tokens < vocab)
    chosen = lens.gather(-1, given_tokens.clamp(0, vocab - 1).unsqueeze(-1)).squeeze(-1)
    right = in_range & (chosen >= want_probs - tol.atol)  # a tie may pick either token
    if not bool(right.all()):
        # Row l holding layer l - 1's tokens (or l + 1's): compared where both rows exist.
        shifted = {
            "the layer below": (given_tokens[1:], want_tokens[:-1]),
            "the layer above": (given_tokens[:-1], want_tokens[1:]),
        }
        for which, (rows, other) in shifted.items():
            if n > 1 and torch.equal(rows, other):
                _fail(
                    check,
                    f"your tokens are off by one layer: each row holds {which}'s top-1 tokens.",
                    "row l of tokens is layer l's lens.",
                )
        if torch.equal(given_tokens, want_tokens[-1].expand(n, seq)):
            _fail(
                check,
                "every row holds the final layer's top-1 tokens.",
                "compute each layer's own distribution and take its argmax.",
            )
        layer, position = (int(i) for i in torch.nonzero(~right)[0])
        _fail(
            check,
            f"the top-1 token is wrong at {int((~right).sum())} of {n * seq} cells; at layer "
            f"{layer}, position {position} it is {_token(model, want_tokens[layer, position])}, "
            f"not {_token(model, given_tokens[layer, position])}.",
        )
    at = given_tokens.unsqueeze(-1)
    wrong_layer = "the probabilities are from the wrong layer: {}."
    hint = (
        "take the token and its probability from the same layer's distribution: "
        "probs[layer].max(dim=-1) gives both."
    )
    mistakes = [
        _Mistake(
            wrong_layer.format("row l holds layer l - 1's (row 0 the last layer's)"),
            hint,
            lens.roll(1, 0).gather(-1, at).squeeze(-1),
        ),
        _Mistake(
            wrong_layer.format("row l holds layer l + 1's"),
            hint,
            lens.roll(-1, 0).gather(-1, at).squeeze(-1),
            slice(0, n - 1),
        ),
        _Mistake(
            wrong_layer.format("every row holds the final layer's probability of its token"),
            hint,
            lens[-1].expand(n, seq, vocab).gather(-1, at).squeeze(-1),
        ),
        _Mistake(
            wrong_layer.format("row l holds layer l - 1's maximum"),
            hint,
            want_probs.roll(1, 0),
            slice(1, None),
        ),
        _Mistake(
            wrong_layer.format("row l holds layer l + 1's maximum"),
            hint,
            want_probs.roll(-1, 0),
            slice(0, n - 1),
        ),
        _Mistake(
            wrong_layer.format("every row holds the final layer's maximum"),
            hint,
            want_probs[-1].expand(n, seq),
        ),
    ]
    _judge(check, "probs", given_probs, want_probs, mistakes, tol, "[n_layers, seq]")
    _passed(check, f"{n} layers × {seq} positions of {_name(model)}")


def check_kl_bits(kl: Any, model: Any, prompt: str) -> None:
    """Checks KL(final ‖ layer) in bits at every layer and position.

    Args:
        kl: ``[n_layers, seq]`` the KL divergence of each layer's lens distribution from the
            model's own output distribution, KL(final ‖ layer), in bits; or a function
            ``f(model, prompt)`` returning it.
        model: The model.
        prompt: The prompt.

    Raises:
        AssertionError: If ``kl`` is wrong, naming the mistake its numbers match.
    """
    from murano_widgets.run import run_logit_lens

    check = "check_kl_bits"
    check_model(model)
    prompt = _text("prompt", prompt)
    given = _as_tensor(check, "kl", _call(kl, model, prompt))

    def kl_to_final() -> torch.Tensor:
        result = run_logit_lens(model, prompt)
        assert isinstance(result, LogitLensResult) and result.kl_to_final is not None
        return result.kl_to_final[:, 0]  # the package's one KL in bits

    want = _memo(model, ("kl", prompt), kl_to_final).double()
    lens = _lens_probs(model, prompt)
    final = lens[-1].expand_as(lens)  # the last layer's lens is the model's own output
    reverse = (torch.xlogy(lens, lens) - torch.xlogy(lens, final)).sum(-1) / _LN2
    hint_direction = (
        "KL(final ‖ layer) = Σ p_final · (log p_final − log p_layer): weight by the final "
        "distribution."
    )
    mistakes = [
        _Mistake(
            "these are nats, not bits: you used the natural log.",
            "divide by ln 2 (math.log(2)), or use log2.",
            want * _LN2,
        ),
        _Mistake("the KL is the wrong way round: KL(layer ‖ final).", hint_direction, reverse),
        _Mistake(
            "the KL is the wrong way round, KL(layer ‖ final), and in nats, not bits.",
            hint_direction + " Then divide by ln 2.",
            reverse * _LN2,
        ),
    ]
    _judge(check, "kl", given, want, mistakes, _tolerance(model, "bits"), "[n_layers, seq]")
    _passed(check, f"KL in bits, {tuple(want.shape)} cells of {_name(model)}")


def check_logit_diff(diffs: Any, model: Any, prompt: str, answer: str, foil: str) -> None:
    """Checks the logit difference answer − foil at the last position, per layer.

    Args:
        diffs: ``[n_layers]`` the lens logit of ``answer``'s first token minus ``foil``'s, at
            the prompt's last position, per layer (logits after the model's logit transform);
            or a function ``f(model, prompt, answer, foil)`` returning it.
        model: The model.
        prompt: The prompt.
        answer: The right continuation (e.g. ``" Paris"``).
        foil: The wrong one (e.g. ``" Rome"``).

    Raises:
        AssertionError: If ``diffs`` is wrong, naming the mistake its numbers match.
        ValueError: If answer and foil start with the same token.
    """
    check = "check_logit_diff"
    check_model(model)
    prompt = _text("prompt", prompt)
    answer = _text("answer", answer)
    foil = _text("foil", foil)
    a, f = continuation_id(model, prompt, answer), continuation_id(model, prompt, foil)
    if a == f:
        raise ValueError(
            f"answer {answer!r} and foil {foil!r} start with the same token "
            f"{_token(model, a)}: give two continuations whose first tokens differ"
        )
    given = _as_tensor(check, "diffs", _call(diffs, model, prompt, answer, foil))
    st = _states(model, prompt)
    with torch.no_grad():
        logits = model.unembed(st.blocks.to(model.dtype)).double().cpu()  # [layers, seq, vocab]
    want = logits[:, -1, a] - logits[:, -1, f]
    n = want.shape[0]
    seq = logits.shape[1]
    every = logits[:, :, a] - logits[:, :, f]
    if (
        given.shape == every.shape
        and seq > 1
        and _close(given[:, -1], want, _tolerance(model, "logit"))
    ):
        _fail(
            check,
            "diffs holds every position: the logit difference is read at the last position only.",
            "the answer is predicted at the prompt's last token: take position -1.",
        )
    probs = logits[:, -1].softmax(-1)
    mistakes = [
        _Mistake(
            "you computed foil minus answer: the sign is flipped.",
            "logit(answer) − logit(foil): positive when the model prefers the answer.",
            -want,
        ),
        _Mistake(
            "you subtracted probabilities, not logits.",
            "take the logits (before the softmax) of the two tokens.",
            probs[:, a] - probs[:, f],
        ),
        _Mistake(
            "you subtracted probabilities, not logits, and foil minus answer.",
            "logit(answer) − logit(foil), before the softmax.",
            probs[:, f] - probs[:, a],
        ),
    ]
    if model.logit_transform:
        raw = raw_logits(model, st.blocks[:, -1]).double().cpu()
        mistakes.append(
            _Mistake(
                f"you skipped the model's logit transform ({model.logit_transform.describe()}).",
                "apply model_parts(model).logit_transform to the logits before subtracting.",
                raw[:, a] - raw[:, f],
            )
        )
    _judge(check, "diffs", given, want, mistakes, _tolerance(model, "logit"), "[n_layers]")
    _passed(check, f"{answer!r} − {foil!r} over {n} layers of {_name(model)}")


def check_dla(contributions: Any, model: Any, prompt: str, token: str) -> None:
    """Checks direct logit attribution: each component's share of a token's logit.

    Args:
        contributions: ``[n_components + 1]`` at the prompt's last position, under the model's
            own readout: each component's direct contribution to the logit of ``token``'s
            first token (``"embed"``, then each block's attention and MLP, in model order),
            then the bias term (what no component wrote: the final norm's bias and the
            unembedding's bias, read through the unembedding); or a function
            ``f(model, prompt, token)`` returning it. They sum to the logit (before a final
            soft-cap).
        model: The model.
        prompt: The prompt.
        token: The continuation whose first token's logit is attributed (e.g. ``" Paris"``).

    Raises:
        AssertionError: If ``contributions`` is wrong, naming the mistake they match.
    """
    from murano_widgets.attribution.outputs import component_outputs
    from murano_widgets.run import run_logit_lens

    check = "check_dla"
    check_model(model)
    prompt = _text("prompt", prompt)
    token = _text("token", token)
    given = _as_tensor(check, "contributions", _call(contributions, model, prompt, token))

    def decompose() -> tuple[torch.Tensor, torch.Tensor, list[str]]:
        with torch.no_grad():
            result = run_logit_lens(model, prompt, answers=[token], decompose=True)
        assert isinstance(result, LogitLensResult)  # one lens asked for, one result
        assert result.answer_contributions is not None
        assert result.answer_contribution_bias is not None
        assert result.component_labels is not None
        return (
            result.answer_contributions[:, 0],
            result.answer_contribution_bias[0:1],
            list(result.component_labels),
        )

    parts, bias, labels = _memo(model, ("dla", prompt, token), decompose)
    parts, bias = parts.double(), bias.double()
    want = torch.cat([parts, bias])
    c = len(labels)
    tol = _tolerance(model, "logit")
    logit = float(want.sum())
    if given.shape == (c,):
        if _close(given, parts, tol):
            _fail(
                check,
                f"the bias term is missing: give {c + 1} numbers, the {c} components then the "
                "bias term.",
                "the bias term is what no component wrote, final_norm's bias and lm_head's bias "
                f"read along the token's unembedding (here {float(bias[0]):.4g}); without it the "
                "sum is not the logit.",
            )
        _fail(
            check,
            f"contributions has {c} entries: give {c + 1}, the components {labels[0]!r} to "
            f"{labels[-1]!r} then the bias term.",
        )
    if given.shape == want.shape and _close(given[:c], parts, tol) and not _close(given, want, tol):
        if abs(float(given[c])) <= tol.atol:
            _fail(
                check,
                "the bias term is missing (0): the contributions do not sum to the logit.",
                "the bias term is final_norm's bias and lm_head's bias read along the token's "
                "unembedding row.",
            )
        _fail(
            check,
            f"the components are right but the bias term is wrong: {float(given[c]):.6g}, not "
            f"{float(bias[0]):.6g}.",
            "the bias term is final_norm's bias and lm_head's bias read along the token's "
            "unembedding row.",
        )
    t = continuation_id(model, prompt, token)
    vectors = _memo(  # [components, d_model]
        model, ("components", prompt), lambda: component_outputs(model, [prompt]).vectors[0, -1]
    )
    norm, head = model._final_norm, model._lm_head
    transform = model.logit_transform
    with torch.no_grad():
        x = vectors.to(model._head_weight.device, model.dtype)
        zero = norm(torch.zeros_like(x[:1]))
        each = (norm(x) - zero).float() @ model._head_weight[t].float()  # scale per component
        full = head(norm(x))[:, t].float()  # the whole readout per component
        scale = 1.0 if transform.multiply is None else transform.multiply
        scale = scale / (1.0 if transform.divide is None else transform.divide)
        each, full = (each * scale).double().cpu(), (full * scale).double().cpu()
    unfrozen = "the final norm's scale was not frozen: you normalised each component on its own."
    hint = (
        "take the norm's scale 1/sqrt(mean(h²) + eps) once, from the whole residual h at the "
        "cell, and multiply every component by that same number (and the norm's gain): a norm "
        "is not linear, its frozen scale is."
    )
    mistakes = [
        _Mistake(unfrozen, hint, torch.cat([each, bias]), slice(0, c)),
        _Mistake(unfrozen, hint, torch.cat([full, bias]), slice(0, c)),
    ]
    _judge(check, "contributions", given, want, mistakes, tol, f"[{c} components + 1 bias]")
    _passed(check, f"{c} components + bias sum to the logit {logit:.4f} of {token!r}")


def check_group_prob(p: Any, model: Any, prompt: str, word: str) -> None:
    """Checks a token group's probability at the last position, per layer.

    Args:
        p: ``[n_layers]`` the probability the lens gives ``word``'s group at the prompt's last
            position: the sum over every token id whose text is a prefix of the word, with or
            without its leading space (white space alone excluded), each counted once; or a
            function ``f(model, prompt, word)`` returning it.
        model: The model.
        prompt: The prompt.
        word: The word (e.g. ``"Paris"`` or ``" Paris"``).

    Raises:
        AssertionError: If ``p`` is wrong, naming the mistake its numbers match.
    """
    check = "check_group_prob"
    check_model(model)
    prompt = _text("prompt", prompt)
    word = _text("word", word)
    given = _as_tensor(check, "p", _call(p, model, prompt, word))
    ids = sorted(TokenGroup.word(model.tokenizer, word.strip()).ids)  # the package's one group
    last = _lens_probs(model, prompt)[:, -1]  # [layers, vocab]
    want = last[:, ids].sum(-1)
    tol = _tolerance(model, "prob")
    stripped = word.strip()
    firsts = dict.fromkeys(
        continuation_id(model, prompt, form) for form in (word, " " + stripped, stripped)
    )
    mistakes = [
        _Mistake(
            f"you counted the first token only ({_token(model, first)}), not the whole group.",
            f"the group is every token that starts the word, with or without its space: "
            f"{len(ids)} tokens here; sum their probabilities.",
            last[:, first],
        )
        for first in firsts
    ]
    mistakes += [
        _Mistake(
            f"a token was counted twice ({_token(model, member)}).",
            "collect the group's ids in a set before summing.",
            want + last[:, member],
        )
        for member in ids
    ]
    _judge(check, "p", given, want, mistakes, tol, "[n_layers]")
    _passed(check, f"{len(ids)} tokens of {word!r} over {want.shape[0]} layers")


def check_patch(
    probs: Any, model: Any, clean: str, corrupt: str, layer: int, position: int
) -> None:
    """Checks one patched cell: ``clean`` run with one block output taken from ``corrupt``.

    Args:
        probs: ``[seq, vocab]`` the model's output distribution at every position of ``clean``
            when block ``layer``'s output at ``position`` is replaced by ``corrupt``'s at the
            same position (counted from the start, or from the end when negative); or a
            function ``f(model, clean, corrupt, layer, position)`` returning it.
        model: The model.
        clean: The prompt that runs.
        corrupt: The prompt the patched state comes from.
        layer: The block whose output is patched.
        position: The position patched.

    Raises:
        AssertionError: If ``probs`` is wrong, naming the mistake its numbers match.
    """
    check = "check_patch"
    check_model(model)
    clean = _text("clean", clean)
    corrupt = _text("corrupt", corrupt)
    layer = _layer(model, layer)
    n = int(model.n_layers)
    given = _as_tensor(check, "probs", _call(probs, model, clean, corrupt, layer, position))
    a, b = _states(model, clean), _states(model, corrupt)
    la, lb = len(a.ids), len(b.ids)
    position = check_int(
        "position", position, -min(la, lb), min(la, lb) - 1, "both prompts' tokens"
    )
    pa, pb = position % la, position % lb

    def output(st: Any) -> torch.Tensor:
        with torch.no_grad():
            return model.unembed(st.blocks[-1].to(model.dtype)).float().softmax(-1).double().cpu()

    def patched(prompt: str, at: int, into: int, source: Any, row: int) -> torch.Tensor:
        def swap(h: torch.Tensor) -> torch.Tensor:
            h = h.clone()
            h[into] = source.blocks[row][at].to(h.dtype)
            return h

        key = ("patched", prompt, at, into, source_prompt(source), row)
        return _memo(model, key, lambda: output(states(model, prompt, {row: swap})))

    def source_prompt(source: States) -> str:
        return clean if source is a else corrupt

    want = patched(clean, pb, pa, b, layer)
    mistakes = [
        _Mistake(
            "you patched in the wrong direction: this is the corrupt prompt run with the clean "
            "prompt's state.",
            "run the clean prompt, and copy the corrupt prompt's block output into it.",
            patched(corrupt, pa, pb, a, layer),
        ),
        _Mistake(
            "the patch did nothing: this is the clean run.",
            "the hook must return the changed output (or change it in place) for the rest of "
            "the model to read it.",
            output(a),
        ),
    ]
    if la == lb:
        mistakes.append(
            _Mistake(
                "you patched every position, not only position "
                f"{pa}: this is the corrupt prompt's own run.",
                "replace one row of the block's output, output[0, position], not all of it.",
                output(b),
            )
        )
    for other in (layer - 1, layer + 1):
        if 0 <= other < n:
            mistakes.append(
                _Mistake(
                    f"you patched block {other}'s output, not block {layer}'s.",
                    _LAYER_HINT,
                    patched(clean, pb, pa, b, other),
                )
            )
    _judge(check, "probs", given, want, mistakes, _tolerance(model, "prob"), "[seq, vocab]")
    _passed(check, f"layer {layer}, position {pa} patched in {_name(model)}")
