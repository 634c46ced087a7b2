"""The self-check: the lens of a model's last layer against the model's own output.

A lens that cannot reproduce the model's own distribution from the last block's output would be
wrong at every layer, so every model is checked once (:meth:`MuranoModel.self_check`, at load or
at the first trace) and refused with :class:`LensSelfCheckError` rather than returning numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from murano_widgets.backends.base import MuranoModel


class LensSelfCheckError(RuntimeError):
    """The lens of the model's last layer does not equal the model's own output distribution.

    Raised instead of returning numbers: a lens that cannot reproduce the model's own output
    would be wrong at every layer. It means the model does something after its final norm and
    unembedding that the backend does not know (see
    :data:`~murano_widgets.backends.architectures.ARCHITECTURES`).

    Attributes:
        model_type: The Hugging Face ``config.model_type``.
        max_abs_diff: The largest difference in probability on the probe.
    """

    def __init__(self, message: str, model_type: str | None, max_abs_diff: float) -> None:
        super().__init__(message)
        self.model_type = model_type
        self.max_abs_diff = max_abs_diff


def check_against_own_output(model: MuranoModel, remote: bool = False) -> float:
    """What :meth:`MuranoModel.self_check` runs (see there): one probe trace, the lens of the
    last layer against the model's ``logits``; the largest difference in probability.

    Raises:
        LensSelfCheckError: Past the model's tolerance, unless it was built with
            ``self_check=False`` (which warns instead).
    """
    import nnsight

    model._self_checked = True  # first: the probe's own trace must not check again
    try:
        probe = _probe_inputs(model.tokenizer, model.vocab_size)
        kwargs: dict[str, Any] = {"remote": True} if remote else {}
        if "use_cache" in model.forward_kwargs:
            kwargs["use_cache"] = False
        # no_grad, not inference_mode: nnsight may run the intervention in another thread,
        # where inference tensors could not meet weights that require grad.
        with torch.no_grad(), model.trace(probe, **kwargs):
            lens_logits = nnsight.save(model.project_on_vocab(model.layer(model.n_layers - 1)))
            own_logits = nnsight.save(model._root.output.logits)
        lens_p = torch.as_tensor(lens_logits).detach().float().softmax(-1)
        own_p = torch.as_tensor(own_logits).detach().float().softmax(-1)
    except BaseException:
        model._self_checked = False
        raise
    diff = _max_difference(lens_p, own_p)
    tolerance = model.SELF_CHECK_TOLERANCE.get(model.dtype, 1e-2)
    if not diff <= tolerance:  # NaN fails too
        model_type = getattr(model.config, "model_type", None)
        agree = int((lens_p.argmax(-1) == own_p.argmax(-1)).sum())
        message = (
            f"the lens of the last layer of {model.name!r} ({model._architecture()}) does not "
            f"equal the model's own output: the probabilities differ by up to {diff:.3g} "
            f"(tolerance {tolerance:g} for {str(model.dtype).replace('torch.', '')}; "
            f"top-1 agrees at {agree} of {own_p.shape[-2]} probe positions) with "
            f"backend {model.backend_choice!r} and logit transform "
            f"{model.logit_transform.describe()!r}. The model changes its logits after the "
            "final norm and lm_head in a way this backend does not know, so every layer's "
            "lens would be wrong: refusing to return numbers. Known transforms: "
            "murano_widgets.backends.architectures.ARCHITECTURES; "
            "MuranoModel(..., self_check=False) "
            "turns this into a warning."
        )
        if model._self_check_wanted:
            model._self_checked = False
            raise LensSelfCheckError(message, model_type, diff)
        import warnings

        warnings.warn(message, RuntimeWarning, stacklevel=3)
    return diff


def _max_difference(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    """The largest difference between two distributions, where a position the model itself
    makes non-finite must be non-finite in the lens too (a NaN in the weights is the model's,
    and the step shows such cells as missing): ``inf`` if the two disagree on which."""
    ours_bad, theirs_bad = ~torch.isfinite(ours), ~torch.isfinite(theirs)
    if not torch.equal(ours_bad, theirs_bad):
        return float("inf")
    finite = ~ours_bad
    return float((ours[finite] - theirs[finite]).abs().max()) if finite.any() else 0.0


def _probe_inputs(tokenizer: Any, vocab_size: int) -> dict[str, torch.Tensor]:
    """A few tokens to check the lens on: a short sentence, or the first ids if it encodes to
    fewer than two tokens (a tokenizer without those characters)."""
    ids = tokenizer("The lens checks itself against the model.", add_special_tokens=True).get(
        "input_ids", []
    )
    ids = [int(i) for i in ids if 0 <= int(i) < vocab_size][:8]
    if len(ids) < 2:
        ids = list(range(min(8, vocab_size)))
    input_ids = torch.tensor([ids])
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
