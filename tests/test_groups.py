"""Token groups (Wendler et al.'s word sets) and the logit difference, against independent
computations: a re-implementation of the reference code's set builder that scans the whole
vocabulary, numpy on fixed logits, the full distribution, and plain transformers hooks."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from reference import _blocks_and_norm
from tiny_models import build_tokenizer
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

from murano_widgets import Lens, TokenGroup, run_logit_lens
from murano_widgets.groups import byte_characters
from murano_widgets.step.groups import PromptRows
from murano_widgets.step.reductions import Tracked, reduce_logits

PROMPTS = ["The Eiffel Tower is in the city of", "one two three", "Alice met Bob. Alice gave"]
WORDS = ["Paris", "Tuesday", "capital", "日本", "Zürich", "café", "naïve", "🙂", "xyzzy"]


def sentencepiece_tokenizer() -> PreTrainedTokenizerFast:
    """A SentencePiece-style vocabulary: ``▁`` marks a space, ``<0xNN>`` bytes fall back."""
    pieces = ["<unk>", "▁", "▁f", "▁fl", "▁flower", "f", "fl", "flo", "l", "o", "w", "e", "r"]
    pieces += ["▁c", "▁cat", "▁ca", "c", "ca", "a", "t", "花", "▁花", "▁日", "本", "▁Z", "Zü"]
    pieces += [f"<0x{b:02X}>" for b in range(256)]
    tokenizer = Tokenizer(
        models.BPE(
            vocab={p: i for i, p in enumerate(pieces)},
            merges=[],
            byte_fallback=True,
            unk_token="<unk>",
        )
    )
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>")


def wendler_set(tokenizer, word: str) -> set[int]:
    """The reference's set, found the other way round: every token of the vocabulary is read
    back to its bytes and kept if it is a prefix (of one character or more) of the word or of
    the word after a space, or the lone first byte of a multibyte first character."""
    vocab = tokenizer.get_vocab()
    first = word[0].encode("utf-8")
    lead = first[:1] if len(first) > 1 else None
    wanted = [word.encode("utf-8"), (" " + word).encode("utf-8")]
    byte_of = {c: b for b, c in enumerate(byte_characters())}
    sentencepiece = any(token.startswith("▁") for token in vocab)
    found = set()
    for token, index in vocab.items():
        fallback = re.fullmatch(r"<0x([0-9A-F]{2})>", token)
        if sentencepiece and fallback:
            if lead is not None and bytes([int(fallback.group(1), 16)]) == lead:
                found.add(index)
            continue
        if sentencepiece:
            raw = token.replace("▁", " ").encode("utf-8")
        elif all(c in byte_of for c in token):
            raw = bytes(byte_of[c] for c in token)
        else:
            continue  # a special token
        if raw in (lead, b" " + lead if lead else None):
            found.add(index)
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if text.strip() and any(w.startswith(raw) for w in wanted):
            assert text.lstrip(" ") and word.startswith(text.lstrip(" "))
            found.add(index)
    return found


@pytest.mark.parametrize("build", [build_tokenizer, sentencepiece_tokenizer])
def test_word_groups_are_wendlers_sets(build):
    tokenizer = build()
    words = [*WORDS, "flower", "cat", "花园"]
    checked = 0
    for word in words:
        expected = wendler_set(tokenizer, word)
        if not expected:
            with pytest.raises(ValueError, match="no token of the vocabulary"):
                TokenGroup.word(tokenizer, word)
            continue
        group = TokenGroup.word(tokenizer, word)
        assert set(group.ids) == expected, word
        assert len(group.ids) == len(set(group.ids))
        checked += 1
    assert checked >= 4


def test_word_groups_hold_the_spaced_word_and_its_leading_byte():
    bpe = build_tokenizer()
    paris = TokenGroup.word(bpe, "Paris")
    assert bpe.encode(" Paris")[0] in paris.ids and bpe.encode("Paris")[0] in paris.ids
    sp = sentencepiece_tokenizer()
    vocab = sp.get_vocab()
    flower = TokenGroup.word(sp, "flower")
    assert {vocab[t] for t in ("▁flower", "▁fl", "▁f", "f", "fl", "flo")} == set(flower.ids)
    assert vocab["▁"] not in flower.ids  # the space alone is no prefix of the word
    assert vocab["<0xE8>"] in TokenGroup.word(sp, "花园").ids  # 花 is E8 8A B1


def test_token_groups_from_texts_and_ids():
    tokenizer = build_tokenizer()
    space_paris = tokenizer.encode(" Paris")[0]
    group = TokenGroup.tokens(tokenizer, [" Paris", space_paris, 5, 5])
    assert group.ids == (space_paris, 5)
    assert "2 tokens" in repr(group)
    with pytest.raises(ValueError, match="tokens, not one"):
        TokenGroup.tokens(tokenizer, ["The Eiffel Tower"])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        TokenGroup.tokens(tokenizer, [len(tokenizer)])
    with pytest.raises(ValueError, match="list of token texts or ids"):
        TokenGroup.tokens(tokenizer, " Paris")
    with pytest.raises(ValueError, match="non-empty string"):
        TokenGroup.word(tokenizer, "")


def test_group_sums_against_numpy_on_fixed_logits():
    rng = np.random.default_rng(0)
    rows, vocab = 7, 300
    logits = rng.normal(0, 3, (rows, vocab)).astype(np.float32)
    logits[2, 17] = 40.0  # one row nearly certain
    tables = [
        [[17, 3, 250, -1], [5, -1, -1, -1]],
        [[0, 1, 2, 299], [17, -1, -1, -1]],
    ]
    prompt_of_row = np.array([0, 1, 0, 1, 1, 0, 0])
    tracked = Tracked(
        torch.zeros(0, dtype=torch.long),
        groups=PromptRows(torch.tensor(tables), torch.tensor(prompt_of_row)),
    )
    fields = reduce_logits(torch.tensor(logits), None, 3, False, tracked=tracked)
    z = logits.astype(np.float64)
    probs = np.exp(z - z.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    expected = np.array(
        [
            [sum(probs[r, i] for i in ids if i >= 0) for ids in tables[prompt_of_row[r]]]
            for r in range(rows)
        ]
    )
    np.testing.assert_allclose(fields["group_probs"].numpy(), expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("in_trace", [False, True])
def test_groups_against_the_full_distribution(load_tiny, in_trace):
    model = load_tiny("gpt2")
    tokenizer = model.tokenizer
    the = tokenizer.encode(" the")[0]
    groups = {
        "paris": TokenGroup.word(tokenizer, "Paris"),
        "one": TokenGroup.tokens(tokenizer, [the]),
        "per_prompt": ["Paris", "Tuesday", "capital"],
        "word": "Alice",
    }
    result = run_logit_lens(
        model,
        PROMPTS,
        groups=groups,
        store_full_probs=True,
        reduce_in_trace=in_trace,
        targets=[" the"],
    )
    assert result.group_names == list(groups)
    probs = result.all_probs.double()  # [layers, prompts, seq, vocab]
    mask = result.attention_mask.bool()
    for prompt in range(len(PROMPTS)):
        for g, name in enumerate(groups):
            ids = result.group_token_ids[prompt][g]
            value = groups[name]
            word = value[prompt] if isinstance(value, list) else value
            if isinstance(word, str):
                assert set(ids) == wendler_set(tokenizer, word)
            expected = probs[:, prompt][..., ids].sum(-1)
            ours = result.group_probs[:, prompt, :, g]
            torch.testing.assert_close(
                ours[:, mask[prompt]].double(), expected[:, mask[prompt]], atol=1e-6, rtol=1e-5
            )
            assert torch.isnan(ours[:, ~mask[prompt]]).all()
    # A one-token group is that token's probability, the same number as a target's.
    one = result.group_probs[..., 1]
    torch.testing.assert_close(one[:, mask], result.all_probs[..., the][:, mask])
    torch.testing.assert_close(one[:, mask], result.target_probs[..., 0][:, mask])
    real = result.group_probs[:, mask]
    assert bool(((real >= 0) & (real <= 1)).all())


def test_group_probabilities_never_leave_zero_to_one(load_tiny):
    model = load_tiny("llama")
    # The same tokens many times over, and every token of the vocabulary: at most 1.
    everything = TokenGroup(tuple(range(int(model.vocab_size))), "all")
    result = run_logit_lens(
        model, PROMPTS, groups={"all": everything, "paris": "Paris"}, positions="last"
    )
    values = result.group_probs[~torch.isnan(result.group_probs)]
    assert values.numel() and bool(((values >= 0) & (values <= 1)).all())
    torch.testing.assert_close(
        result.group_probs[..., 0][~torch.isnan(result.group_probs[..., 0])],
        torch.ones_like(values[: values.numel() // 2]),
        atol=1e-5,
        rtol=0,
    )


def test_bad_groups_are_refused_before_the_model_runs(load_tiny):
    model = load_tiny("gpt2")
    with pytest.raises(ValueError, match="groups must be a non-empty dict"):
        run_logit_lens(model, PROMPTS, groups=["Paris"])
    with pytest.raises(ValueError, match=r"groups\['x'\] must be a TokenGroup"):
        run_logit_lens(model, PROMPTS, groups={"x": 3})
    with pytest.raises(ValueError, match="one per prompt: there are 3 prompts"):
        run_logit_lens(model, PROMPTS, groups={"x": ["Paris"]})


def hooked_logits(folder, prompt: str) -> torch.Tensor:
    """``[layers, seq, vocab]`` every block output through the final norm and lm_head, read
    with forward hooks in plain transformers."""
    hf = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    blocks, norm = _blocks_and_norm(hf)
    captured = []
    hooks = [
        block.register_forward_hook(
            lambda _m, _i, out: captured.append(out[0] if isinstance(out, tuple) else out)
        )
        for block in blocks
    ]
    from transformers import AutoTokenizer

    ids = AutoTokenizer.from_pretrained(folder)(prompt, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        try:
            hf(input_ids=ids)
        finally:
            for hook in hooks:
                hook.remove()
        return torch.stack([hf.lm_head(norm(h))[0] for h in captured])


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_logit_difference_against_plain_hooks(arch, load_tiny, tiny_model_dirs):
    model = load_tiny(arch)
    answers, foils = [" Paris", " four", " Bob"], [" Rome", " five", None]
    result = run_logit_lens(model, PROMPTS, answers=answers, foils=foils)
    tokenizer = model.tokenizer
    for prompt, text in enumerate(PROMPTS):
        logits = hooked_logits(tiny_model_dirs[arch], text)
        positions = result.positions(prompt)
        ours = result.logit_diff[:, prompt, positions]
        if foils[prompt] is None:
            assert torch.isnan(ours).all()
            continue
        answer = tokenizer.encode(text + answers[prompt])[len(tokenizer.encode(text))]
        foil = tokenizer.encode(text + foils[prompt])[len(tokenizer.encode(text))]
        expected = logits[..., answer] - logits[..., foil]
        torch.testing.assert_close(ours, expected, atol=2e-4, rtol=1e-4)


def test_no_groups_no_foils_no_new_fields(load_tiny):
    result = run_logit_lens(load_tiny("gpt2"), PROMPTS, answers=[" Paris", " four", " Bob"])
    assert result.group_probs is None and result.group_names is None
    assert result.logit_diff is None


def test_group_summary_against_pandas_on_the_per_prompt_numbers(load_tiny):
    import pandas as pd

    from murano_widgets import group_summary

    model = load_tiny("gpt2")
    prompts = [*PROMPTS, "Monday Tuesday", "The capital of France is", "seven eight nine"]
    result = run_logit_lens(
        model, prompts, groups={"paris": "Paris", "one": [" one"] * 6}, positions="last"
    )
    table = group_summary(result, ci=0.9, n_boot=200, seed=3)
    # Each prompt's numbers at its last real token, read from the full grid by position.
    n = len(prompts)
    for g, name in enumerate(["paris", "one", "entropy"]):
        per_prompt = pd.DataFrame(
            {
                p: (
                    result.entropy[:, p, result.attention_mask[p].nonzero()[-1, 0]]
                    if name == "entropy"
                    else result.group_probs[:, p, result.attention_mask[p].nonzero()[-1, 0], g]
                ).numpy()
                for p in range(n)
            }
        ).T  # one row per prompt, one column per layer
        np.testing.assert_allclose(table[f"{name}_mean"], per_prompt.mean(), rtol=1e-6)
        rng = np.random.default_rng(3)
        boots = pd.DataFrame(
            [per_prompt.iloc[rng.integers(0, n, size=n, dtype=np.int32)].mean() for _ in range(200)]
        )
        np.testing.assert_allclose(table[f"{name}_ci_low"], boots.quantile(0.05), rtol=1e-6)
        np.testing.assert_allclose(table[f"{name}_ci_high"], boots.quantile(0.95), rtol=1e-6)
    assert list(table["layer"]) == result.layers


def test_plot_groups_draws_each_group_and_the_entropy(load_tiny):
    import matplotlib

    matplotlib.use("Agg")
    from murano_widgets import plot_groups

    result = run_logit_lens(
        load_tiny("gpt2"), PROMPTS, groups={"paris": "Paris", "bob": "Bob"}, positions="last"
    )
    ax = plot_groups(result, entropy=True, n_boot=50)
    assert [line.get_label() for line in ax.get_lines()] == ["paris", "bob"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["paris", "bob", "entropy"]
    with pytest.raises(ValueError, match="some of this result's groups"):
        plot_groups(result, ["nope"])
    with pytest.raises(ValueError, match="no token groups"):
        plot_groups(run_logit_lens(load_tiny("gpt2"), PROMPTS, positions="last"))


def test_translation_prompts_are_wendlers_few_shot_prompts():
    from murano_widgets import translation_prompts

    pairs = [("fleur", "花"), ("chat", "猫"), ("livre", "书"), ("eau", "水")]
    prompts = translation_prompts(pairs, shots=2, seed=1)
    assert len(prompts) == 4
    for (word, _), prompt in zip(pairs, prompts, strict=True):
        lines = prompt.split("\n")
        assert len(lines) == 3 and lines[-1] == f'Français: "{word}" - 中文: "'
        for line in lines[:-1]:
            shown = re.fullmatch(r'Français: "(.+)" - 中文: "(.+)"', line)
            assert shown and tuple(shown.groups()) in pairs and shown.group(1) != word
    with pytest.raises(ValueError, match="shots must be"):
        translation_prompts(pairs, shots=4)


class Shift(Lens):
    """Every block output but the last moved by a fixed vector (as tests/test_lenses.py's)."""

    kind = "shift"
    title = "Shift lens"

    def translate(self, layer, hidden):
        return hidden + torch.linspace(-2.0, 2.0, hidden.shape[-1]).to(hidden.dtype)


FOIL_RUN = {"answers": [" Paris", " four", " Bob"], "foils": [" Rome", " five", None]}


def test_the_logit_difference_reaches_the_heatmap_payload_only_with_foils(load_tiny):
    from murano_widgets.payload.lens import LensPayload, decode_sections

    model = load_tiny("gpt2")
    with_foils = run_logit_lens(model, PROMPTS, **FOIL_RUN)
    payload = LensPayload.from_result(with_foils)
    entry = next(m for m in payload.meta["metrics"] if m["name"] == "logit_diff")
    assert entry["available"] and entry["unit"] == "logit" and entry["reduced"]
    values = decode_sections(payload.meta, payload.sections(["logit_diff"]))["logit_diff"]
    mask = with_foils.attention_mask.bool()
    expected = with_foils.logit_diff[:, mask].numpy()
    np.testing.assert_array_equal(np.isnan(values), np.isnan(expected))
    np.testing.assert_allclose(values[~np.isnan(values)], expected[~np.isnan(expected)])
    low, high = entry["domain"]
    assert low == -high and high >= np.nanmax(np.abs(expected))
    # Without foils the metric is not there at all: the payload is what it was before.
    plain = LensPayload.from_result(run_logit_lens(model, PROMPTS, answers=FOIL_RUN["answers"]))
    assert "logit_diff" not in {m["name"] for m in plain.meta["metrics"]}
    assert "logit_diff" not in plain.meta["sections"]


def test_the_logit_difference_reaches_the_diff_and_a_data_set(load_tiny):
    from murano_widgets import compare, lens_dataset
    from murano_widgets.payload.diff import diff_payload

    model = load_tiny("gpt2")
    a = run_logit_lens(model, PROMPTS, **FOIL_RUN)
    b = run_logit_lens(model, PROMPTS, lens=Shift(), **FOIL_RUN)
    comparison = compare(a, b)
    change = comparison.metric_deltas["delta_logit_diff"]
    mask = a.attention_mask.bool()
    expected = (b.logit_diff - a.logit_diff)[:, mask]
    assert bool((expected[:-1].nan_to_num(0) != 0).any())  # the shift moved the logits
    torch.testing.assert_close(change[:, mask], expected, equal_nan=True)
    meta, _ = diff_payload(comparison)
    assert "delta_logit_diff" in {m["name"] for m in meta["metrics"]}
    meta, _ = diff_payload(compare(run_logit_lens(model, PROMPTS), run_logit_lens(model, PROMPTS)))
    assert "delta_logit_diff" not in {m["name"] for m in meta["metrics"]}

    data = lens_dataset(
        model,
        PROMPTS,
        FOIL_RUN["answers"],
        foils=FOIL_RUN["foils"],
        decompose=True,
        progress=False,
    )
    last = [int(a.positions(p)[-1]) for p in range(len(PROMPTS))]
    expected = a.logit_diff[:, torch.arange(len(PROMPTS)), last].numpy()
    np.testing.assert_allclose(data.logit_diff, expected, rtol=1e-5, atol=1e-5, equal_nan=True)
    summary = data.summary(n_boot=50)
    np.testing.assert_allclose(
        summary["logit_diff_mean"], np.nanmean(expected, axis=1), rtol=1e-5, atol=1e-6
    )
    without = lens_dataset(model, PROMPTS, FOIL_RUN["answers"], progress=False)
    assert "logit_diff" not in without.fields


def test_groups_side_by_side_and_joined_are_one_call(load_tiny):
    from murano_widgets.results.combine import concat_results, select_prompts

    model = load_tiny("gpt2")
    groups = {"paris": "Paris", "each": ["Paris", "four", "Bob"]}
    alone = run_logit_lens(model, PROMPTS, groups=groups, lens=Shift(), **FOIL_RUN)
    both = run_logit_lens(
        model, PROMPTS, groups=groups, lens={"logit": None, "shift": Shift()}, **FOIL_RUN
    )
    for field in ("group_probs", "logit_diff"):
        torch.testing.assert_close(
            getattr(both["shift"], field), getattr(alone, field), equal_nan=True
        )
    assert both["shift"].group_token_ids == alone.group_token_ids
    tokenizer = model.tokenizer
    first = run_logit_lens(model, PROMPTS[:1], groups={"paris": "Paris", "each": ["Paris"]})
    rest = run_logit_lens(model, PROMPTS[1:], groups={"paris": "Paris", "each": ["four", "Bob"]})
    joined = concat_results(
        [first, rest], padding_side=tokenizer.padding_side, pad_id=tokenizer.pad_token_id
    )
    whole = run_logit_lens(model, PROMPTS, groups=groups)
    torch.testing.assert_close(joined.group_probs, whole.group_probs, equal_nan=True)
    assert joined.group_token_ids == whole.group_token_ids
    picked = select_prompts(whole, [2], padding_side=tokenizer.padding_side)
    assert picked.group_token_ids == [whole.group_token_ids[2]]
