"""Token groups and the logit difference over data sets (issue 49): ``lens_dataset(...,
groups=...)`` against the full distribution, its summaries against pandas on the per-prompt
numbers, resuming, files, the one-call figure and the cloze prompts."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_groups import wendler_set

from murano_widgets import (
    LensDataset,
    TokenGroup,
    cloze_prompts,
    group_summary,
    lens_dataset,
    plot_groups,
    run_logit_lens,
)
from murano_widgets.step.logit_lens import LogitLens

PROMPTS = [
    "The Eiffel Tower is in the city of",
    "one two three",
    "Alice met Bob. Alice gave",
    "Monday Tuesday",
    "The capital of France is",
    "seven eight nine",
    "the cat sat on the",
]
ANSWERS = [" Paris", " four", " Bob", " Wednesday", " Paris", " ten", " mat"]
PER_PROMPT = ["Paris", "four", "Bob", "Wednesday", "Paris", "ten", "mat"]


def groups_for(tokenizer):
    return {
        "paris": TokenGroup.word(tokenizer, "Paris"),
        "answer": PER_PROMPT,
        "the": TokenGroup.tokens(tokenizer, [" the"]),
    }


@pytest.fixture(scope="module")
def grouped(load_tiny):
    """A data set with groups in several batches (sorted by length, so not in prompt order)."""
    model = load_tiny("gpt2")
    data = lens_dataset(
        model, PROMPTS, ANSWERS, groups=groups_for(model.tokenizer), batch_size=3, progress=False
    )
    return model, data


def test_data_set_groups_against_the_full_distribution(grouped):
    model, data = grouped
    assert data.group_names == ["paris", "answer", "the"]
    full = run_logit_lens(model, PROMPTS, store_full_probs=True)
    probs = full.all_probs.double()  # [layers, prompts, seq, vocab]
    the = model.tokenizer.encode(" the")
    for p, prompt in enumerate(PROMPTS):
        last = int(full.attention_mask[p].nonzero()[-1, 0])
        sets = {
            "paris": wendler_set(model.tokenizer, "Paris"),
            "answer": wendler_set(model.tokenizer, PER_PROMPT[p]),
            "the": set(the),
        }
        for name, ids in sets.items():
            expected = probs[:, p, last][:, sorted(ids)].sum(-1).numpy()
            np.testing.assert_allclose(
                data.group_probs[name][:, p], expected, atol=1e-6, rtol=1e-5, err_msg=prompt
            )
    # A one-token group is that token's probability; every group lies in [0, 1].
    np.testing.assert_allclose(
        data.group_probs["the"],
        np.stack([probs[:, p, int(full.attention_mask[p].nonzero()[-1, 0]), the[0]] for p in
                  range(len(PROMPTS))], axis=1),
        atol=1e-6,
    )  # fmt: skip
    for values in data.group_probs.values():
        assert values.shape == (len(data.layers), len(PROMPTS))
        assert ((values >= 0) & (values <= 1)).all()


def independent_bootstrap(per_prompt, n_boot, seed, ci):
    """The percentile bootstrap as summary() documents it, over a pandas frame of one row per
    prompt: resample ``b`` picks ``rng.integers(0, n, size=n, dtype=np.int32)``."""
    import pandas as pd

    n = len(per_prompt)
    rng = np.random.default_rng(seed)
    boots = pd.DataFrame(
        [per_prompt.iloc[rng.integers(0, n, size=n, dtype=np.int32)].mean() for _ in range(n_boot)]
    )
    tail = (1 - ci) / 2
    return boots.quantile(tail), boots.quantile(1 - tail)


def test_summary_means_and_intervals_against_pandas(grouped):
    _, data = grouped
    frame = data.to_pandas()
    summary = data.summary(ci=0.9, n_boot=150, seed=5)
    table = group_summary(data, ci=0.8, n_boot=120, seed=2)
    assert list(table["layer"]) == data.layers == list(summary["layer"])
    for name in data.group_names:
        # One row per prompt, one column per layer, from the tidy frame's per-prompt numbers.
        per_prompt = frame.pivot(index="prompt_index", columns="layer", values=f"group_{name}")
        np.testing.assert_allclose(summary[f"group_{name}_mean"], per_prompt.mean(), rtol=1e-6)
        low, high = independent_bootstrap(per_prompt, 150, 5, 0.9)
        np.testing.assert_allclose(summary[f"group_{name}_ci_low"], low, rtol=1e-6)
        np.testing.assert_allclose(summary[f"group_{name}_ci_high"], high, rtol=1e-6)
        np.testing.assert_allclose(table[f"{name}_mean"], per_prompt.mean(), rtol=1e-6)
        low, high = independent_bootstrap(per_prompt, 120, 2, 0.8)
        np.testing.assert_allclose(table[f"{name}_ci_low"], low, rtol=1e-6)
        np.testing.assert_allclose(table[f"{name}_ci_high"], high, rtol=1e-6)
        assert (summary[f"group_{name}_ci_low"] <= summary[f"group_{name}_mean"] + 1e-12).all()
    entropy = frame.pivot(index="prompt_index", columns="layer", values="entropy")
    np.testing.assert_allclose(table["entropy_mean"], entropy.mean(), rtol=1e-6)


def test_groups_resume_load_and_refuse_other_groups(grouped, tmp_path, monkeypatch):
    model, whole = grouped
    options = {"batch_size": 3, "progress": False}
    groups = groups_for(model.tokenizer)
    folder = tmp_path / "run"
    ran: list[int] = []
    original = LogitLens.run

    def run(self, prompts, *args, **kwargs):
        ran.append(len(prompts))
        if len(ran) == 2:
            raise KeyboardInterrupt
        return original(self, prompts, *args, **kwargs)

    monkeypatch.setattr(LogitLens, "run", run)
    with pytest.raises(KeyboardInterrupt):
        lens_dataset(model, PROMPTS, ANSWERS, groups=groups, path=folder, **options)
    monkeypatch.setattr(LogitLens, "run", original)
    resumed = lens_dataset(model, PROMPTS, ANSWERS, groups=groups, path=folder, **options)
    saved = LensDataset.load(whole.save(tmp_path / "saved"))
    for other in (resumed, LensDataset.load(folder), saved):
        assert other.group_names == whole.group_names
        for name in whole.group_names:
            np.testing.assert_array_equal(other.group_probs[name], whole.group_probs[name])
    other = dict(groups, answer=[*PER_PROMPT[:-1], "dog"])
    with pytest.raises(ValueError, match=r"groups\.token_ids_sha256 was"):
        lens_dataset(model, PROMPTS, ANSWERS, groups=other, path=folder, **options)
    # A data set without groups says so, and saves as before (no group arrays or entry).
    plain = lens_dataset(model, PROMPTS[:2], ANSWERS[:2], progress=False)
    assert plain.group_names == []
    with pytest.raises(AttributeError, match="no token groups"):
        plain.group_probs  # noqa: B018
    assert "group_paris" not in plain.to_pandas().columns


def test_bad_groups_are_refused_before_the_model_runs(load_tiny, monkeypatch):
    model = load_tiny("gpt2")

    def refuse(*args, **kwargs):
        raise AssertionError("the model ran")

    monkeypatch.setattr(LogitLens, "run", refuse)
    with pytest.raises(ValueError, match=r"groups\['answer'\] is a list of 2 entries.*7 prompts"):
        lens_dataset(model, PROMPTS, ANSWERS, groups={"answer": ["a", "b"]}, progress=False)
    with pytest.raises(ValueError, match=r"groups must be a non-empty dict"):
        lens_dataset(model, PROMPTS, ANSWERS, groups={}, progress=False)
    with pytest.raises(ValueError, match=r"outside the model's vocabulary"):
        big = TokenGroup((10**7,), "big")
        lens_dataset(model, PROMPTS, ANSWERS, groups={"big": big}, progress=False)


def test_the_logit_difference_in_a_data_set_without_decompose(load_tiny):
    model = load_tiny("gpt2")
    foils = [" Rome", " five", None, " Friday", " Berlin", " eleven", " hat"]
    data = lens_dataset(model, PROMPTS, ANSWERS, foils=foils, batch_size=3, progress=False)
    assert "logit_diff" in data.fields and data.component_labels is None
    # The lens logits from the full distribution: log p(answer) - log p(foil) is the logit
    # difference (the softmax's normaliser cancels).
    full = run_logit_lens(model, PROMPTS, store_full_probs=True)
    logp = full.all_probs.double().log()
    for p, (answer, foil) in enumerate(zip(ANSWERS, foils, strict=True)):
        if foil is None:
            assert np.isnan(data.logit_diff[:, p]).all()
            continue
        last = int(full.attention_mask[p].nonzero()[-1, 0])
        a, f = model.tokenizer.encode(answer)[0], model.tokenizer.encode(foil)[0]
        expected = (logp[:, p, last, a] - logp[:, p, last, f]).numpy()
        np.testing.assert_allclose(data.logit_diff[:, p], expected, atol=2e-4, rtol=1e-4)
    summary = data.summary(n_boot=20)
    np.testing.assert_allclose(
        summary["logit_diff_mean"], np.nanmean(data.logit_diff, axis=1), rtol=1e-6
    )


def test_plot_groups_takes_the_data_set_in_one_call(load_tiny):
    import matplotlib

    matplotlib.use("Agg")
    from test_groups import Shift

    model = load_tiny("gpt2")
    data = lens_dataset(
        model,
        PROMPTS[:4],
        ANSWERS[:4],
        groups={"paris": "Paris", "answer": PER_PROMPT[:4]},
        lens={"logit": None, "shift": Shift()},
        progress=False,
    )
    ax = plot_groups(data, entropy=True, n_boot=20)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [
        "paris (logit)",
        "answer (logit)",
        "paris (shift)",
        "answer (shift)",
        "entropy (logit)",
        "entropy (shift)",
    ]
    one = plot_groups(data, ["answer"], lens="shift", n_boot=20)
    line = one.get_lines()[0]
    table = group_summary(data.lens("shift"), n_boot=20)
    np.testing.assert_allclose(line.get_ydata(), table["answer_mean"])
    with pytest.raises(ValueError, match="no token groups"):
        plot_groups(lens_dataset(model, PROMPTS[:2], ANSWERS[:2], progress=False))


def test_cloze_prompts_are_wendlers_cloze_prompts():
    items = [
        ('A "___" is used to read stories.', "book"),
        ('A "___" is a large body of water surrounded by land.', "lake"),
        ('A "___" is often given as a gift.', "flower"),
        ('The number that comes after two is "___".', "three"),
    ]
    prompts = cloze_prompts(items, seed=4)
    assert len(prompts) == len(items)
    for (sentence, word), prompt in zip(items, prompts, strict=True):
        lines = prompt.split("\n")
        assert len(lines) == 3 and lines[-1] == f'{sentence} Answer: "'
        for line in lines[:-1]:
            shown = re.fullmatch(r'(.+) Answer: "(.+)"\.', line)
            assert shown and tuple(shown.groups()) in items and shown.group(2) != word
    french = cloze_prompts([(s, w) for s, w in items], answer_label="Réponse ", shots=1)
    assert french[0].endswith('Réponse : "') and french[0].count("\n") == 1
    with pytest.raises(ValueError, match=r"items\[1\]'s sentence must hold the blank"):
        cloze_prompts([items[0], ("no blank here", "x"), items[2]])
    with pytest.raises(ValueError, match="shots must be from 0 to"):
        cloze_prompts(items, shots=4)
    with pytest.raises(ValueError, match=r"items\[0\] must be a \(sentence, word\) pair"):
        cloze_prompts([("only one",), *items])
