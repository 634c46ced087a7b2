"""Notices when the installed nnsight and nnterp stop working together.

nnterp 1.3.0 fails to import with nnsight 0.8 (``nnsight.intervention.tracing`` is gone); this
runs the exact calls the step relies on, so an upgrade that breaks them fails here by name.
"""

from __future__ import annotations

from importlib.metadata import version

import torch


def test_nnterp_imports_and_traces_with_the_installed_nnsight(tiny_model_dirs):
    from nnterp import StandardizedTransformer  # the import itself fails on a broken pair

    model = StandardizedTransformer(str(tiny_model_dirs["gpt2"]), device_map="cpu")
    ids = model.tokenizer(["one two three"], return_tensors="pt")
    with torch.no_grad(), model.trace(dict(ids)):
        hidden = model.layers_output[model.num_layers - 1].save()
        projected = model.project_on_vocab(hidden).save()
        logits = model.logits.save()
    assert isinstance(hidden, torch.Tensor), "block outputs must be tensors (transformers 5)"
    assert hidden.shape == (1, ids["input_ids"].shape[1], model.hidden_size)
    torch.testing.assert_close(projected, logits)
    print("nnsight", version("nnsight"), "nnterp", version("nnterp"))
