"""lens_dataset at scale: inputs from any iterable (generators, pandas columns, files of lines),
checked as they arrive; batches by a token budget within windows; a folder of shards that an
interrupted run resumes from, exactly, refusing changed inputs or settings; memory that grows
with the per-prompt numbers only; an honest progress bar.

The resume and memory tests at 20,000 prompts run the data set's own machinery around a stand-in
for the step (deterministic numbers from each prompt's token ids, no model): what they check is
the streaming, sharding and bookkeeping, which the stand-in leaves untouched. The real step runs
in the tests at a few thousand prompts (two windows, dozens of shards), where exactness across
an interruption is a question of cutting the same batches.
"""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from murano_widgets import LensDataset, LogitLens, lens_dataset
from murano_widgets.dataset import runner
from murano_widgets.dataset.shards import read_shard
from murano_widgets.dataset.stream import (
    Batching,
    auto_batch_tokens,
    cut_batches,
    text_lines,
)
from murano_widgets.dataset.table import METRIC_FIELDS, fields_for, is_integer
from murano_widgets.demo_model.corpus import eval_prompts
from murano_widgets.types import validate_answers

EVAL = eval_prompts()
# Variations of the toy world's held-out prompts, so that a long stream is not one list repeated.
PREFIXES = ["", "So, ", "Well, ", "Indeed, it is said that ", "Yes. "]


