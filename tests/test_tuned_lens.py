"""The tuned lens: format, checks, application, training and the shipped demo lens.

Interoperability with the real tuned-lens package lives in ``tests/tuned_lens_interop/``
(marker ``tuned_lens_interop``; it needs its own venv, see ``.ci/tuned_lens.sh``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from murano_widgets.lenses.evaluate import per_layer_kl
from murano_widgets.lenses.train import token_chunks
from murano_widgets.lenses.tuned import LENS_TYPE, TunedLens

ROOT = Path(__file__).resolve().parents[1]

TRAIN_TEXTS = [
    "The capital of France is Paris and the capital of Italy is Rome.",
    "one two three four five six seven eight nine ten",
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday",
    "Alice met Bob. Alice gave Bob a book. Bob thanked Alice.",
    "The Eiffel Tower is in the city of Paris.",
] * 12
HELD_OUT = [
    "Bob met Alice in Paris on Monday.",
    "three four five six and the city of Rome",
    "The book is in the Tower.",
    "Friday Saturday Sunday Monday",
]


def _random_lens(model, seed: int = 0, scale: float = 0.05) -> TunedLens:
    lens = TunedLens.identity(model)
    generator = torch.Generator().manual_seed(seed)
    lens.weight.normal_(0.0, scale, generator=generator)
    lens.bias.normal_(0.0, scale, generator=generator)
    return lens


def _block_outputs(model, text: str) -> list[torch.Tensor]:
    from murano_widgets.lenses.train import block_outputs

    ids = model.tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    return block_outputs(model, ids)


# ---------------------------------------------------------------------------------------------
# Applying a lens


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_a_zero_initialised_lens_is_exactly_the_logit_lens(load_tiny, arch):
    model = load_tiny(arch)
    lens = TunedLens.identity(model)
    assert lens.kind == "tuned"
    assert lens.num_hidden_layers == model.n_layers
    for layer, hidden in enumerate(_block_outputs(model, HELD_OUT[0])):
        translated = lens.translate(layer, hidden)
        assert torch.equal(model.unembed(translated), model.unembed(hidden))
    assert per_layer_kl(model, HELD_OUT, lens) == per_layer_kl(model, HELD_OUT)


def test_translate_applies_translator_layer_plus_one_and_none_to_the_last_block(load_tiny):
    model = load_tiny("llama")
    lens = _random_lens(model)
    hidden = torch.randn(5, lens.d_model)
    for layer in range(model.n_layers - 1):
        a, b = lens.weight[layer + 1].double(), lens.bias[layer + 1].double()
        expected = hidden.double() + hidden.double() @ a.T + b
        got = lens.translate(layer, hidden)
        assert got.dtype == torch.float32 and got.shape == hidden.shape
        torch.testing.assert_close(got.double(), expected, rtol=1e-5, atol=1e-6)
    assert lens.translate(model.n_layers - 1, hidden) is hidden
    # Leading dimensions are kept; other dtypes get their own copy of the translator.
    batched = torch.randn(2, 3, lens.d_model)
    torch.testing.assert_close(
        lens.translate(0, batched), lens.translate(0, batched.reshape(6, -1)).reshape(2, 3, -1)
    )
    half = lens.translate(0, hidden.bfloat16())
    assert half.dtype == torch.bfloat16
    torch.testing.assert_close(half.float(), lens.translate(0, hidden), rtol=0.05, atol=0.05)
    # An in-place edit of the translators reaches the cached copies.
    before = lens.translate(0, hidden.double())
    lens.weight[1].mul_(2.0)
    assert not torch.allclose(lens.translate(0, hidden.double()), before)
    # No autograd: the translators are plain tensors.
    assert not lens.translate(0, hidden).requires_grad


def test_translate_rejects_bad_layers_and_widths(load_tiny):
    model = load_tiny("llama")
    lens = TunedLens.identity(model)
    with pytest.raises(ValueError, match="layer must be a block index from 0 to 2"):
        lens.translate(3, torch.zeros(1, lens.d_model))
    with pytest.raises(ValueError, match="layer must be"):
        lens.translate(-1, torch.zeros(1, lens.d_model))
    with pytest.raises(ValueError, match=r"hidden must be \[\.\.\., 32\]"):
        lens.translate(0, torch.zeros(1, lens.d_model + 1))


def test_check_names_layer_count_and_width(load_tiny):
    model = load_tiny("llama")
    lens = TunedLens.identity(model)
    lens.check(model)
    fewer = TunedLens(lens.weight[:2], lens.bias[:2], lens.config)
    with pytest.raises(ValueError, match=r"2 layer translators .* has 3 layers"):
        fewer.check(model)
    wider = TunedLens(torch.zeros(3, 40, 40), torch.zeros(3, 40), lens.config)
    with pytest.raises(ValueError, match=r"d_model=40 .* hidden size 32"):
        wider.check(model)


def test_the_step_applies_the_lens_when_it_takes_one(load_tiny):
    """``LogitLens(model, lens=...)`` reads each block through its translator."""
    from murano_widgets import LogitLens, PromptBatch

    model = load_tiny("llama")
    lens = _random_lens(model, scale=0.2)
    result = LogitLens(model, lens=lens)({"prompts": PromptBatch([HELD_OUT[0]])})["logit_lens"]
    assert result.lens_kind == "tuned"
    json.dumps(result.lens_provenance)
    for layer, hidden in enumerate(_block_outputs(model, HELD_OUT[0])):
        probs = model.unembed(lens.translate(layer, hidden)).float().softmax(-1)
        top, token = probs.max(-1)
        torch.testing.assert_close(result.max_probs[layer, 0], top, rtol=1e-5, atol=1e-6)
        assert torch.equal(result.predicted_tokens[layer, 0], token)
    with pytest.raises(ValueError, match="layer"):
        LogitLens(model, lens=TunedLens(lens.weight[:2], lens.bias[:2], lens.config))


# ---------------------------------------------------------------------------------------------
# The format


def test_save_writes_tuned_lens_format_and_load_reads_it_back(load_tiny, tmp_path):
    model = load_tiny("llama")
    lens = _random_lens(model)
    lens.provenance["note"] = "round trip"
    folder = lens.save(tmp_path / "lens")
    config = json.loads((folder / "config.json").read_text())
    assert config == {
        "base_model_name_or_path": lens.config["base_model_name_or_path"],
        "d_model": 32,
        "num_hidden_layers": 3,
        "bias": True,
        "base_model_revision": None,
        "unembed_hash": None,
        "lens_type": LENS_TYPE,
    }
    state = torch.load(folder / "params.pt", weights_only=True)
    assert sorted(state) == sorted(f"{i}.{k}" for i in range(3) for k in ("weight", "bias"))
    assert state["1.weight"].shape == (32, 32) and state["1.bias"].shape == (32,)
    assert state["1.weight"].dtype == torch.float32
    # Each key holds its own storage, not the whole stacked tensor.
    assert (folder / "params.pt").stat().st_size < 3 * (32 * 32 + 32) * 4 + 4000
    loaded = TunedLens.load(folder, model)
    assert torch.equal(loaded.weight, lens.weight) and torch.equal(loaded.bias, lens.bias)
    assert loaded.config == lens.config
    assert loaded.provenance["note"] == "round trip"
    assert loaded.provenance["source"] == str(folder)
    json.dumps(loaded.provenance)


def test_load_accepts_the_old_misspelled_hash_and_a_config_without_lens_type(load_tiny, tmp_path):
    model = load_tiny("llama")
    folder = _random_lens(model).save(tmp_path / "old")
    config = json.loads((folder / "config.json").read_text())
    del config["unembed_hash"], config["lens_type"]
    config["unemebd_hash"] = "abc123"
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "provenance.json").unlink()
    loaded = TunedLens.load(folder, model)
    assert loaded.config["unembed_hash"] == "abc123"
    assert loaded.provenance["kind"] == "tuned"


def test_load_errors_are_clear(load_tiny, tmp_path):
    model = load_tiny("llama")
    good = _random_lens(model).save(tmp_path / "good")

    def variant(name: str) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        for file in ("config.json", "params.pt"):
            (folder / file).write_bytes((good / file).read_bytes())
        return folder

    with pytest.raises(FileNotFoundError, match="does not exist"):
        TunedLens.load(tmp_path / "nowhere", model)
    missing = variant("no-params")
    (missing / "params.pt").unlink()
    with pytest.raises(FileNotFoundError, match=r"has no params.pt"):
        TunedLens.load(missing, model)
    missing = variant("no-config")
    (missing / "config.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"has no config.json"):
        TunedLens.load(missing, model)

    other = variant("other-type")
    config = json.loads((other / "config.json").read_text())
    (other / "config.json").write_text(json.dumps({**config, "lens_type": "logit_lens"}))
    with pytest.raises(ValueError, match="lens of type 'logit_lens'"):
        TunedLens.load(other, model)

    # A lens for a wider model (config and translators agree, the model does not).
    wide = TunedLens(torch.zeros(3, 48, 48), torch.zeros(3, 48), {"base_model_name_or_path": "w"})
    with pytest.raises(ValueError, match=r"d_model=48 .* hidden size 32"):
        TunedLens.load(wide.save(tmp_path / "wide"), model)
    # A lens for a deeper model.
    deep = TunedLens(torch.zeros(5, 32, 32), torch.zeros(5, 32), {"base_model_name_or_path": "d"})
    with pytest.raises(ValueError, match=r"5 layer translators .* has 3 layers"):
        TunedLens.load(deep.save(tmp_path / "deep"), model)
    # Config and checkpoint that disagree.
    lying = variant("lying")
    (lying / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 4}))
    with pytest.raises(ValueError, match=r"missing \['3.bias', '3.weight'\]"):
        TunedLens.load(lying, model)
    lying = variant("lying-width")
    (lying / "config.json").write_text(json.dumps({**config, "d_model": 16}))
    with pytest.raises(ValueError, match=r"'0.weight' must be \[16, 16\]"):
        TunedLens.load(lying, model)
    broken = variant("broken")
    (broken / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        TunedLens.load(broken, model)


# ---------------------------------------------------------------------------------------------
# Training


def _train(model, **kwargs) -> TunedLens:
    settings = {"steps": 4, "tokens_per_step": 256, "seq_len": 32, "seed": 0, "progress": False}
    return TunedLens.train(model, TRAIN_TEXTS, **{**settings, **kwargs})


def test_chunks_start_with_eos_and_join_texts_with_it(load_tiny):
    model = load_tiny("llama")
    chunks = token_chunks(model, TRAIN_TEXTS, 32)
    eos = model.tokenizer.eos_token_id
    assert chunks.shape[1] == 32 and bool((chunks[:, 0] == eos).all())
    assert int((chunks[:, 1:] == eos).sum()) >= len(TRAIN_TEXTS) - 2
    with pytest.raises(ValueError, match="fewer than one chunk"):
        token_chunks(model, ["a"], 64)


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_training_lowers_every_layers_kl_on_held_out_text(load_tiny, arch):
    model = load_tiny(arch)
    lens = _train(model, steps=30, tokens_per_step=512, seq_len=64)
    logit, tuned = per_layer_kl(model, HELD_OUT), per_layer_kl(model, HELD_OUT, lens)
    for layer in range(model.n_layers - 1):
        assert tuned[layer] < logit[layer], (layer, logit, tuned)
    assert logit[-1] == tuned[-1] == 0.0
    # Translator 0 reads the embeddings, which the lens step never shows: it stays zero.
    assert not lens.weight[0].any() and not lens.bias[0].any()
    provenance = lens.provenance
    assert provenance["steps"] == 30 and provenance["tokens"] == 30 * 512
    assert provenance["seed"] == 0 and provenance["package"].startswith("murano_widgets ")
    assert provenance["base_model"] == model.name and "date" in provenance
    json.dumps(provenance)
    assert lens.training_state is None  # finished: nothing to resume


def test_training_is_deterministic_and_resumable(load_tiny, tmp_path):
    model = load_tiny("llama")
    straight = _train(model)
    again = _train(model)
    assert torch.equal(straight.weight, again.weight) and torch.equal(straight.bias, again.bias)
    assert not torch.equal(straight.weight, _train(model, seed=1).weight)

    half = _train(model, stop_after=2)
    assert half.provenance["steps"] == 2 and half.training_state["step"] == 2
    half.save(tmp_path / "half")
    resumed = _train(model, resume_from=tmp_path / "half")
    assert torch.equal(resumed.weight, straight.weight)
    assert torch.equal(resumed.bias, straight.bias)
    assert resumed.provenance["steps"] == 4

    with pytest.raises(ValueError, match="another run: seed was 0, now 1"):
        _train(model, seed=1, resume_from=tmp_path / "half")
    straight.save(tmp_path / "done")
    with pytest.raises(ValueError, match=r"has no training_state.pt"):
        _train(model, resume_from=tmp_path / "done")


def test_training_checkpoints_to_save_to(load_tiny, tmp_path):
    model = load_tiny("llama")
    _train(model, save_to=tmp_path / "ckpt", save_every=1, stop_after=3)
    saved = TunedLens.load(tmp_path / "ckpt", model)
    assert saved.training_state["step"] == 3


def test_training_memory_is_chunked(load_tiny):
    """A budget of a few rows of logits still trains, to the same translators up to rounding."""
    model = load_tiny("llama")
    small = _train(model, max_chunk_bytes=4 * model.vocab_size * 50)
    big = _train(model)
    torch.testing.assert_close(small.weight, big.weight, rtol=1e-4, atol=1e-6)


def test_training_rejects_bad_settings(load_tiny):
    model = load_tiny("llama")
    with pytest.raises(ValueError, match="steps must be a positive int"):
        _train(model, steps=0)
    with pytest.raises(ValueError, match="lr must be"):
        _train(model, lr=-1.0)
    with pytest.raises(ValueError, match="texts must be a non-empty list"):
        TunedLens.train(model, "just one string", steps=1, tokens_per_step=32)


# ---------------------------------------------------------------------------------------------
# The shipped demo lens


@pytest.fixture(scope="module")
def demo():
    from murano_widgets.demo_model import load_demo_model, load_demo_tuned_lens

    model = load_demo_model()
    return model, load_demo_tuned_lens(model)


def test_the_demo_lens_is_small_and_in_tuned_lens_format(demo):
    from murano_widgets.demo_model import DEMO_TUNED_LENS_PATH

    model, lens = demo
    files = {path.name for path in DEMO_TUNED_LENS_PATH.iterdir()}
    assert {"config.json", "params.pt", "README.md", "provenance.json"} <= files
    assert "training_state.pt" not in files
    assert sum(path.stat().st_size for path in DEMO_TUNED_LENS_PATH.iterdir()) < 1_000_000
    assert lens.num_hidden_layers == model.n_layers == 6 and lens.d_model == 128
    provenance = lens.provenance
    assert provenance["steps"] == provenance["steps_planned"]
    for key in ("base_model", "tokens", "seed", "date", "package", "seconds"):
        assert key in provenance, key


@pytest.mark.slow
def test_the_demo_lens_card_numbers_reproduce(demo):
    from murano_widgets.demo_model import DEMO_TUNED_LENS_PATH
    from murano_widgets.demo_model.train_tuned_lens import held_out_texts, parse_card

    model, lens = demo
    card = parse_card((DEMO_TUNED_LENS_PATH / "README.md").read_text())
    assert len(card["logit"]) == len(card["tuned"]) == model.n_layers
    for layer in range(model.n_layers - 1):
        assert card["tuned"][layer] < card["logit"][layer], layer
    texts = held_out_texts()
    for kind, measured in (
        ("logit", per_layer_kl(model, texts, batch_size=256)),
        ("tuned", per_layer_kl(model, texts, lens, batch_size=256)),
    ):
        for layer, value in enumerate(measured):
            assert abs(value - card[kind][layer]) <= 2e-4, (kind, layer, value, card[kind])


@pytest.mark.slow
def test_the_wheel_ships_the_demo_lenses(tmp_path):
    built = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", str(ROOT)),
            *("--no-deps", "--no-build-isolation", "-w", str(tmp_path), "-q"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    names = zipfile.ZipFile(next(tmp_path.glob("murano_widgets-*.whl"))).namelist()
    folder = "murano_widgets/demo_model/toy-world-tuned-lens/"
    for name in ("config.json", "params.pt", "README.md", "provenance.json"):
        assert folder + name in names, name
    assert "murano_widgets/lenses/tuned.py" in names
    assert "murano_widgets/demo_model/train_tuned_lens.py" in names
    # The Jacobian lens: its modules, the registry of published lenses, the shipped demo lens.
    folder = "murano_widgets/demo_model/toy-world-jacobian-lens/"
    for name in ("toy-world_jacobian_lens.pt", "README.md", "provenance.json"):
        assert folder + name in names, name
    for name in ("jacobian.py", "jacobian_fit.py", "jacobian_hub.py", "jacobian_registry.json"):
        assert "murano_widgets/lenses/" + name in names, name
    assert "murano_widgets/demo_model/fit_jacobian_lens.py" in names
