"""The terms a model adds to its residual stream, read in one trace, and their direct effects.

Labels, in model order: ``"embed"`` (everything that enters block 0: tokens, and positions where
the model adds them), then per layer ``"L{l}.attn"`` and ``"L{l}.mlp"``; with heads,
``"L{l}.H{h}"`` for each head and ``"L{l}.attn_bias"`` (the output projection's bias) in place of
``"L{l}.attn"``. The embedding plus every term up to a block is that block's output.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from murano_widgets.attribution.readout import NormParts, norm_parts, norm_scale
from murano_widgets.attribution.sublayers import Sublayers, parallel_title, sublayers_of

__all__ = ["ComponentLayout", "Components", "component_labels"]


def component_labels(n_layers: int, n_heads: int | None) -> list[str]:
    """The labels of the components of a model with ``n_layers`` blocks (heads when
    ``n_heads`` is given)."""
    labels = ["embed"]
    for layer in range(n_layers):
        if n_heads is None:
            labels.append(f"L{layer}.attn")
        else:
            labels += [f"L{layer}.H{head}" for head in range(n_heads)]
            labels.append(f"L{layer}.attn_bias")
        labels.append(f"L{layer}.mlp")
    return labels


def _get(root: Any, path: str) -> Any:
    for part in path.split("."):
        root = getattr(root, part)
    return root


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, tuple) else value


class ComponentLayout:
    """What the step reads of one model to decompose it, and how to put the terms together.

    Args:
        model: The backend.
        heads: Split each attention into its heads.
        wanted: What asked, for errors.
    """

    def __init__(self, model: Any, heads: bool, wanted: str = "decompose=True") -> None:
        config = getattr(model, "config", None)
        self.sub: Sublayers = sublayers_of(config, wanted)
        self.parallel = self.sub.parallel(config)
        self.n_layers = int(model.n_layers)
        self.heads = heads
        self.n_heads: int | None = None
        blocks = model._blocks
        if heads:
            self.n_heads = _n_heads(config)
            width = _in_width(_get(blocks[0], self.sub.out_proj), self.sub.conv1d)
            if width % self.n_heads:
                raise ValueError(
                    f"heads=True: the output projection's input ({width}) does not split into "
                    f"{self.n_heads} heads"
                )
        self.labels = component_labels(self.n_layers, self.n_heads)
        self._per_layer = 2 if self.n_heads is None else self.n_heads + 2
        self.multiplier: float | None = None
        if self.sub.multiplier is not None:
            value = getattr(config, self.sub.multiplier, None)
            self.multiplier = None if value in (None, 1, 1.0) else float(value)
        self.post_norms: list[NormParts] | None = None
        self.out_weights: list[torch.Tensor] = []
        self.out_biases: list[torch.Tensor | None] = []
        if heads:
            for block in blocks:
                projection = _get(block, self.sub.out_proj)
                weight = projection.weight.detach()
                # One layout for both: [d_model, heads * head_dim], as a Linear keeps it.
                self.out_weights.append(weight.t() if self.sub.conv1d else weight)
                bias = getattr(projection, "bias", None)
                self.out_biases.append(None if bias is None else bias.detach().float())
            if self.sub.post_norm is not None:
                d_model = self.out_weights[0].shape[0]
                self.post_norms = [
                    norm_parts(_get(block, self.sub.post_norm), d_model, self.out_weights[0].device)
                    for block in blocks
                ]

    def __getstate__(self) -> dict[str, Any]:
        # A remote trace sends this by value: the output projections (a model's worth of
        # d x d matrices) stay behind; the trace reads the server's (with_out_weights).
        state = self.__dict__.copy()
        state["out_weights"] = []
        return state

    def with_out_weights(self, weights: list[Any]) -> ComponentLayout:
        """A copy reading ``weights`` (each projection's raw ``weight``, as the module holds
        it) as the output projections: inside a trace, the weights where the model runs."""
        copy = object.__new__(ComponentLayout)
        copy.__dict__.update(self.__dict__)
        copy.out_weights = [weight.t() if self.sub.conv1d else weight for weight in weights]
        return copy

    def out_projection(self, block: Any) -> Any:
        """Block ``block``'s output projection (a module, or an envoy inside a trace)."""
        return _get(block, self.sub.out_proj)

    @property
    def n_components(self) -> int:
        return len(self.labels)

    def attn_index(self, layer: int) -> int:
        """Where layer ``layer``'s attention terms start."""
        return 1 + layer * self._per_layer

    def mlp_index(self, layer: int) -> int:
        return 1 + layer * self._per_layer + self._per_layer - 1

    def limit(self, layer: int, mid: bool) -> int:
        """How many components a row of ``layer`` (after the attention when ``mid``) holds."""
        return self.mlp_index(layer) if mid else self.mlp_index(layer) + 1

    # -- in the trace -------------------------------------------------------------------------

    def needs(self, layer: int) -> tuple[bool, bool, bool]:
        """What layer ``layer`` must give: (heads' inputs, attention output, residual mid)."""
        attention = self.parallel or (self.heads and self.post_norms is not None)
        return self.heads, attention, not self.parallel

    def read(
        self, model: Any, last: int, extra_mid: set[int], take: Any, states: dict[str, Any]
    ) -> dict[str, Any]:
        """Reads, in forward order, every state the decomposition needs of blocks ``0..last``.

        Args:
            model: The backend, inside a trace.
            last: The last block to read.
            extra_mid: Blocks whose ``resid_mid`` is wanted anyway (sublayer rows).
            take: ``proxy -> kept value`` (flatten and select rows; save).
            states: Filled in and returned: made outside the trace, since nnsight hands back
                only what the trace's code stored in objects from outside it.

        Returns:
            ``{"embed": x, "z": {l: x}, "attn": {l: x}, "mid": {l: x}, "post": {l: x}}``.
        """
        states.update({"z": {}, "attn": {}, "mid": {}, "post": {}})
        for layer in range(last + 1):
            block = model.block(layer)
            if layer == 0:
                states["embed"] = take(block.input)
            heads, attention, mid = self.needs(layer)
            if heads:
                states["z"][layer] = take(_get(block, self.sub.out_proj).input)
            if attention:
                states["attn"][layer] = take(_first(_get(block, self.sub.attention).output))
            if mid or layer in extra_mid:
                # A parallel block has no resid_mid: a resid_mid site is refused before the trace.
                assert self.sub.mid is not None
                states["mid"][layer] = take(_get(block, self.sub.mid).input)
            states["post"][layer] = take(_first(block.output))
        return states

    # -- after it -----------------------------------------------------------------------------

    def terms(
        self, states: dict[str, Any], rows: torch.Tensor, layer: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The attention and MLP terms of block ``layer`` at ``rows``, ``[rows, d]`` each."""
        before = states["embed"] if layer == 0 else states["post"][layer - 1]
        before = before.index_select(0, rows).float()
        return self._split(states, rows, layer, before, self.post_at(states, rows, layer))

    def _split(
        self,
        states: dict[str, Any],
        rows: torch.Tensor,
        layer: int,
        before: torch.Tensor,
        after: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`terms` from the stream entering and leaving the block at ``rows``."""
        if self.parallel:
            attention = states["attn"][layer].index_select(0, rows).float()
            return attention, after - before - attention
        mid = states["mid"][layer].index_select(0, rows).float()
        return mid - before, after - mid

    def post_at(self, states: dict[str, Any], rows: torch.Tensor, layer: int) -> torch.Tensor:
        """Block ``layer``'s output at ``rows``, ``[rows, d]``."""
        return states["post"][layer].index_select(0, rows).float()

    def head_vectors(self, states: dict[str, Any], rows: torch.Tensor, layer: int) -> torch.Tensor:
        """Each head's term and the bias's, ``[rows, H + 1, d]`` (for :func:`component_outputs`)."""
        vectors, bias = self.head_parts(states, rows, layer)
        return torch.cat([vectors, bias.expand(len(rows), -1).unsqueeze(1)], dim=1)

    def head_parts(
        self, states: dict[str, Any], rows: torch.Tensor, layer: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each head's term ``[rows, H, d]`` and the output projection's bias term (``[d]``, or
        ``[rows, d]`` under a post-attention norm, which scales each row by its own factor)."""
        assert self.n_heads is not None
        z = states["z"][layer].index_select(0, rows).float()
        weight = self.out_weights[layer].float()
        d_model = weight.shape[0]
        per_head = z.view(len(rows), self.n_heads, -1)
        split = weight.reshape(d_model, self.n_heads, -1)
        vectors = torch.einsum("rhk,dhk->rhd", per_head, split)
        bias = self.out_biases[layer]
        bias = bias if bias is not None else weight.new_zeros(d_model)
        if self.multiplier is not None:
            vectors = vectors * self.multiplier
            bias = bias * self.multiplier
        if self.post_norms is not None:
            parts = self.post_norms[layer]
            a = states["attn"][layer].index_select(0, rows).float()
            s = norm_scale(parts, a).view(-1, 1, 1)
            vectors = s * parts.gain * parts.project(vectors)
            bias = s[:, 0] * parts.gain * parts.project(bias)
        return vectors, bias

    def contributions(
        self,
        states: dict[str, Any],
        rows: torch.Tensor,
        asks: Sequence[tuple[torch.Tensor, int, bool]],
    ) -> torch.Tensor:
        """``[asks, rows, C]``: every component's direct effect along each ask's ``q``
        ``[rows, d]`` (a readout pulled back through the lens), for rows read at the ask's layer
        (after its attention when its ``mid`` is set); NaN for the components after that point.

        Each block's terms, and with heads each head's output vectors, are computed once for
        every ask that reaches the block. One ask at a time, a row of layer ``l`` needs blocks
        ``0..l``, so a deep model's head vectors came out O(layers²) times: GPT-2 large's 36
        rows made 666 ``[rows, d] @ [d, d]`` products where 36 do (the decomposition's own
        time at 8 × 64 went from 4.3 s to 3.0 s with that alone).
        """
        out = torch.full(
            (len(asks), len(rows), self.n_components), float("nan"), device=rows.device
        )
        if not asks:
            return out
        step = len(rows)
        if self.n_heads is not None:
            # The head vectors are [rows, heads, d]: chunks of rows keep them near 64 MiB (8
            # prompts of 1,024 tokens on GPT-2 large would be 840 MB at once).
            d_model = asks[0][0].shape[-1]
            step = max(1, _VECTOR_BYTES // (4 * self.n_heads * d_model))
        # The asks by layer (a row's mid before its output): the asks that reach a block are
        # then the ones from some index on, a view rather than a copy per block.
        order = sorted(range(len(asks)), key=lambda i: (asks[i][1], not asks[i][2]))
        ordered = [asks[i] for i in order]
        for start in range(0, len(rows), step):
            part = slice(start, min(start + step, len(rows)))
            out[order, part] = self._contributions(states, rows[part], ordered, part).transpose(
                0, 1
            )
        return out

    def _contributions(
        self,
        states: dict[str, Any],
        rows: torch.Tensor,
        asks: Sequence[tuple[torch.Tensor, int, bool]],
        part: slice,
    ) -> torch.Tensor:
        """``[rows, asks, C]`` for asks sorted by (layer, not mid), ``q`` cut to ``part``."""
        # Row-major [rows, asks, d]: each row's block product is one matrix product (bmm).
        q = torch.stack([ask[0][part].float() for ask in asks], dim=1)
        out = torch.full((len(rows), len(asks), self.n_components), float("nan"), device=q.device)
        before = states["embed"].index_select(0, rows).float()
        out[:, :, 0] = _along(q, before)
        layers = [layer for _, layer, _ in asks]
        first = 0
        for block in range(layers[-1] + 1):
            # Python ints, not a branch on values (this also runs inside a trace).
            while layers[first] < block:
                first += 1
            after_mid = first
            while after_mid < len(asks) and layers[after_mid] == block and asks[after_mid][2]:
                after_mid += 1
            reach = q[:, first:]
            after = self.post_at(states, rows, block)
            attention, mlp = self._split(states, rows, block, before, after)
            start = self.attn_index(block)
            if self.n_heads is None:
                out[:, first:, start] = _along(reach, attention)
            else:
                vectors, bias = self.head_parts(states, rows, block)
                heads = slice(start, start + self.n_heads)
                out[:, first:, heads] = torch.bmm(reach, vectors.transpose(1, 2))
                out[:, first:, start + self.n_heads] = (
                    reach @ bias if bias.dim() == 1 else _along(reach, bias)
                )
            if after_mid < len(asks):
                out[:, after_mid:, self.mlp_index(block)] = _along(q[:, after_mid:], mlp)
            before = after
        return out


# The head vectors of one chunk of rows ([rows, heads, d] float32) stay under this.
_VECTOR_BYTES = 64 * 2**20


def _along(q: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``[rows, asks]``: each ask's ``q [rows, asks, d]`` dotted with ``x [rows, d]``."""
    return torch.bmm(q, x.unsqueeze(-1)).squeeze(-1)


def _n_heads(config: Any) -> int:
    for name in ("num_attention_heads", "n_head", "num_heads"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    raise ValueError("heads=True: the model's config does not say how many attention heads it has")


def _in_width(projection: Any, conv1d: bool) -> int:
    weight = projection.weight
    return int(weight.shape[0] if conv1d else weight.shape[1])


def check_mid_rows(model: Any) -> None:
    """Raises ``ValueError`` naming the architecture if its blocks have no ``resid_mid``."""
    config = getattr(model, "config", None)
    sub = sublayers_of(config, "sites=('resid_mid', ...)")
    if sub.parallel(config):
        raise ValueError(
            f"sites has 'resid_mid', but {parallel_title(config)} runs attention and MLP side by "
            "side on the same input: its blocks have no point after the attention alone. Use "
            "sites=('resid_post',); decompose=True still splits each block into its attention "
            "and MLP terms"
        )


class Components:
    """The terms a model adds to its residual stream on a batch of prompts.

    Attributes:
        labels: One per component (see :func:`component_labels`).
        vectors: ``[n_inputs, seq, n_components, d_model]`` float32 (0 at padding).
        attention_mask: ``[n_inputs, seq]``.
        block_outputs: ``[n_layers, n_inputs, seq, d_model]`` the blocks' own outputs, for
            checking the sums.
    """

    def __init__(
        self,
        labels: list[str],
        vectors: torch.Tensor,
        attention_mask: torch.Tensor,
        block_outputs: torch.Tensor,
    ) -> None:
        self.labels, self.vectors = labels, vectors
        self.attention_mask, self.block_outputs = attention_mask, block_outputs

    def __repr__(self) -> str:
        return f"Components({len(self.labels)} components, vectors {tuple(self.vectors.shape)})"
