"""The shipped toy-world demo model: offline loading, its knowledge, its corpus and its training."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace

import pytest
import torch

from murano_widgets.demo_model import DEMO_MODEL_PATH, corpus, load_demo_model
from murano_widgets.demo_model import train as train_module

# A few held-out prompts per family: phrasings never trained for that family.
N_PER_FAMILY = 4


@pytest.fixture(scope="module", autouse=True)
def offline():
    """Everything here must work with the hub switched off."""
    saved = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    yield
    if saved is None:
        del os.environ["HF_HUB_OFFLINE"]
    else:
        os.environ["HF_HUB_OFFLINE"] = saved


@pytest.fixture(scope="module")
def demo():
    return load_demo_model()


@pytest.fixture(scope="module")
def hf():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(DEMO_MODEL_PATH, dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(DEMO_MODEL_PATH)


def held_out_sample() -> list[corpus.EvalPrompt]:
    """The first prompts of every fact and arithmetic family, plus the two demo prompts."""
    chosen: list[corpus.EvalPrompt] = []
    counts: dict[tuple[str, str], int] = {}
    for prompt in corpus.eval_prompts(0):
        key = (prompt.family, prompt.split)
        if prompt.split in {"template", "pair"} and counts.get(key, 0) < N_PER_FAMILY:
            counts[key] = counts.get(key, 0) + 1
            chosen.append(prompt)
    chosen += [p for p in corpus.eval_prompts(0) if p.split == "demo"]
    return chosen


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the shipped files -----------------------------------------------------------------------


def test_shipped_folder_is_standard_and_small():
    names = {p.name for p in DEMO_MODEL_PATH.iterdir()}
    assert {
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "generation_config.json",
        "README.md",
        "checksums.json",
    } <= names
    tokenizer_config = json.loads((DEMO_MODEL_PATH / "tokenizer_config.json").read_text())
    assert tokenizer_config["tokenizer_class"] == "PreTrainedTokenizerFast"
    config = json.loads((DEMO_MODEL_PATH / "config.json").read_text())
    assert config["model_type"] == "llama" and config["num_hidden_layers"] >= 6
    total = sum(p.stat().st_size for p in DEMO_MODEL_PATH.iterdir() if p.is_file())
    assert total <= 10 * 1024 * 1024


def test_weights_match_recorded_checksum_and_model_card():
    recorded = json.loads((DEMO_MODEL_PATH / "checksums.json").read_text())
    for name, digest in recorded.items():
        assert sha256(DEMO_MODEL_PATH / name) == digest, f"{name} changed; retrain or update"
    card = (DEMO_MODEL_PATH / "README.md").read_text()
    # The card must describe these weights: its stated sha256 is the file's.
    assert sha256(DEMO_MODEL_PATH / "model.safetensors") in card


def test_load_demo_model_offline(demo):
    from nnterp import StandardizedTransformer

    config = json.loads((DEMO_MODEL_PATH / "config.json").read_text())
    assert isinstance(demo.nnterp, StandardizedTransformer)
    assert demo.n_layers == config["num_hidden_layers"]
    assert demo.vocab_size == config["vocab_size"] == len(demo.tokenizer)
    assert demo.dtype == torch.float32


def test_auto_classes_load_and_predict_held_out_facts(hf):
    model, tokenizer = hf
    sample = held_out_sample()
    misses = []
    for prompt in sample:
        ids = tokenizer(prompt.prompt, add_special_tokens=False, return_tensors="pt").input_ids
        with torch.no_grad():
            top = int(model(ids).logits[0, -1].argmax())
        if (
            tokenizer.decode([top]) != prompt.answer.split(" ")[1]
            and top != tokenizer(prompt.answer, add_special_tokens=False).input_ids[0]
        ):
            misses.append((prompt.prompt, prompt.answer, tokenizer.decode([top])))
    # A few arithmetic slips are allowed (the target is 80 %); facts and demos must be right.
    fact_misses = [m for m in misses if not any(op in m[0] for op in ("plus", "minus", "take"))]
    assert not fact_misses, fact_misses
    assert len(misses) <= len(sample) // 10, misses


def _lens_result(demo, prompts):
    from murano_widgets import LogitLens, PromptBatch, Results

    results = Results()
    results["prompts"] = PromptBatch(prompts)
    return LogitLens(demo)(results)["logit_lens"]


def _hooked_lens(model, tokenizer, prompt):
    """Independent lens: every block's output at the last token, final norm, unembedding."""
    outputs = []
    hooks = [
        layer.register_forward_hook(
            lambda _m, _i, out: outputs.append(out[0] if isinstance(out, tuple) else out)
        )
        for layer in model.model.layers
    ]
    try:
        ids = tokenizer(prompt, add_special_tokens=False, return_tensors="pt").input_ids
        with torch.no_grad():
            final = model(ids).logits[0, -1]
            lens = [model.lm_head(model.model.norm(h[0, -1])) for h in outputs]
    finally:
        for hook in hooks:
            hook.remove()
    return torch.stack(lens).softmax(-1), final.softmax(-1)


