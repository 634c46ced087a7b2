"""The nnterp backend: a model behind nnterp's ``StandardizedTransformer``.

nnterp gives every supported architecture the same names (``layers_output[i]``, ``ln_final``,
``lm_head``), so one class serves GPT-2, Llama, Qwen, Gemma, GPT-NeoX and the rest. nnterp 1.3
works with nnsight below 0.8 only, so it is an extra (``murano-widgets[nnterp-local]``: local
use, since NDIF's server accepts nnsight 0.8 clients only); see
:mod:`murano_widgets.backends.nnsight` for the others.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from murano_widgets.backends.architectures import UnsupportedModelError
from murano_widgets.backends.base import MuranoModel
from murano_widgets.backends.loading import (
    check_source_argument,
    quiet_loading,
    require_nnterp,
    resolve_device,
    resolve_dtype,
    resolve_source,
    with_tokenizer,
)

__all__ = ["NNterpModel"]


class NNterpModel(MuranoModel):
    """``MuranoModel(..., backend="nnterp")``: see :class:`murano_widgets.MuranoModel`."""

    backend = "nnterp"

    def __init__(
        self,
        model_id_or_path: str | os.PathLike[str],
        *,
        device: str | torch.device | None = None,
        dtype: torch.dtype | str | None = None,
        backend: str = "nnterp",
        self_check: bool = True,
        **kwargs: Any,
    ) -> None:
        check_source_argument(model_id_or_path)
        # Not a bare ModuleNotFoundError: what happened, and how to have nnterp or do without.
        require_nnterp()
        self.device = resolve_device(device)
        source = resolve_source(model_id_or_path)
        torch_dtype = resolve_dtype(dtype, self.device, source)
        from nnterp import StandardizedTransformer
        from nnterp.rename_utils import RenamingError

        kwargs.setdefault("device_map", str(self.device))
        with quiet_loading():
            try:
                # The tokenizer explicitly, as for the nnsight backend (see with_tokenizer).
                self.nnterp = StandardizedTransformer(
                    source, dtype=torch_dtype, **with_tokenizer(source, kwargs)
                )
            except RenamingError as error:
                # backend="auto" falls back to plain nnsight on this (Phi, for one).
                raise UnsupportedModelError(
                    f"nnterp cannot rename the model at {str(model_id_or_path)!r}: "
                    f"{' '.join(str(error).split())}"
                ) from error
            # The real weights now, while loading is what the user asked for, rather than
            # in the middle of the first lens call.
            self.nnterp.dispatch()
        self._setup(
            str(model_id_or_path),
            self.nnterp.tokenizer,
            self.nnterp._model,
            int(self.nnterp.num_layers),
            self_check,
        )

    @property
    def config(self) -> Any:
        """The Hugging Face config of the model."""
        return self.nnterp.config

    def _nnsight_model(self) -> Any:
        return self.nnterp

    @property
    def _root(self) -> Any:
        return self.nnterp

    @property
    def _final_norm(self) -> torch.nn.Module:
        return self.nnterp.ln_final._module

    @property
    def _lm_head(self) -> torch.nn.Module:
        return self.nnterp.lm_head._module

    @property
    def _hf_model(self) -> torch.nn.Module:
        return self.nnterp._model

    @property
    def _blocks(self) -> list[torch.nn.Module]:
        return [envoy._module for envoy in self.nnterp.layers]

    def trace(self, inputs: dict[str, torch.Tensor], **kwargs: Any) -> Any:
        """Opens one nnsight tracing context (``remote=True`` runs it on NDIF, which needs an
        nnsight its server accepts: see :func:`~murano_widgets.backends.nnsight.check_ndif_client`).
        """
        remote = kwargs.get("remote")
        if remote and remote != "local":
            # Here, not at the top: a remote trace sends the model to NDIF by value with the
            # globals its methods name, and this is the client's alone.
            from murano_widgets.backends.nnsight import check_ndif_client

            check_ndif_client()
        return self.nnterp.trace(inputs, **kwargs)

    def layer(self, index: int) -> Any:
        """The output of decoder block ``index``, inside a trace (nnterp's ``layers_output``)."""
        output = self.nnterp.layers_output[index]
        # transformers 5 blocks return a tensor; older ones a tuple whose [0] is the hidden state.
        return output[0] if isinstance(output, tuple) else output

    def block(self, index: int) -> Any:
        """Inside a trace: decoder block ``index``'s envoy (its sublayers by their own names)."""
        return self.nnterp.layers[index]

    def unembedding_weight(self) -> Any:
        """Inside a trace: ``lm_head``'s weight where the model runs."""
        return self.nnterp.lm_head.weight

    def project_on_vocab(self, hidden: Any) -> Any:
        """Final norm then unembedding, inside a trace."""
        return self.finalize_logits(self.nnterp.lm_head(self.nnterp.ln_final(hidden)))
