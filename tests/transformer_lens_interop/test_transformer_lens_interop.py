"""Interoperability with the real TransformerLens (4.3.0) Jacobian lens, not a copy of its format.

TransformerLens brings its own stack, so its side runs in a venv of its own:
``TRANSFORMER_LENS_PYTHON`` names that venv's python, which runs ``tl_side.py``;
``bash .ci/transformer_lens.sh`` builds the venv and runs this file. Both sides boot the same
tiny GPT-2 and Llama folders (built from configs, offline), TransformerLens with
``TransformerBridge.boot_transformers(folder)`` and ``default_prepend_bos = False`` (so both
tokenize a text as the tokenizer alone does):

- a lens fitted by TransformerLens loads here, and every layer's distribution read here equals
  TransformerLens's ``readout`` within 1e-5;
- a lens fitted here loads in TransformerLens (its ``validate_model`` passes) and reads out the
  same, within 1e-5;
- fitting here and there on the same texts and settings gives the same matrices (relative
  Frobenius difference ≤ 1e-4);
- a fit checkpoint written here loads in TransformerLens as its running mean, and one in the
  reference's schema loads alike in both;
- the registry of published lenses is TransformerLens's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from other_venv import run_side
from tiny_models import CORPUS

pytestmark = pytest.mark.transformer_lens_interop

HERE = Path(__file__).resolve().parent
ARCHS = ["gpt2", "llama"]  # the conftest's folders
TEXTS = list(dict.fromkeys(CORPUS))[:5]  # 10 to 30 tokens each in the tiny tokenizer
SETTINGS = {"skip_first": 4, "max_seq_len": 64, "dim_batch": 8}
READ = [
    "The capital of France is Paris and the capital of Italy is Rome.",
    "Alice met Bob. Alice gave Bob a book.",
]
READ_TOLERANCE = 1e-5
FIT_TOLERANCE = 1e-4


def _tl(python: str, *args: str) -> None:
    run_side(python, HERE / "tl_side.py", "TransformerLens", *args)


@pytest.fixture(scope="module")
def tl_fitted(tl_python, folders, work) -> dict[str, Path]:
    """A lens fitted by TransformerLens for each model, saved by it in float32."""
    texts = work / "texts.json"
    texts.write_text(json.dumps(TEXTS))
    out = {}
    for arch, folder in folders.items():
        out[arch] = work / f"tl-{arch}.pt"
        _tl(
            tl_python, "fit", "--model", folder, "--texts", str(texts), "--out", str(out[arch]),
            "--skip-first", str(SETTINGS["skip_first"]),
            "--max-seq-len", str(SETTINGS["max_seq_len"]),
            "--dim-batch", str(SETTINGS["dim_batch"]),
        )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def ours_fitted(models):
    from murano_widgets import JacobianLens

    return {
        arch: JacobianLens.fit(model, TEXTS, progress=False, corpus="interop", **SETTINGS)
        for arch, model in models.items()
    }


def _read_ids(model) -> list[torch.Tensor]:
    return [torch.tensor(model.tokenizer(text)["input_ids"]) for text in READ]


def _tl_readout(python, folder, lens_file, ids, work, name) -> dict:
    torch.save(ids, work / f"{name}-ids.pt")
    _tl(
        python, "readout", "--model", folder, "--lens", str(lens_file),
        "--ids", str(work / f"{name}-ids.pt"), "--out", str(work / f"{name}-readout.pt"),
    )  # fmt: skip
    return torch.load(work / f"{name}-readout.pt", weights_only=True)


def _our_probs(model, lens, ids: list[torch.Tensor]) -> list[torch.Tensor]:
    """Every layer's distribution through the package's own step, one prompt at a time:
    ``[layers, seq, vocab]``."""
    from murano_widgets import LogitLens

    step = LogitLens(model, lens=lens, store_full_probs=True)
    out = []
    for row in ids:
        text = model.tokenizer.decode(row)
        result = step.run([text], prompt_ids=[row.tolist()])
        out.append(result.all_probs[:, 0, result.positions(0)])
    return out


def _assert_same_readout(ours: list[torch.Tensor], theirs: list[dict]) -> None:
    for p, (mine, logits) in enumerate(zip(ours, theirs, strict=True)):
        assert sorted(logits) == list(range(mine.shape[0])), sorted(logits)
        for layer in sorted(logits):
            reference = logits[layer].softmax(-1)
            error = float((mine[layer] - reference).abs().max())
            assert error <= READ_TOLERANCE, (p, layer, error)


@pytest.mark.parametrize("arch", ARCHS)
def test_a_lens_fitted_by_transformer_lens_reads_the_same_here(
    arch, tl_python, folders, models, tl_fitted, work
):
    from murano_widgets import JacobianLens

    model = models[arch]
    lens = JacobianLens.load(tl_fitted[arch], model)
    assert lens.metadata["transformer_lens_fit"] is True and lens.n_prompts == len(TEXTS)
    ids = _read_ids(model)
    theirs = _tl_readout(tl_python, folders[arch], tl_fitted[arch], ids, work, f"tl-{arch}")
    for layer, matrix in theirs["lens"]["jacobians"].items():
        assert torch.equal(lens.jacobians[layer], matrix)
    _assert_same_readout(_our_probs(model, lens, ids), theirs["logits"])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_a_lens_fitted_here_loads_in_transformer_lens_and_reads_the_same(
    arch, dtype, tl_python, folders, models, ours_fitted, work
):
    from murano_widgets import JacobianLens

    model = models[arch]
    name = f"ours-{arch}-{str(dtype)[6:]}"
    file = ours_fitted[arch].save(work / f"{name}.pt", dtype=dtype)
    ids = _read_ids(model)
    theirs = _tl_readout(tl_python, folders[arch], file, ids, work, name)
    ours = JacobianLens.load(file, model)
    assert theirs["lens"]["n_prompts"] == ours.n_prompts == len(TEXTS)
    assert theirs["lens"]["metadata"]["model_name"] == folders[arch]
    for layer, matrix in theirs["lens"]["jacobians"].items():
        assert torch.equal(ours.jacobians[layer], matrix)
    _assert_same_readout(_our_probs(model, ours, ids), theirs["logits"])


@pytest.mark.parametrize("arch", ARCHS)
def test_fitting_here_and_there_gives_the_same_matrices(arch, tl_fitted, ours_fitted):
    theirs = torch.load(tl_fitted[arch], weights_only=True)
    ours = ours_fitted[arch]
    assert sorted(theirs["J"]) == ours.source_layers
    assert theirs["n_prompts"] == ours.n_prompts == len(TEXTS)
    for layer, matrix in theirs["J"].items():
        error = float((ours.jacobians[layer] - matrix).norm() / matrix.norm())
        assert error <= FIT_TOLERANCE, (layer, error)
        # Far from the identity (the logit lens): the agreement says something.
        assert float((matrix - torch.eye(matrix.shape[0])).norm() / matrix.norm()) > 0.1


@pytest.mark.parametrize("arch", ARCHS)
def test_a_fit_checkpoint_loads_in_transformer_lens_as_its_running_mean(
    arch, tl_python, models, work
):
    from murano_widgets import JacobianLens

    model = models[arch]
    checkpoint = work / f"checkpoint-{arch}.pt"
    three = JacobianLens.fit(
        model, TEXTS[:3], checkpoint_path=checkpoint, progress=False, **SETTINGS
    )
    _tl(tl_python, "load", "--lens", str(checkpoint), "--out", str(work / "ckpt-state.pt"))
    theirs = torch.load(work / "ckpt-state.pt", weights_only=True)
    assert theirs["n_prompts"] == 3
    assert theirs["metadata"]["converted_from"] == "jacobian_lens_checkpoint"
    assert theirs["metadata"]["target_layer"] == model.n_layers - 1
    assert theirs["metadata"]["model_name"] == model.name
    ours = JacobianLens.load(checkpoint, model)
    for layer, matrix in theirs["jacobians"].items():
        assert torch.equal(matrix, three.jacobians[layer])  # the running mean, exactly
        assert torch.equal(matrix, ours.jacobians[layer])

    # The reference implementation's own six keys (its write_checkpoint), read alike.
    generator = torch.Generator().manual_seed(0)
    sums = {layer: torch.randn(32, 32, generator=generator) * 7 for layer in (0, 1)}
    reference = work / f"reference-{arch}.pt"
    torch.save(
        {
            "jacobian_sum": sums,
            "n_done": 7,
            "next_idx": 9,
            "source_layers": [0, 1],
            "target_layer": 2,
            "skip_first_n": 16,
        },
        reference,
    )
    _tl(tl_python, "load", "--lens", str(reference), "--out", str(work / "ref-state.pt"))
    theirs = torch.load(work / "ref-state.pt", weights_only=True)
    ours = JacobianLens.load(reference, model)
    assert theirs["n_prompts"] == ours.n_prompts == 7
    for layer in (0, 1):
        assert torch.equal(theirs["jacobians"][layer], ours.jacobians[layer])
        torch.testing.assert_close(ours.jacobians[layer], sums[layer] / 7, rtol=0, atol=0)


def test_the_registry_is_transformer_lens_s(tl_python, work):
    from murano_widgets.lenses import jacobian_hub

    _tl(tl_python, "registry", "--out", str(work / "registry.json"))
    theirs = json.loads((work / "registry.json").read_text())
    ours = {k: v for k, v in jacobian_hub.registry().items() if k != "_source"}
    assert ours == theirs