def test_answer_forms_over_depth(hf):
    model, tokenizer = hf
    probs, final = _hooked_lens(model, tokenizer, "The capital of France is")
    paris = tokenizer(" Paris", add_special_tokens=False).input_ids[0]
    torch.testing.assert_close(probs[-1], final)  # the last layer is the model's own output
    assert probs[-1, paris] > 0.5
    assert probs[0, paris] < 0.1  # not there from the start: it forms with depth
    probs, _ = _hooked_lens(model, tokenizer, "Monday, Tuesday,")
    wednesday = tokenizer(" Wednesday", add_special_tokens=False).input_ids[0]
    assert int(probs[-1].argmax()) == wednesday


def test_logit_lens_final_layer_predicts_held_out_answers(demo, hf):
    sample = held_out_sample()
    facts = [p for p in sample if p.family in corpus.FACT_FAMILIES or p.split == "demo"]
    lens = _lens_result(demo, [p.prompt for p in facts])
    model, tokenizer = hf
    for index, prompt in enumerate(facts):
        last = int(lens.attention_mask[index].nonzero().max())
        assert lens.predicted_words[-1][index][last] == prompt.answer, prompt
        # Against plain transformers: the same top-1 token and probability.
        ids = tokenizer(prompt.prompt, add_special_tokens=False, return_tensors="pt").input_ids
        with torch.no_grad():
            probs = model(ids).logits[0, -1].softmax(-1)
        assert float(lens.max_probs[-1, index, last]) == pytest.approx(float(probs.max()), abs=1e-4)


# --- the corpus ------------------------------------------------------------------------------


def test_corpus_is_deterministic_per_seed():
    first = corpus.corpus_hash(corpus.generate_corpus(seed=0, n_documents=500))
    again = corpus.corpus_hash(corpus.generate_corpus(seed=0, n_documents=500))
    other = corpus.corpus_hash(corpus.generate_corpus(seed=1, n_documents=500))
    assert first == again != other
    assert corpus.eval_prompts(0) == corpus.eval_prompts(0)


def test_corpus_hash_is_the_documented_digest():
    documents = ["a b", "c"]
    expected = hashlib.sha256(f"a b{corpus.EOS}c{corpus.EOS}".encode()).hexdigest()
    assert corpus.corpus_hash(documents) == expected


def test_shipped_corpus_hash_is_reproduced():
    info = json.loads((DEMO_MODEL_PATH / "training.json").read_text())
    config = info["config"]
    documents = corpus.generate_corpus(config["seed"], config["n_documents"])
    assert corpus.corpus_hash(documents) == info["corpus_sha256"]


def test_held_out_prompts_never_occur_in_training_text():
    text = "\n".join(corpus.generate_corpus(seed=0, n_documents=20_000))
    held_out = [p for p in corpus.eval_prompts(0) if p.split in {"template", "pair", "story"}]
    assert {p.family for p in held_out} >= set(corpus.FACT_FAMILIES) | {"addition", "story"}
    leaked = [p.prompt for p in held_out if p.prompt in text]
    assert not leaked, leaked[:5]
    # ...while the phrases they are built from do occur (the held-out part is the combination).
    assert "Everyone knows that" in text and "the capital of France is Paris" in text
    # The demo prompts are trained on purpose.
    assert "The capital of France is Paris" in text and "Monday, Tuesday, Wednesday" in text


def test_eval_answers_are_right():
    capitals = {
        p.prompt.split(" of ")[-1].removesuffix(" is"): p.answer
        for p in corpus.eval_prompts(0)
        if p.family == "capital" and " of " in p.prompt
    }
    assert capitals["France"] == " Paris" and capitals["Japan"] == " Tokyo"
    words = corpus.NUMBER_WORDS
    for prompt in corpus.eval_prompts(0):
        if prompt.family in {"addition", "subtraction"}:
            numbers = [words.index(w.lower()) for w in prompt.prompt.split() if w.lower() in words]
            a, b = numbers[-2:]
            assert words.index(prompt.answer.strip()) == (
                a + b if "plus" in prompt.prompt or "sum" in prompt.prompt else a - b
            )


# --- training --------------------------------------------------------------------------------


def test_short_training_run_lowers_the_loss_and_saves_a_loadable_model(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    result = train_module.train(train_module.TINY, tmp_path / "tiny", log_every=0)
    assert len(result.losses) == train_module.TINY.max_steps
    assert sum(result.losses[-5:]) / 5 < result.losses[0] - 0.5
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "tiny")
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "tiny")
    assert model.config.num_hidden_layers == train_module.TINY.n_layers
    assert len(tokenizer) == train_module.TINY.vocab_size


def test_training_is_reproducible(tmp_path):
    config = replace(train_module.TINY, n_documents=500, max_steps=5)
    train_module.train(config, tmp_path / "a", log_every=0)
    train_module.train(config, tmp_path / "b", log_every=0)
    train_module.train(replace(config, seed=1), tmp_path / "c", log_every=0)
    a, b, c = (sha256(tmp_path / name / "model.safetensors") for name in "abc")
    assert a == b != c
