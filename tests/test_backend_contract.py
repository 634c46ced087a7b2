"""The step touches a model only through the ModelBackend contract.

A minimal backend written here on plain transformers (forward hooks, no nnsight, no nnterp)
must give the same lens as the independent reference, on both of the step's paths.
"""

from __future__ import annotations

import contextlib

import pytest
import torch
from reference import ReferenceLens, _blocks_and_norm
from test_logit_lens import PROMPTS, assert_matches_reference, run_lens
from transformers import AutoModelForCausalLM, AutoTokenizer

from murano_widgets import ModelBackend


class PlainBackend:
    """The contract on a bare Hugging Face model: the trace runs the forward with hooks."""

    def __init__(self, folder):
        self.hf = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left"
        self.blocks, self.norm = _blocks_and_norm(self.hf)
        self.name = str(folder)
        self.n_layers = len(self.blocks)
        self.vocab_size = self.hf.lm_head.weight.shape[0]
        self.device = torch.device("cpu")
        self.dtype = torch.float32
        self.context_length = None
        self.trained_length = None
        self.forward_kwargs = frozenset({"position_ids"})
        self.outputs: list[torch.Tensor] = []
        self.trace_kwargs: list[dict] = []

    @contextlib.contextmanager
    def trace(self, inputs, **kwargs):
        self.trace_kwargs.append(kwargs)
        self.outputs = []
        hooks = [
            block.register_forward_hook(
                lambda _m, _i, out: self.outputs.append(out[0] if isinstance(out, tuple) else out)
            )
            for block in self.blocks
        ]
        try:
            self.hf(**inputs)
        finally:
            for hook in hooks:
                hook.remove()
        yield self

    def layer(self, index):
        return self.outputs[index]

    def project_on_vocab(self, hidden):
        return self.hf.lm_head(self.norm(hidden))

    def unembed(self, hidden, out=None):
        logits = self.hf.lm_head(self.norm(hidden))
        return logits if out is None else out.copy_(logits)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
@pytest.mark.parametrize("in_trace", [False, True], ids=["after-trace", "in-trace"])
def test_the_step_runs_on_a_minimal_backend_without_nnsight(arch, in_trace, tiny_model_dirs):
    backend = PlainBackend(tiny_model_dirs[arch])
    assert isinstance(backend, ModelBackend)
    lens = run_lens(backend, top_k=5, reduce_in_trace=in_trace)
    assert_matches_reference(lens, ReferenceLens(tiny_model_dirs[arch]), PROMPTS)
    # It asked only for what the backend said its forward accepts.
    assert backend.trace_kwargs == [{}]


def test_a_model_without_the_contract_is_refused_before_any_work():
    from murano_widgets import LogitLens

    with pytest.raises(TypeError, match=r"MuranoModel\('gpt2'\)"):
        LogitLens("gpt2")
    with pytest.raises(TypeError, match=r"lacks .*vocab_size"):
        LogitLens(object())


def test_reading_inside_blocks_names_what_a_backend_lacks(tiny_model_dirs, load_tiny):
    """Rows inside a block (resid_mid) need the block's envoy: a backend with a config but no
    ``block`` is told so by name when the step is made (a TypeError, before any model work),
    not with an AttributeError from mid-trace."""
    from murano_widgets import LogitLens
    from murano_widgets.backends.contract import BlockBackend

    backend = PlainBackend(tiny_model_dirs["gpt2"])
    backend.config = backend.hf.config  # the architecture is known; its blocks are not open
    assert isinstance(backend, ModelBackend) and not isinstance(backend, BlockBackend)

    def no_trace(*args, **kwargs):
        raise AssertionError("the model ran before the step was refused")

    backend.trace = no_trace
    with pytest.raises(TypeError, match=r"resid_mid.*needs block, unembedding_weight"):
        LogitLens(backend, sites=("resid_mid", "resid_post"))
    # Both of this package's backends open their blocks.
    assert isinstance(load_tiny("gpt2"), BlockBackend)