def demo_pairs(n: int, start: int = 0):
    """``n`` (prompt, answer) pairs of the toy world's prompts, varied: a generator."""
    for i in range(start, start + n):
        fact = EVAL[i % len(EVAL)]
        yield PREFIXES[(i // len(EVAL)) % len(PREFIXES)] + fact.prompt, fact.answer


def demo_lists(n: int) -> tuple[list[str], list[str]]:
    pairs = list(demo_pairs(n))
    return [p for p, _ in pairs], [a for _, a in pairs]


def assert_same(a: LensDataset, b: LensDataset) -> None:
    """Two data sets hold the same prompts, answers and numbers, bit for bit."""
    assert a.prompts == b.prompts
    assert a.answers == b.answers
    assert a.layers == b.layers
    assert a.foils == b.foils
    parts_a = [a] if a.lens_names is None else [a.lens(n) for n in a.lens_names]
    parts_b = [b] if b.lens_names is None else [b.lens(n) for n in b.lens_names]
    for x, y in zip(parts_a, parts_b, strict=True):
        for name in x.answers:
            np.testing.assert_array_equal(x.answer_probs[name], y.answer_probs[name])
            np.testing.assert_array_equal(x.answer_ranks[name], y.answer_ranks[name])
        assert x.fields == y.fields == fields_for(METRIC_FIELDS, bool(x.foils))
        for field in (*x.fields, "top1_tokens"):
            np.testing.assert_array_equal(getattr(x, field), getattr(y, field))
    if a.contributions is not None or b.contributions is not None:
        np.testing.assert_array_equal(a.contributions, b.contributions)
        np.testing.assert_array_equal(a.contribution_bias, b.contribution_bias)
    used = set(np.unique(parts_a[0].top1_tokens).tolist()) - {-1}
    assert {t: a.token_strings[t] for t in used} == {t: b.token_strings[t] for t in used}


# ---------------------------------------------------------------------------------------------
# A stand-in for the step: deterministic numbers from each prompt's token ids, no model


def stand_in_run(self, prompts, answers=None, *, prompt_ids=None, foils=None):
    """``LogitLens.run``'s result, as far as a data set reads it, from the token ids alone."""
    n, n_layers = len(prompts), len(self.rows)
    seq = max(len(ids) for ids in prompt_ids)
    mask = torch.zeros(n, seq, dtype=torch.long)
    for i, ids in enumerate(prompt_ids):
        mask[i, : len(ids)] = 1
    seed = torch.tensor([sum(ids) * 31 + len(ids) for ids in prompt_ids], dtype=torch.float64)
    layer = torch.arange(n_layers, dtype=torch.float64)[:, None, None]
    grid = ((seed[None, :, None] * (layer + 1)) % 997 / 997).expand(n_layers, n, seq)
    sets = validate_answers(answers, n) if answers is not None else {}
    scored = {
        name: SimpleNamespace(
            probs=grid[:, :, 0].float() * torch.tensor([e is not None for e in entries]),
            ranks=(seed[None, :] % 5 + layer[:, :, 0]).long(),
        )
        for name, entries in sets.items()
    }
    # Every metric field a data set keeps (the registry's reduced ones): each a scaled grid.
    fields = {
        field: (grid * (k + 1) * 10).long() if is_integer(field) else (grid / (k + 1)).float()
        for k, field in enumerate(METRIC_FIELDS)
    }
    return SimpleNamespace(
        attention_mask=mask,
        **fields,
        predicted_tokens=(seed[None, :, None] % 7 + layer).long().expand(n_layers, n, seq),
        token_strings={k: f"t{k}" for k in range(7 + n_layers)},
        answer_sets=scored or None,
    )


@pytest.fixture
def stand_in(monkeypatch):
    calls = []

    def run(self, prompts, *args, **kwargs):
        calls.append(len(prompts))
        return stand_in_run(self, prompts, *args, **kwargs)

    monkeypatch.setattr(LogitLens, "run", run)
    return calls


# ---------------------------------------------------------------------------------------------
# Inputs from anything


def test_a_generator_gives_the_lists_result_bit_for_bit(load_tiny):
    model = load_tiny("gpt2")
    prompts, answers = demo_lists(150)
    options = {"batch_tokens": 256, "progress": False}
    listed = lens_dataset(model, prompts, answers, **options)
    assert listed.provenance["source"] == "list"
    assert listed.provenance["n_windows"] >= 2, "test precondition: several windows"
    streamed = lens_dataset(model, iter(prompts), (a for a in answers), **options)
    assert streamed.provenance["source"] == "list_iterator"
    assert_same(streamed, listed)
    # ... and each prompt's numbers are those of the step on that prompt alone.
    step = LogitLens(model, positions="last")
    for p in (0, 41, 149):
        alone = step.run([prompts[p]], [answers[p]])
        np.testing.assert_allclose(
            listed.answer_probs["answer"][:, p], alone.answer_probs[:, 0], rtol=1e-5, atol=1e-7
        )


def test_pairs_a_series_and_a_file_of_lines_read_as_a_list(stand_in, load_tiny, tmp_path):
    pd = pytest.importorskip("pandas")
    model = load_tiny("gpt2")
    prompts, answers = demo_lists(600)
    options = {"batch_tokens": 1024, "progress": False}
    listed = lens_dataset(model, prompts, answers, **options)
    assert listed.provenance["n_windows"] >= 2, "test precondition: several windows"
    assert_same(lens_dataset(model, demo_pairs(600), **options), listed)
    series = lens_dataset(model, pd.Series(prompts), pd.Series(answers), **options)
    assert series.provenance["source"] == "Series"
    assert_same(series, listed)
    (tmp_path / "prompts.txt").write_text("\n".join(prompts) + "\n", encoding="utf-8")
    (tmp_path / "answers.txt").write_text("\r\n".join(answers), encoding="utf-8")
    filed = lens_dataset(model, tmp_path / "prompts.txt", tmp_path / "answers.txt", **options)
    assert filed.provenance["source"] == "file prompts.txt"
    assert_same(filed, listed)


def test_named_sets_and_foils_stream_too(load_tiny):
    model = load_tiny("gpt2")
    prompts, answers = demo_lists(24)
    other = [None if i % 3 else " Paris" for i in range(24)]
    foils = [None if i % 4 == 1 else " Rome" for i in range(24)]
    options = {"batch_tokens": 512, "progress": False, "decompose": True}
    listed = lens_dataset(model, prompts, {"a": answers, "b": other}, foils=foils, **options)
    streamed = lens_dataset(
        model, iter(prompts), {"a": iter(answers), "b": iter(other)}, foils=iter(foils), **options
    )
    assert_same(streamed, listed)
    pairs = (
        (p, {"a": a, "b": b}, f) for p, a, b, f in zip(prompts, answers, other, foils, strict=True)
    )
    assert_same(lens_dataset(model, pairs, **options), listed)
    assert listed.named_sets and np.isnan(listed.contributions[:, 1]).all()


@pytest.mark.parametrize(
    ("prompts", "answers", "error", "match"),
    [
        (lambda: iter(["a b", "c d", "e f"]), lambda: iter([" x", " y"]), ValueError,
         r"answers ended after 2 entries, but prompts goes on \(prompts\[2\] has no partner"),
        (lambda: iter(["a b"]), lambda: iter([" x", " y"]), ValueError,
         r"prompts ended after 1 entries, but answers goes on \(answers\[1\]"),
        (lambda: (p for p in ["a b", "c d", "", "e"]), lambda: [" x"] * 4, ValueError,
         r"prompts\[2\]: expected a non-empty string, got '' \(the empty string\): every prompt needs"),
        (lambda: (p for p in ["a b", 7]), lambda: [" x"] * 2, TypeError,
         r"prompts\[1\]: expected a non-empty string, got 7 \(int\)"),
        (lambda: (p for p in ["a b", {"prompt": "x"}]), lambda: [" x"] * 2, TypeError,
         r"prompts\[1\]: expected a non-empty string, got \{'prompt': 'x'\} \(dict; .*pass one column"),
        (lambda: (p for p in ["a b", "c \ud800"]), lambda: [" x"] * 2, ValueError,
         r"prompts\[1\]: expected valid Unicode text, got one that holds a lone surrogate"),
        (lambda: iter(["a b", "c d"]), lambda: iter([" x", ""]), ValueError,
         r"answers\[1\]: expected a non-empty string, got '' \(the empty string\)"),
        (lambda: iter(["a b", "c d"]), lambda: iter([" x", 3]), TypeError,
         r"answers\[1\]: expected a non-empty string, a non-empty list"),
        (lambda: iter(["a b", "c d"]), lambda: {"s": iter([" x", [" y", 2]])}, TypeError,
         r"answers\['s'\]\[1\]\[1\]: expected a non-empty string, got 2 \(int\)"),
        (lambda: iter([("a b", " x"), "c d"]), lambda: None, TypeError,
         r"prompts\[1\] must be a \(prompt, answer\) pair, got str"),
        (lambda: iter([("a b", " x"), ("c d", " y", " z", " w")]), lambda: None, ValueError,
         r"prompts\[1\] has 4 entries; expected \(prompt, answer\) or \(prompt, answer, foil\)"),
        (lambda: iter([("a b", {"s": " x"}), ("c d", {"t": " y"})]), lambda: None, ValueError,
         r"prompts\[1\]'s answer must be a dict of the answer sets \['s'\]"),
        (lambda: iter(["a b", "one two " * 200]), lambda: [" x"] * 2, ValueError,
         r"prompts\[1\] is \d+ tokens long, more than the model's context of 256"),
    ],
)  # fmt: skip
def test_a_bad_entry_of_a_stream_is_named_by_its_index(load_tiny, prompts, answers, error, match):
    with pytest.raises(error, match=match):
        lens_dataset(load_tiny("gpt2"), prompts(), answers(), progress=False)


def test_a_bad_line_is_named_by_index_and_line(load_tiny, tmp_path):
    model = load_tiny("gpt2")
    (tmp_path / "p.txt").write_text("The capital of France is\n\nMonday\n", encoding="utf-8")
    with pytest.raises(
        ValueError,
        match=r"prompts\[1\] \(line 2 of '.*p\.txt'\): expected a non-empty string, got ''",
    ):
        lens_dataset(model, tmp_path / "p.txt", [" Paris", " x", " Tuesday"], progress=False)
    (tmp_path / "bad.txt").write_bytes(b"ok\n\xff\xfe\n")
    with pytest.raises(ValueError, match=r"line 2 of '.*bad\.txt' is not utf-8 text"):
        list(text_lines(tmp_path / "bad.txt"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        lens_dataset(model, tmp_path / "missing.txt", [" x"], progress=False)
    assert list(text_lines(tmp_path / "p.txt")) == ["The capital of France is", "", "Monday"]


def test_whole_inputs_that_cannot_be_streamed_are_refused_before_any_model_work(
    load_tiny, monkeypatch, tmp_path
):
    pd = pytest.importorskip("pandas")
    model = load_tiny("gpt2")
    monkeypatch.setattr(LogitLens, "run", lambda *a, **k: pytest.fail("the model ran"))
    cases = [
        ((pd.DataFrame({"prompt": ["a"]}), [" x"]), TypeError, r"prompts is a pandas DataFrame"),
        (({"prompt": ["a"]}, [" x"]), TypeError, r"pass one column, e.g. ds\['prompt'\]"),
        (({"a b", "c d"}, [" x", " y"]), TypeError, r"prompts must be a list of strings in"),
        ((b"a b", [" x"]), TypeError, r"prompts must be a list of strings, got bytes"),
        (("a b", [" x"]), TypeError, r"got a single string 'a b'"),
        ((["a b"], " x"), TypeError, r"answers must be a list with one answer per prompt"),
        ((pd.Series(["a b", "c d"]), pd.Series([" x"])), ValueError,
         r"answers has 1 entries for 2 prompts"),
        ((iter([]), iter([])), ValueError, r"prompts is empty"),
    ]  # fmt: skip
    for (prompts, answers), error, match in cases:
        kwargs = {"foils": [" y"]} if "foils" in match else {}
        with pytest.raises(error, match=match):
            lens_dataset(model, prompts, answers, progress=False, **kwargs)
    with open(tmp_path / "f.txt", "w") as file, pytest.raises(TypeError, match="an open file"):
        lens_dataset(model, file, [" x"], progress=False)
    with pytest.raises(ValueError, match="batch_tokens must be an int at least 1"):
        lens_dataset(model, ["a b"], [" x"], batch_tokens=0, progress=False)


def test_a_batch_error_names_the_prompt_by_its_index_in_the_data_set():
    rows = np.array([40, 7, 1234])
    message = "answers[2] (' x') adds no token after the prompt; prompts[1] and answers['s'][0]"
    assert runner._in_data_set(message, rows) == (
        "answers[1234] (' x') adds no token after the prompt; prompts[7] and answers['s'][40]"
    )


# ---------------------------------------------------------------------------------------------
# Batches


def test_batches_keep_to_the_budget_and_pad_little():
    rng = np.random.default_rng(0)
    lengths = rng.integers(3, 40, 2000)
    for batching in (Batching(None, 1024), Batching(50, 1024), Batching(50, None)):
        batches = cut_batches(lengths, batching)
        flat = np.concatenate(batches)
        assert sorted(flat.tolist()) == list(range(2000)), "every prompt once"
        for batch in batches:
            longest = lengths[batch].max()
            if batching.batch_tokens and len(batch) > 1:
                assert len(batch) * longest <= batching.batch_tokens
            if batching.batch_size:
                assert len(batch) <= batching.batch_size
        if batching.batch_tokens is None:
            assert [len(b) for b in batches] == [50] * 40, "batch_size alone: exactly that many"
    padded = sum(len(b) * lengths[b].max() for b in cut_batches(lengths, Batching(None, 1024)))
    assert padded / lengths.sum() < 1.03
    # A small data set of widely spread lengths is cut by length, not run as one wide batch.
    few = np.array([4, 5, 18, 4, 17, 6, 18, 5] * 20)
    batches = cut_batches(few, Batching(None, 16384))
    assert len(batches) > 1
    assert sum(len(b) * few[b].max() for b in batches) / few.sum() < 1.1


def test_the_automatic_budget_follows_the_models_size():
    def model(width, dtype, device="cpu"):
        config = SimpleNamespace(hidden_size=width)
        return SimpleNamespace(config=config, dtype=dtype, device=torch.device(device))

    # Saved block outputs: every layer read and the last, tokens x d_model of the model's dtype.
    assert auto_batch_tokens(model(128, torch.float32), 7) == 8192  # the demo model
    assert auto_batch_tokens(model(768, torch.float32), 13) == 4096  # GPT-2 small
    assert auto_batch_tokens(model(4096, torch.bfloat16), 33) == 512  # a 7B model
    assert auto_batch_tokens(model(8192, torch.bfloat16), 81) == 256  # a 70B one
    # On an accelerator the budget is four times larger (its memory is not the machine's).
    assert auto_batch_tokens(model(4096, torch.bfloat16, "meta"), 33) == 2048


def test_batch_size_alone_keeps_its_old_meaning_and_the_budget_is_reported(load_tiny):
    model = load_tiny("gpt2")
    prompts, answers = demo_lists(40)
    data = lens_dataset(model, prompts, answers, batch_size=8, progress=False)
    assert data.provenance["n_batches"] == 5 and data.provenance["batch_tokens"] is None
    auto = lens_dataset(model, prompts, answers, progress=False)
    assert auto.provenance["batch_tokens"] == auto_batch_tokens(model, model.n_layers)
    assert auto.provenance["padded_tokens"] >= auto.provenance["tokens"] > 40


# ---------------------------------------------------------------------------------------------
# A folder of shards: resumed exactly, changes refused, read back without the model


class Interrupt:
    """A stream that raises KeyboardInterrupt (a user's Ctrl-C) when it reaches ``at``."""

    def __init__(self, pairs, at: int) -> None:
        self.pairs, self.at = pairs, at

    def __iter__(self):
        for i, pair in enumerate(self.pairs):
            if i == self.at:
                raise KeyboardInterrupt
            yield pair


def shards(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("w*.npz"))


def counting_runs(monkeypatch, interrupt_at: int | None = None) -> list[int]:
    """Counts the step's runs (and raises KeyboardInterrupt in run ``interrupt_at``)."""
    ran: list[int] = []
    original = LogitLens.run

    def run(self, prompts, *args, **kwargs):
        ran.append(len(prompts))
        if len(ran) == interrupt_at:
            raise KeyboardInterrupt
        return original(self, prompts, *args, **kwargs)

    monkeypatch.setattr(LogitLens, "run", run)
    return ran


def test_an_interrupted_run_resumes_exactly_where_it_stopped(load_tiny, tmp_path, monkeypatch):
    model = load_tiny("gpt2")
    n, options = 600, {"batch_tokens": 512, "progress": False}
    whole = lens_dataset(model, demo_pairs(n), **options)
    n_batches = whole.provenance["n_batches"]
    assert whole.provenance["n_windows"] >= 2, "test precondition: several windows"

    # Ctrl-C from the stream, in the last window: the windows before it are written (a
    # window's prompts are read, a slice of 256 at a time, before its batches run).
    folder = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        lens_dataset(model, Interrupt(demo_pairs(n), n - 20), path=folder, **options)
    written = shards(folder)
    assert 0 < len(written) < n_batches
    assert not list(folder.glob(".*")), "no half-written shard or work folder is left"
    ran = counting_runs(monkeypatch)
    resumed = lens_dataset(model, demo_pairs(n), path=folder, **options)
    assert len(ran) == n_batches - len(written), "only the missing batches ran"
    assert_same(resumed, whole)
    assert_same(LensDataset.load(folder), whole)
    # A finished folder called again runs nothing and gives the same data set.
    ran.clear()
    assert_same(lens_dataset(model, demo_pairs(n), path=folder, **options), whole)
    assert ran == []


def test_twenty_thousand_prompts_resume_exactly(stand_in, load_tiny, tmp_path, monkeypatch):
    """The data set's machinery over 20,000 toy-world prompts (the step stood in for),
    interrupted from the stream, then inside a batch."""
    model = load_tiny("gpt2")
    options = {"batch_tokens": 8192, "progress": False}
    whole = lens_dataset(model, demo_pairs(20_000), **options)
    total = len(stand_in)
    folder = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        lens_dataset(model, Interrupt(demo_pairs(20_000), 12_345), path=folder, **options)
    written = len(shards(folder))
    stand_in.clear()
    resumed = lens_dataset(model, demo_pairs(20_000), path=folder, **options)
    assert 0 < written < total and len(stand_in) == total - written
    assert_same(resumed, whole)
    assert_same(LensDataset.load(folder), whole)
    assert len(shards(folder)) == total

    # Ctrl-C inside the 7th batch: that batch alone is lost.
    other = tmp_path / "other"
    original = LogitLens.run
    calls = []

    def interrupted(self, prompts, *args, **kwargs):
        calls.append(len(prompts))
        if len(calls) == 7:
            raise KeyboardInterrupt
        return original(self, prompts, *args, **kwargs)

    monkeypatch.setattr(LogitLens, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        lens_dataset(model, demo_pairs(20_000), path=other, **options)
    assert len(shards(other)) == 6
    monkeypatch.setattr(LogitLens, "run", original)
    stand_in.clear()
    assert_same(lens_dataset(model, demo_pairs(20_000), path=other, **options), whole)
    assert len(stand_in) == total - 6


def tracemalloc_peak(run) -> tuple[int, object]:
    gc.collect()
    tracemalloc.start()
    try:
        out = run()
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


def kept_bytes(data: LensDataset) -> int:
    """The per-prompt fields a data set keeps: its arrays and its prompts' text."""
    arrays = (*data.answer_probs.values(), *data.answer_ranks.values())
    arrays += (*(getattr(data, field) for field in data.fields), data.top1_tokens)
    text = sum(sys.getsizeof(p) + 16 for p in data.prompts)  # the string, two list slots
    return sum(a.nbytes for a in arrays) + text


def test_memory_grows_with_the_per_prompt_fields_only(stand_in, load_tiny, tmp_path):
    model = load_tiny("gpt2")
    # Windows of 16 x 2,048 tokens, about 900 prompts: 2,000 prompts already fill two.
    options = {"batch_tokens": 2048, "progress": False}
    lens_dataset(model, demo_pairs(500), **options)  # first-call allocations
    peaks, kept = {}, {}
    for n in (2_000, 20_000):
        peaks[n], data = tracemalloc_peak(lambda n=n: lens_dataset(model, demo_pairs(n), **options))
        kept[n] = kept_bytes(data)
        del data
    grown, fields = peaks[20_000] - peaks[2_000], kept[20_000] - kept[2_000]
    # Holding all token ids (36 bytes a token as Python ints, about 40 tokens a prompt) or a
    # second copy of the numbers would each add more than the fields themselves.
    assert grown < 1.5 * fields + 2**20, (grown, fields)
    # With shards on disk the same holds (the shards' text is written, not kept twice).
    disk, _ = tracemalloc_peak(
        lambda: lens_dataset(model, demo_pairs(20_000), path=tmp_path / "r", **options)
    )
    assert disk - peaks[20_000] < 0.25 * fields + 2**20, (disk, peaks[20_000])


def test_changed_settings_are_refused_before_any_model_work(load_tiny, tmp_path, monkeypatch):
    model = load_tiny("gpt2")
    prompts, answers = demo_lists(30)
    folder = tmp_path / "run"
    lens_dataset(model, prompts, answers, batch_tokens=512, path=folder, progress=False)
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.name != "run.json"}
    monkeypatch.setattr(LogitLens, "run", lambda *a, **k: pytest.fail("the model ran"))
    cases = [
        ({"batch_tokens": 1024}, r"batch_tokens was 512, now 1024"),
        ({"batch_tokens": 512, "layers": [0, 1]}, r"model\.layers was \[0, 1, 2\], now \[0, 1\]"),
        ({"batch_tokens": 512, "variants": True}, r"variants was false, now true"),
        ({"batch_tokens": 512, "decompose": True}, r"decompose was false, now true"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=r"holds a run with other settings.*" + match):
            lens_dataset(model, prompts, answers, path=folder, progress=False, **kwargs)
    with pytest.raises(ValueError, match=r"answer_sets was \[\"answer\"\], now \[\"s\"\]"):
        lens_dataset(model, prompts, {"s": answers}, batch_tokens=512, path=folder, progress=False)
    with pytest.raises(ValueError, match=r"model\.model_name was .*gpt2.*now .*llama"):
        lens_dataset(
            load_tiny("llama"), prompts, answers, batch_tokens=512, path=folder, progress=False
        )
    after = {p.name: p.read_bytes() for p in folder.iterdir() if p.name != "run.json"}
    assert after == before, "nothing was mixed in"


def test_changed_inputs_are_refused_naming_what_changed(stand_in, load_tiny, tmp_path):
    model = load_tiny("gpt2")
    prompts, answers = demo_lists(400)
    options = {"batch_tokens": 256, "progress": False}
    folder = tmp_path / "run"
    lens_dataset(model, prompts, answers, path=folder, **options)
    meta = json.loads((folder / "run.json").read_text())["finished"]
    assert meta["n_prompts"] == 400 and meta["n_windows"] > 2
    edited = list(prompts)
    edited[300] = "The capital of Spain is"
    with pytest.raises(ValueError, match=r"the prompts differ .* at or before prompts\[\d+:\d+\]"):
        lens_dataset(model, edited, answers, path=folder, **options)
    with pytest.raises(ValueError, match=r"the (prompts|inputs) differ .*\(window 0;"):
        lens_dataset(model, prompts[:100] + prompts[101:], answers[:100] + answers[101:],
                     path=folder, **options)  # fmt: skip
    other = list(answers)
    other[5] = " Lyon"
    with pytest.raises(ValueError, match=r"the answers differ .* prompts\[0:\d+\] \(window 0"):
        lens_dataset(model, prompts, other, path=folder, **options)
    # Fewer prompts: the stream ends at a window's end, with shards beyond it.
    stop = read_shard(folder / "w0000001-b0000.npz")["meta"]["window_stop"]
    with pytest.raises(ValueError, match=rf"ended after {stop} prompts, but the folder .* holds"):
        lens_dataset(model, prompts[:stop], answers[:stop], path=folder, **options)
    # More prompts: the last window differs, or (at a window's end) the finished run does.
    with pytest.raises(ValueError, match=r"held prompts\[\d+:400\] then and holds .*:401\] now"):
        lens_dataset(model, [*prompts, "x y"], [*answers, " z"], path=folder, **options)
    assert LensDataset.load(folder).n_prompts == 400


def test_a_folder_reads_back_without_the_model_and_says_what_is_wrong(load_tiny, tmp_path):
    model = load_tiny("gpt2")
    prompts, answers = demo_lists(60)
    lenses = {"logit": None, "other": None}
    data = lens_dataset(
        model, prompts, answers, lens=lenses, batch_tokens=512, path=tmp_path / "r", progress=False
    )
    loaded = LensDataset.load(tmp_path / "r")
    assert_same(loaded, data)
    assert loaded.lens_names == ["logit", "other"]
    assert loaded.summary(n_boot=50).equals(data.summary(n_boot=50))
    assert "without its model" in loaded.show().chart._meta["cannot_open_reason"]
    loaded.save(tmp_path / "one")  # the single-file pair still works
    assert_same(LensDataset.load(tmp_path / "one"), data)

    # An unfinished run, a damaged or missing shard, a folder that is not a run.
    with pytest.raises(KeyboardInterrupt):
        lens_dataset(
            model, Interrupt(demo_pairs(60), 50), batch_tokens=256, path=tmp_path / "u",
            progress=False,
        )  # fmt: skip
    with pytest.raises(ValueError, match="holds an unfinished lens_dataset run"):
        LensDataset.load(tmp_path / "u")
    shard = sorted((tmp_path / "r").glob("w*.npz"))[1]
    shard.write_bytes(shard.read_bytes()[:100])
    with pytest.raises(ValueError, match=rf"{shard.name}.* truncated or damaged"):
        LensDataset.load(tmp_path / "r")
    shard.unlink()
    with pytest.raises(ValueError, match=r"lacks window 0's shards|has \d+ of window 0's"):
        LensDataset.load(tmp_path / "r")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="is not empty and holds no lens_dataset run"):
        lens_dataset(model, prompts, answers, path=tmp_path / "busy", progress=False)


# ---------------------------------------------------------------------------------------------
# Progress


def test_progress_tells_rates_and_what_it_cannot_know(stand_in, load_tiny, capsys, tmp_path):
    model = load_tiny("gpt2")
    lens_dataset(model, demo_pairs(3000), batch_tokens=1024, progress=True)
    err = capsys.readouterr().err
    assert "lens_dataset (total unknown)" in err
    assert "prompts/s" in err and "tokens/s" in err
    assert "time left unknown (a stream of unknown length)" in err
    prompts, answers = demo_lists(3000)
    with pytest.raises(KeyboardInterrupt):
        lens_dataset(
            model, Interrupt(zip(prompts, answers, strict=True), 2000), batch_tokens=1024,
            path=tmp_path / "r", progress=False,
        )  # fmt: skip
    lens_dataset(model, prompts, answers, batch_tokens=1024, path=tmp_path / "r", progress=True)
    err = capsys.readouterr().err
    assert "/3000 prompts" in err and " left" in err
    assert "read back from the folder" in err
    lens_dataset(model, prompts, answers, progress=False)
    assert "lens_dataset" not in capsys.readouterr().err


def test_streams_without_any_answer_or_foil_say_so(stand_in, load_tiny):
    model = load_tiny("gpt2")
    with pytest.warns(UserWarning, match="no prompt of the stream had an answer"):
        data = lens_dataset(model, iter(["a b", "c d"]), iter([None, None]), progress=False)
    assert np.isnan(data.answer_probs["answer"]).all()


def test_progress_with_jobs_in_flight_counts_time_once_and_jobs_by_state(monkeypatch):
    """Remote jobs in flight at once: the rates use the time any batch ran (not the sum of
    their times), and the bar counts the jobs out by state, each completion once."""
    from murano_widgets.dataset import progress as progress_module
    from murano_widgets.dataset.progress import Progress

    clock = iter(
        [0.0, 3.0, 4.0, 10.0, 11.0]
    )  # start (the 2nd overlaps: no clock), ran x2, start, ran
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: next(clock))
    bar = Progress(None, enabled=False)
    bar.start()  # t=0
    bar.start()  # overlapping: already running
    bar.job("RUNNING", "aaaaaaaa-1")
    bar.job("QUEUED", "bbbbbbbb-2")
    assert bar.state == "jobs: 1 running, 1 queued"
    bar.job("COMPLETED", "aaaaaaaa-1")
    bar.job("COMPLETED", "aaaaaaaa-1")  # reported twice: counted once
    assert (bar.jobs, bar.state) == (1, "job bbbbbbbb queued")
    bar.ran(10, 100)  # t=3
    bar.ran(10, 100)  # t=4: both ran within 0..4
    assert bar.seconds == pytest.approx(4.0)
    bar.start()  # t=10: idle time between is not running time
    bar.ran(5, 50)  # t=11
    assert bar.seconds == pytest.approx(5.0) and bar.run_prompts == 25
    bar.job(None)
    assert bar.state is None and bar.jobs == 1


def test_remote_jobs_is_checked_before_any_model_work(load_tiny):
    model = load_tiny("gpt2")
    with pytest.raises(ValueError, match=r"remote_jobs is the number of NDIF jobs.*remote=False"):
        lens_dataset(model, ["a b"], [" c"], remote_jobs=2, progress=False)


def test_a_folder_of_a_version_that_kept_fewer_fields_loads_and_is_not_resumed(
    load_tiny, tmp_path, monkeypatch
):
    # A run written when a data set kept only entropy and KL (what every version before the
    # fields were derived from the metric registry kept), emulated by narrowing the list.
    from murano_widgets.dataset.table import LEGACY_FIELDS

    model = load_tiny("gpt2")
    prompts, answers = demo_lists(30)
    folder = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(runner, "METRIC_FIELDS", LEGACY_FIELDS)
        old = lens_dataset(model, prompts, answers, batch_tokens=512, path=folder, progress=False)
    assert old.fields == LEGACY_FIELDS
    loaded = LensDataset.load(folder)
    assert loaded.fields == LEGACY_FIELDS
    np.testing.assert_array_equal(loaded.kl_to_final, old.kl_to_final)
    with pytest.raises(AttributeError, match=r"no final_token_probs: it holds \['entropy'"):
        loaded.final_token_probs  # noqa: B018
    # Its summary, widget and figure offer what it holds, and name what it lacks.
    assert "final_token_probs_mean" not in loaded.summary(n_boot=20).columns
    assert {m.name for m in loaded.metrics} >= {"entropy", "kl"}
    assert "final_prob" not in {m.name for m in loaded.metrics}
    with pytest.raises(ValueError, match=r"metric must be one of .*kept only the fields"):
        loaded.plot(metric="final_prob", n_boot=20)
    # The current version keeps more: the folder is another run's, named by what differs.
    monkeypatch.setattr(LogitLens, "run", lambda *a, **k: pytest.fail("the model ran"))
    with pytest.raises(ValueError, match=r"fields was \[\"entropy\", \"kl_to_final\"\], now"):
        lens_dataset(model, prompts, answers, batch_tokens=512, path=folder, progress=False)
