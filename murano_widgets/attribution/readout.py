"""The lens's readout linearised at a cell: what direct logit attribution multiplies by.

A cell's logit for token ``t`` is ``α · (U_t · N(y) + b_U[t])`` with ``y`` the lens's reading of
the cell's residual ``h``, ``N`` the final norm, ``U`` the unembedding (after any projection
between the norm and it, as OPT's) and ``α`` the model's logit scale (Cohere multiplies, Granite
divides; a final soft-cap comes after and is left out: the sums stop before it). Every norm
here is ``N(y) = s(y) · g ⊙ P(y) + b``: ``P`` centres for a LayerNorm and is the identity for an
RMSNorm, ``s`` is one number per row. Taking ``s`` from the cell's own ``y`` (as
TransformerLens's ``apply_ln_to_stack`` does) makes the readout linear in ``y``:

    logit = r · y + w · b + α b_U[t],   w = α U_t,   r = s · P(g ⊙ w)

and a lens ``y = M h + β`` pulls ``r`` back to ``q = M^T r`` (:meth:`Lens.pullback`). A component
``x_c`` of ``h`` then contributes ``q · x_c``; what no component wrote (``r · β``, ``w · b``,
``α b_U[t]``) is the bias term. The sum is the logit exactly.

``g``, ``b`` and whether the norm centres are read off the norm module by probing it (two calls
on constant rows), so the same code serves ``LayerNorm``, Llama's, Gemma's ``1 + w`` and
Cohere's bias-free LayerNorm; :func:`norm_parts` checks the form on a random row and refuses a
norm it does not fit. Plain functions on tensors: they run after the trace, or inside it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

__all__ = ["NormParts", "Readout", "norm_parts", "norm_scale", "normalise", "readout_of"]

# A probe large enough that the norm's epsilon vanishes against it in float32: sqrt(c² + eps)
# rounds to c for eps up to 1e-5 at c = 1e3.
_PROBE = 1e3


class NormParts:
    """A norm ``N(y) = s(y) · g ⊙ P(y) + b`` taken apart (``None`` norm: the identity).

    Attributes:
        gain: ``[d]`` ``g`` (the effective one: Gemma's ``1 + w``).
        bias: ``[d]`` ``b``.
        centred: Whether ``P`` subtracts the row mean (a LayerNorm).
        eps: The norm's epsilon: ``s(y) = 1 / sqrt(mean(P(y)²) + eps)``.
        identity: There is no norm (``s = 1``, ``g = 1``, ``b = 0``).
    """

    __slots__ = ("bias", "centred", "eps", "gain", "identity")

    def __init__(
        self, gain: Any, bias: Any, centred: bool, eps: float, identity: bool = False
    ) -> None:
        self.gain, self.bias, self.centred, self.eps = gain, bias, centred, eps
        self.identity = identity

    def project(self, x: torch.Tensor) -> torch.Tensor:
        """``P(x)``."""
        return x - x.mean(dim=-1, keepdim=True) if self.centred else x


def norm_parts(
    norm: Callable[[torch.Tensor], torch.Tensor] | None, d_model: int, device: Any
) -> NormParts:
    """Reads ``g``, ``b`` and the centring off a norm module by probing it.

    Raises:
        ValueError: If the module is not of the form ``s(y) · g ⊙ P(y) + b`` (checked on a
            random row): its readout cannot be linearised this way.
    """
    if norm is None:
        ones = torch.ones(d_model, device=device)
        return NormParts(ones, torch.zeros(d_model, device=device), False, 0.0, identity=True)
    with torch.no_grad():
        dtype = _dtype_of(norm)
        bias = norm(torch.zeros(1, d_model, device=device, dtype=dtype)).float()[0]
        flat = norm(torch.full((1, d_model), _PROBE, device=device, dtype=dtype)).float()[0] - bias
        # A LayerNorm sends a constant row to its bias alone; an RMSNorm to its gain.
        centred = bool(flat.abs().max() <= 1e-3 * max(float(bias.abs().max()), 1.0))
        # Alternating ±c: mean 0 (for an even width), RMS c: both norms give g ⊙ sign.
        signs = torch.ones(d_model, device=device)
        signs[1::2] = -1.0
        if centred and d_model % 2:
            signs[-1] = 0.0
        probe = (signs * _PROBE).to(dtype).unsqueeze(0)
        gain = (norm(probe).float()[0] - bias) * signs
        if centred and d_model % 2:
            gain[-1] = _gain_of_last(norm, d_model, device, dtype, bias)
        eps = next(
            (
                float(value)
                for name in ("eps", "variance_epsilon", "epsilon", "layer_norm_eps")
                if isinstance(value := getattr(norm, name, None), (int, float))
                and not isinstance(value, bool)
            ),
            None,
        )
        parts = NormParts(gain, bias, centred, 0.0 if eps is None else eps)
        # The form holds on random rows, or the linearisation would be silently wrong.
        row = torch.randn(4, d_model, generator=torch.Generator().manual_seed(0)).to(device, dtype)
        want = norm(row).float()
        if eps is None or not torch.allclose(
            normalise(parts, row.float()), want, rtol=1e-4, atol=1e-5
        ):
            raise ValueError(
                f"the norm {type(norm).__name__} is not of the form g⊙P(y)/sqrt(mean(P(y)²)+eps)"
                "+b (a LayerNorm or an RMSNorm with its eps attribute): its readout cannot be "
                "decomposed into components"
            )
    return parts


def _gain_of_last(
    norm: Any, d_model: int, device: Any, dtype: Any, bias: torch.Tensor
) -> torch.Tensor:
    probe = torch.zeros(1, d_model, device=device, dtype=dtype)
    probe[0, -1], probe[0, 0] = _PROBE, -_PROBE
    out = norm(probe).float()[0] - bias
    # Centred and scaled, the last entry is g_last · c / std · (1 - 0) with mean 0.
    std = float(probe.float().std(unbiased=False))
    return out[-1] * std / _PROBE


def _dtype_of(module: Any) -> torch.dtype:
    weight = getattr(module, "weight", None)
    return weight.dtype if isinstance(weight, torch.Tensor) else torch.float32


def norm_scale(parts: NormParts, y: torch.Tensor) -> torch.Tensor:
    """``s(y) = 1 / sqrt(mean(P(y)²) + eps)`` per row, ``[rows]`` (1 without a norm): plain
    tensor arithmetic, so that it runs inside a trace without calling the model's modules."""
    if parts.identity:
        return torch.ones(y.shape[:-1], device=y.device)
    centred = parts.project(y.float())
    return torch.rsqrt(centred.pow(2).mean(dim=-1) + parts.eps)


def normalise(parts: NormParts, y: torch.Tensor) -> torch.Tensor:
    """``N(y) = s(y) · g ⊙ P(y) + b`` in float32."""
    if parts.identity:
        return y.float()
    return norm_scale(parts, y).unsqueeze(-1) * parts.gain * parts.project(y.float()) + parts.bias


class Readout:
    """Everything after the lens: the final norm's parts, the unembedding and the logit scale.

    The unembedding is the model's own weight, not a copy (GPT-2's is 154 MB in float32): only
    the rows of the tokens attributed are read, and converted, per call. Pickled (a remote
    trace sends this package's objects by value) it leaves the weight behind; the code inside
    the trace gives the server's own with :meth:`with_head`.

    Attributes:
        norm: The final norm's :class:`NormParts`.
        head: ``[vocab, d_head]`` ``lm_head``'s weight, or ``None`` once pickled.
        between: The weights of the projections between the norm and ``lm_head`` (OPT's
            ``project_out``), in the order they apply.
        head_bias: ``[vocab]`` or ``None``.
        scale: ``α``, the model's logit scale (1 for most).
        softcap: The final soft-cap the logits stop before, or ``None``.
    """

    __slots__ = ("between", "head", "head_bias", "norm", "scale", "softcap")

    def __init__(
        self,
        norm: NormParts,
        head: Any,
        head_bias: Any,
        scale: float,
        softcap: float | None,
        between: list[Any] | None = None,
    ) -> None:
        self.norm, self.head, self.head_bias = norm, head, head_bias
        self.scale, self.softcap = scale, softcap
        self.between = list(between or [])

    def __getstate__(self) -> dict[str, Any]:
        state = {name: getattr(self, name) for name in self.__slots__}
        state["head"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    def with_head(self, head: Any) -> Readout:
        """The same readout reading ``head`` as ``lm_head``'s weight (inside a trace: the
        weight where the model runs)."""
        return Readout(self.norm, head, self.head_bias, self.scale, self.softcap, self.between)

    def directions(
        self, tokens: torch.Tensor, foils: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``w = α U_t`` ``[rows, d]`` and ``α b_U[t]`` ``[rows]`` of ``tokens`` ``[rows]``
        (minus those of ``foils`` where given: a logit difference)."""
        assert self.head is not None, "the unembedding was left behind: use with_head"

        def one(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            safe = ids.clamp_min(0).to(self.head.device)
            w = self.head.index_select(0, safe).float()
            for weight in reversed(self.between):
                w = w @ weight.float()
            w = w * self.scale
            if self.head_bias is None:
                return w, w.new_zeros(len(safe))
            return w, self.head_bias.index_select(0, safe).float() * self.scale

        w, bias = one(tokens)
        if foils is not None:
            w_foil, bias_foil = one(foils)
            w, bias = w - w_foil, bias - bias_foil
        return w, bias

    def pulled(self, y: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """``r = s(y) · P(g ⊙ w)``: the readout direction at the lens's reading ``y``."""
        s = norm_scale(self.norm, y)
        return s.unsqueeze(-1) * self.norm.project(self.norm.gain * w)


def readout_of(model: Any) -> Readout:
    """The :class:`Readout` of a loaded model (its modules, outside any trace).

    Raises:
        ValueError: If the unembedding or a projection before it is not a plain linear layer,
            or the final norm is not a LayerNorm or RMSNorm form.
    """
    head = model._lm_head
    weight = getattr(head, "weight", None)
    if not isinstance(head, torch.nn.Linear) or not isinstance(weight, torch.Tensor):
        raise ValueError(
            "decompose=True needs the unembedding to be a linear layer; "
            f"{type(head).__name__} is not"
        )
    norm_module, modules = _norm_and_between(model)
    between: list[torch.nn.Linear] = []
    for module in modules:
        if not isinstance(module, torch.nn.Linear) or module.bias is not None:
            raise ValueError(
                "decompose=True needs the projections before the unembedding to be linear "
                f"without bias; {type(module).__name__} is not"
            )
        between.append(module)
    bias = None if head.bias is None else head.bias.detach().float()
    transform = model.logit_transform
    scale = 1.0
    if transform.multiply is not None:
        scale *= transform.multiply
    if transform.divide is not None:
        scale /= transform.divide
    d_model = between[0].weight.shape[1] if between else weight.shape[1]
    norm = norm_parts(norm_module, d_model, weight.device)
    return Readout(
        norm,
        weight.detach(),
        bias,
        scale,
        transform.softcap,
        [module.weight.detach() for module in between],
    )


def _norm_and_between(model: Any) -> tuple[Any, list[torch.nn.Module]]:
    """The final norm (or ``None``) and the projections after it (the nnsight backend's
    ``_final_norm`` chains them in a ``Sequential``)."""
    module = model._final_norm
    if isinstance(module, torch.nn.Identity):
        return None, []
    if isinstance(module, torch.nn.Sequential):
        modules = list(module)
        layout = getattr(model, "layout", None)
        if layout is not None and layout.norm is None:
            return None, modules
        return modules[0], modules[1:]
    return module, []
