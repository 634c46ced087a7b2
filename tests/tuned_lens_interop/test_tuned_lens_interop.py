"""Interoperability with the real tuned-lens package (0.2.0), not a copy of its format.

tuned-lens cannot share this environment (it fails to import next to TransformerLens 4 and pins
its own stack), so its side runs in a venv of its own: ``TUNED_LENS_PYTHON`` names that venv's
python, which runs ``tl_side.py``. ``bash .ci/tuned_lens.sh`` builds the venv and runs this file.

For a tiny GPT-2 and a tiny Llama:

- tuned-lens builds a lens (``TunedLens.from_model``), sets every translator to non-zero values
  and saves it with its own ``save``; this package loads the folder, and every layer's lens
  distribution matches tuned-lens's own forward (``lens(h, idx)``) within 1e-5;
- the other way round: a lens built and saved here is loaded by tuned-lens
  (``from_model_and_pretrained``) without a warning, and tuned-lens's forward matches ours.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch
from other_venv import run_side, venv_python

pytestmark = pytest.mark.tuned_lens_interop

HERE = Path(__file__).resolve().parent
TEXT = "The capital of France is Paris and one two three four"
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def tl_python() -> str:
    return venv_python("TUNED_LENS_PYTHON", ".ci/tuned_lens.sh")


def _tl(python: str, *args: str) -> None:
    run_side(python, HERE / "tl_side.py", "tuned-lens", *args)


def _tuned_lens_forward(python: str, model_dir: Path, lens_dir: Path, ids: torch.Tensor, tmp):
    torch.save(ids, tmp / "ids.pt")
    _tl(
        python, "forward", "--model", str(model_dir), "--lens", str(lens_dir),
        "--ids", str(tmp / "ids.pt"), "--out", str(tmp / "tl.pt"),
    )  # fmt: skip
    return torch.load(tmp / "tl.pt", weights_only=True)


def _compare(model, lens, ids: torch.Tensor, reference: dict) -> None:
    """Every block output's lens distribution against tuned-lens's, within TOLERANCE."""
    from murano_widgets.lenses.train import block_outputs

    hidden = block_outputs(model, ids)
    n = model.n_layers
    assert reference["lens_logprobs"].shape[0] == n
    for layer in range(n):
        with torch.no_grad():
            ours = model.unembed(lens.translate(layer, hidden[layer])).float().softmax(-1)
        if layer < n - 1:
            # Block `layer`'s output is tuned-lens's hidden state `layer + 1`.
            theirs = reference["lens_logprobs"][layer + 1].reshape(ours.shape).exp()
        else:
            # The last block's output through the lens is the model's own output.
            theirs = reference["final_logprobs"].reshape(ours.shape).exp()
        error = float((ours - theirs).abs().max())
        assert error <= TOLERANCE, f"layer {layer}: max |p_ours - p_tuned_lens| = {error:.2e}"
    step_matches(model, lens, ids, reference)


def step_matches(model, lens, ids: torch.Tensor, reference: dict) -> None:
    """The lens step's top-1 probabilities equal tuned-lens's, once the step takes ``lens=``."""
    from murano_widgets import LogitLens, PromptBatch

    if "lens" not in inspect.signature(LogitLens).parameters:
        return
    text = model.tokenizer.decode(ids[0])
    if model.tokenizer(text, add_special_tokens=False)["input_ids"] != ids[0].tolist():
        return  # the text does not tokenize back to the same ids
    result = LogitLens(model, lens=lens)({"prompts": PromptBatch([text])})["logit_lens"]
    n = model.n_layers
    for layer in range(n - 1):
        theirs = reference["lens_logprobs"][layer + 1, 0].exp().max(-1).values
        error = float((result.max_probs[layer, 0] - theirs).abs().max())
        assert error <= TOLERANCE, f"step, layer {layer}: {error:.2e}"


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_a_lens_saved_by_tuned_lens_reads_the_same_here(tl_python, tiny_model_dirs, arch, tmp_path):
    from murano_widgets import MuranoModel
    from murano_widgets.lenses.tuned import TunedLens

    model_dir = tiny_model_dirs[arch]
    lens_dir = tmp_path / "saved-by-tuned-lens"
    _tl(tl_python, "make", "--model", str(model_dir), "--out", str(lens_dir), "--seed", "3")
    model = MuranoModel(model_dir)
    lens = TunedLens.load(lens_dir, model)
    ids = model.tokenizer(TEXT, return_tensors="pt", add_special_tokens=False)["input_ids"]
    reference = _tuned_lens_forward(tl_python, model_dir, lens_dir, ids, tmp_path)
    # Every translator, the embeddings' one included, arrived as tuned-lens holds it.
    assert torch.equal(lens.weight, reference["weights"])
    assert torch.equal(lens.bias, reference["biases"])
    assert lens.weight[1:].abs().sum() > 0 and lens.bias[1:].abs().sum() > 0
    assert lens.config["unembed_hash"] == reference["config"]["unembed_hash"]
    _compare(model, lens, ids, reference)
    # Saving it again here keeps what tuned-lens wrote (its unembedding hash included).
    again = TunedLens.load(lens.save(tmp_path / "again"), model)
    assert again.config == lens.config and torch.equal(again.weight, lens.weight)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_a_lens_saved_here_reads_the_same_in_tuned_lens(tl_python, tiny_model_dirs, arch, tmp_path):
    from murano_widgets import MuranoModel
    from murano_widgets.lenses.tuned import TunedLens

    model_dir = tiny_model_dirs[arch]
    model = MuranoModel(model_dir)
    lens = TunedLens.identity(model)
    generator = torch.Generator().manual_seed(5)
    lens.weight.normal_(0.0, 0.05, generator=generator)
    lens.bias.normal_(0.0, 0.05, generator=generator)
    lens_dir = lens.save(tmp_path / "saved-here")
    ids = model.tokenizer(TEXT, return_tensors="pt", add_special_tokens=False)["input_ids"]
    reference = _tuned_lens_forward(tl_python, model_dir, lens_dir, ids, tmp_path)
    assert reference["warnings"] == [], reference["warnings"]
    assert torch.equal(reference["weights"], lens.weight)
    assert torch.equal(reference["biases"], lens.bias)
    _compare(model, lens, ids, reference)


def test_a_lens_trained_here_reads_the_same_in_tuned_lens(tl_python, tiny_model_dirs, tmp_path):
    from murano_widgets import MuranoModel
    from murano_widgets.lenses.tuned import TunedLens

    model_dir = tiny_model_dirs["llama"]
    model = MuranoModel(model_dir)
    texts = [TEXT, "Monday Tuesday Wednesday", "Alice met Bob in Rome."] * 20
    lens = TunedLens.train(model, texts, steps=3, tokens_per_step=128, seq_len=32, progress=False)
    lens_dir = lens.save(tmp_path / "trained-here")
    ids = model.tokenizer(TEXT, return_tensors="pt", add_special_tokens=False)["input_ids"]
    reference = _tuned_lens_forward(tl_python, model_dir, lens_dir, ids, tmp_path)
    assert reference["warnings"] == [], reference["warnings"]
    _compare(model, lens, ids, reference)
