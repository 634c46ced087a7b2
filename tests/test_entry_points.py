"""Every entry point checks its model the same way, and every public argument fails clearly.

Each entry point that takes a model is called with the usual wrong things (a hub id, a path, a
Hugging Face model object, an nnsight model, ``object()``, ``None``, a model on the ``meta``
device) and must raise the one message of :func:`murano_widgets._checks.check_model`, naming its
own argument, before any model work. Then each public argument gets wrong types, numpy numbers
(accepted wherever Python's are) and odd unicode: the error names the argument and comes from
the package's own checks, before the model runs.
"""

from __future__ import annotations

import math
import re
import traceback
from pathlib import Path

import numpy as np
import pytest
import torch

from murano_widgets import (
    LogitLens,
    LogitLensWidget,
    compare_lenses,
    lens_dataset,
    load_demo_model,
    load_demo_tuned_lens,
    show_lens_diff,
    show_logit_lens,
)
from murano_widgets._checks import MODEL_ALLOWED, check_float, check_model, check_str
from murano_widgets.demo_model import DEMO_TUNED_LENS_PATH
from murano_widgets.lenses.evaluate import per_layer_kl
from murano_widgets.lenses.tuned import TunedLens
from murano_widgets.run import run_logit_lens
from murano_widgets.widgets.dataset import LensDatasetWidget
from murano_widgets.widgets.lens import WidgetValueError

PROMPTS = ["The capital of France is", "Two plus three is"]
ANSWERS = [" Paris", " five"]
TEXTS = ["The capital of France is Paris. Two plus three is five. " * 8]
CORE = f"must be {MODEL_ALLOWED}"
NO_WORK = "model work happened before the arguments were checked"


def _refuse(*args, **kwargs):
    raise AssertionError(NO_WORK)


class _GuardedTokenizer:
    """The demo tokenizer, refusing to tokenize (its other attributes pass through)."""

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer

    def __call__(self, *args, **kwargs):
        raise AssertionError(NO_WORK)

    def __getattr__(self, name):
        if name in ("encode", "encode_plus", "batch_encode_plus", "apply_chat_template"):
            return _refuse
        return getattr(self._tokenizer, name)


class Guarded:
    """The demo model behind a wall: tracing (or its plain forward pass), generating,
    unembedding or tokenizing fails."""

    trace = generate = unembed = project_on_vocab = layer = block_outputs = staticmethod(_refuse)

    def __init__(self, model):
        self._model = model
        self.tokenizer = _GuardedTokenizer(model.tokenizer)

    def __getattr__(self, name):
        return getattr(self._model, name)


class OnMeta(Guarded):
    """A model whose weights are on the meta device: there is nothing to run."""

    device = torch.device("meta")


@pytest.fixture(scope="module")
def demo():
    return load_demo_model()


@pytest.fixture(scope="module")
def guarded(demo):
    return Guarded(demo)


@pytest.fixture(scope="module")
def result(demo):
    return LogitLens(demo, top_k=3)({"prompts": PROMPTS})["logit_lens"]


@pytest.fixture(scope="module")
def dataset(demo):
    return lens_dataset(demo, PROMPTS, ANSWERS, progress=False)


@pytest.fixture(scope="module")
def widget(result):
    return LogitLensWidget(result)


@pytest.fixture(scope="module")
def demo_lens():
    return load_demo_tuned_lens()


@pytest.fixture(scope="module")
def wrong_models(demo):
    """The usual wrong things given where a model goes, with the hint each must get."""
    import nnsight
    from transformers import AutoModelForCausalLM, GPT2Config

    config = GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=16, n_positions=16)
    config.bos_token_id = config.eos_token_id = 0
    hf_model = AutoModelForCausalLM.from_config(config)
    return {
        "str": ("gpt2", TypeError, r"MuranoModel('gpt2')"),
        "path": (Path("models") / "mine", TypeError, "MuranoModel('models/mine')"),
        "hf": (hf_model, TypeError, "save_pretrained"),
        "nnsight": (nnsight.LanguageModel(hf_model), TypeError, 'backend="nnsight"'),
        "object": (object(), TypeError, "lacks name, n_layers"),
        "none": (None, TypeError, "load_demo_model()"),
        "meta": (OnMeta(demo), ValueError, "device is 'meta'"),
    }


# Each entry point that takes a model: (id, the argument's name, call(model, fixtures)), with
# everything else right. `None` is a default (not a wrong model) where the argument is optional.
ENTRY_POINTS = [
    ("LogitLens", "model", lambda m, f: LogitLens(m)),
    ("show_logit_lens", "model", lambda m, f: show_logit_lens(m, PROMPTS)),
    ("run_logit_lens", "model", lambda m, f: run_logit_lens(m, PROMPTS)),
    ("lens_dataset", "model", lambda m, f: lens_dataset(m, PROMPTS, ANSWERS, progress=False)),
    ("LensDataset.show", "model", lambda m, f: f["dataset"].show(model=m)),
    ("LensDatasetWidget", "model", lambda m, f: LensDatasetWidget(f["dataset"], model=m)),
    ("LogitLensWidget", "model", lambda m, f: LogitLensWidget(f["result"], model=m)),
    ("compare_lenses:a", "model_a", lambda m, f: compare_lenses(m, PROMPTS, model_b=f["good"])),
    ("compare_lenses:b", "model_b", lambda m, f: compare_lenses(f["good"], PROMPTS, model_b=m)),
    ("TunedLens.load", "model", lambda m, f: TunedLens.load(DEMO_TUNED_LENS_PATH, m)),
    # The model is checked before the folder is read: a missing folder is not reported first.
    ("TunedLens.load:nowhere", "model", lambda m, f: TunedLens.load(Path("no-such-lens"), m)),
    ("TunedLens.identity", "model", lambda m, f: TunedLens.identity(m)),
    ("TunedLens.train", "model", lambda m, f: TunedLens.train(m, TEXTS, progress=False)),
    ("TunedLens.check", "model", lambda m, f: f["lens"].check(m)),
    ("per_layer_kl", "model", lambda m, f: per_layer_kl(m, TEXTS)),
    ("load_demo_tuned_lens", "model", lambda m, f: load_demo_tuned_lens(m)),
]
OPTIONAL = {
    "LensDataset.show",
    "LensDatasetWidget",
    "LogitLensWidget",
    "compare_lenses:b",
    "TunedLens.load",
    "TunedLens.load:nowhere",
    "load_demo_tuned_lens",
}
WRONG = ["str", "path", "hf", "nnsight", "object", "none", "meta"]


WRONG_MODEL_CASES = [
    pytest.param(entry, argument, call, kind, id=f"{entry}-{kind}")
    for entry, argument, call in ENTRY_POINTS
    for kind in WRONG
    if not (kind == "none" and entry in OPTIONAL)  # None is then the default, not a mistake
]


@pytest.mark.parametrize(("entry", "argument", "call", "kind"), WRONG_MODEL_CASES)
def test_every_entry_point_refuses_a_wrong_model_with_one_message(
    entry, argument, call, kind, wrong_models, guarded, dataset, result, demo_lens
):
    model, error, hint = wrong_models[kind]
    fixtures = {"good": guarded, "dataset": dataset, "result": result, "lens": demo_lens}
    with pytest.raises(error) as raised:
        call(model, fixtures)
    message = str(raised.value)
    assert message.startswith(f"{argument} {CORE}; got "), message
    assert hint in message, message
    # Raised by the one check, not by anything deeper.
    assert traceback.extract_tb(raised.tb)[-1].name == "check_model"


def test_the_message_says_what_was_given(wrong_models):
    for kind, words in {
        "str": ["got str 'gpt2'"],
        "path": [f"got {type(Path()).__name__}", "mine"],
        "hf": ["got GPT2LMHeadModel:", "MuranoModel(folder)"],
        "nnsight": ["got LanguageModel:"],
        "object": ["got object <object object at"],
        "none": ["got NoneType None"],
        "meta": ["got OnMeta", "no weights to run", "'cpu' or 'cuda'"],
    }.items():
        model, error, _ = wrong_models[kind]
        with pytest.raises(error) as raised:
            check_model(model, "my_model")
        message = str(raised.value)
        assert message.startswith(f"my_model {CORE}"), message
        assert "\n" not in message and len(message) < 500, message
        for word in words:
            assert word in message, (kind, message)


def test_a_loaded_model_passes_and_comes_back(demo, guarded):
    assert check_model(demo) is demo
    assert check_model(guarded, "model_b") is guarded


# ---------------------------------------------------------------------------------------------
# Every other public argument: a clear error naming it, before any model work


BAD_ARGUMENTS = [
    # LogitLens
    (lambda m, f: LogitLens(m, top_k=2.0), ValueError, "top_k"),
    (lambda m, f: LogitLens(m, top_k="5"), ValueError, "top_k"),
    (lambda m, f: LogitLens(m, max_chunk_bytes=None), ValueError, "max_chunk_bytes"),
    (lambda m, f: LogitLens(m, remote="no"), TypeError, "remote"),
    (lambda m, f: LogitLens(m, layers=2.0), TypeError, "layers"),
    (lambda m, f: LogitLens(m, positions=["last"]), ValueError, "positions"),
    (lambda m, f: LogitLens(m, lens="my-lens"), TypeError, "TunedLens.load('my-lens', model)"),
    (lambda m, f: LogitLens(m, lens=3), TypeError, "lens must be None"),
    (lambda m, f: LogitLens(m, targets=" Paris"), TypeError, "targets"),
    (lambda m, f: LogitLens(m, targets=["a\ud800"]), ValueError, "targets[0]"),
    # show_logit_lens and run_logit_lens
    (lambda m, f: show_logit_lens(m, PROMPTS, metric=["prob"]), ValueError, "metric"),
    (lambda m, f: show_logit_lens(m, PROMPTS, prompt=1.0), ValueError, "prompt"),
    (lambda m, f: show_logit_lens(m, PROMPTS, layer="2"), ValueError, "layer"),
    (lambda m, f: show_logit_lens(m, ["ok", "a\ud800"]), ValueError, "prompts[1]"),
    (lambda m, f: show_logit_lens(m, "ok", answers="\ud800"), ValueError, "answers[0]"),
    (lambda m, f: show_logit_lens(m, PROMPTS, hide_template="yes"), TypeError, "hide_template"),
    (
        lambda m, f: show_logit_lens(m, PROMPTS, generate=2, do_sample=True, temperature="hot"),
        ValueError,
        "temperature",
    ),
    (
        lambda m, f: run_logit_lens(m, PROMPTS, generate=2, do_sample=True, temperature=10**400),
        ValueError,
        "temperature",
    ),
    (
        lambda m, f: run_logit_lens(m, PROMPTS, generate=2, do_sample=True, top_p=[0.9]),
        ValueError,
        "top_p",
    ),
    (lambda m, f: run_logit_lens(m, PROMPTS, generate=2.0), ValueError, "generate"),
    (lambda m, f: run_logit_lens(m, PROMPTS, add_generation_prompt=None), TypeError, "add_gen"),
    # lens_dataset and LensDataset.show
    (lambda m, f: lens_dataset(m, PROMPTS, ANSWERS, batch_size=4.0), ValueError, "batch_size"),
    (lambda m, f: lens_dataset(m, PROMPTS, ANSWERS, progress="yes"), TypeError, "progress"),
    (lambda m, f: lens_dataset(m, PROMPTS, ["a\ud800", None]), ValueError, "answers[0]"),
    (lambda m, f: lens_dataset(m, PROMPTS, ANSWERS, lens="lens"), TypeError, "lens must be"),
    (lambda m, f: f["dataset"].show(model=m, lens=2.0), TypeError, "lens must be"),
    # compare_lenses: every check before either side runs
    (lambda m, f: compare_lenses(m, PROMPTS, token=2.0), TypeError, "token"),
    (lambda m, f: compare_lenses(m, PROMPTS, token=10**9), ValueError, "token"),
    (lambda m, f: compare_lenses(m, PROMPTS, token="\ud800"), ValueError, "token"),
    (lambda m, f: compare_lenses(m, PROMPTS, lens_b="folder"), TypeError, "lens_b"),
    (lambda m, f: compare_lenses(m, PROMPTS, lens_a=[1]), TypeError, "lens_a"),
    (lambda m, f: compare_lenses(m, PROMPTS, top_k=2.5), ValueError, "top_k"),
    (lambda m, f: compare_lenses(m, PROMPTS, align=["end"]), ValueError, "align"),
    (lambda m, f: compare_lenses(m, PROMPTS, prompts_b=[1, 2]), TypeError, "prompts_b[0]"),
    # The widget and its page
    (lambda m, f: LogitLensWidget(f["result"], metric=["prob"]), WidgetValueError, "metric"),
    (lambda m, f: LogitLensWidget(f["result"], prompt=0.0), ValueError, "prompt"),
    (lambda m, f: f["widget"].to_html(title=3), TypeError, "title"),
    (lambda m, f: f["widget"].to_html(title=["a title"]), TypeError, "title"),
    (lambda m, f: f["widget"].to_html(title="a\ud800"), ValueError, "title"),
    # The tuned lens
    (lambda m, f: TunedLens.identity(m, base_model_name=3), TypeError, "base_model_name"),
    (lambda m, f: TunedLens.train(m, TEXTS, steps=1.0), ValueError, "steps"),
    (lambda m, f: TunedLens.train(m, TEXTS, lr="0.1"), ValueError, "lr"),
    (lambda m, f: TunedLens.train(m, TEXTS, momentum=1.0), ValueError, "momentum"),
    (lambda m, f: TunedLens.train(m, TEXTS, weight_decay=math.nan), ValueError, "weight_decay"),
    (lambda m, f: TunedLens.train(m, TEXTS, seed=1.5), ValueError, "seed"),
    (lambda m, f: TunedLens.train(m, TEXTS, seq_len=32.0), ValueError, "seq_len"),
    (lambda m, f: TunedLens.train(m, TEXTS, stop_after="1"), ValueError, "stop_after"),
    (lambda m, f: TunedLens.train(m, TEXTS, save_every=0), ValueError, "save_every"),
    (lambda m, f: TunedLens.train(m, TEXTS, max_chunk_bytes=0), ValueError, "max_chunk_bytes"),
    (lambda m, f: TunedLens.train(m, TEXTS, base_model_name=["x"]), TypeError, "base_model_n"),
    (lambda m, f: TunedLens.train(m, TEXTS, progress="no"), TypeError, "progress"),
    (lambda m, f: TunedLens.train(m, ["ok", "a\ud800"]), ValueError, "texts[1]"),
    (lambda m, f: TunedLens.train(m, "one text"), ValueError, "texts"),
    (lambda m, f: per_layer_kl(m, TEXTS, batch_size=2.0), ValueError, "batch_size"),
    (lambda m, f: per_layer_kl(m, ["a\ud800"]), ValueError, "texts[0]"),
    (lambda m, f: TunedLens.load(None, m), TypeError, "folder"),
    (lambda m, f: TunedLens.load(3, m), TypeError, "folder"),
    (lambda m, f: TunedLens.load("a\x00b", m), ValueError, "folder"),
    (lambda m, f: f["lens"].save(None), TypeError, "folder"),
    # The static plots, the diff widget, the data set's summary and the HTML files
    (lambda m, f: f["result"].plot(metric=["prob"]), ValueError, "metric"),
    (lambda m, f: f["result"].plot(layers=2.0), ValueError, "layers"),
    (lambda m, f: f["result"].plot(layers=[0.0]), ValueError, "layers"),
    (lambda m, f: f["result"].plot(ax="axes"), TypeError, "ax"),
    (lambda m, f: f["result"].plot(max_token_chars=None), ValueError, "max_token_chars"),
    (lambda m, f: f["result"].plot(max_token_chars=2.5), ValueError, "max_token_chars"),
    (lambda m, f: f["dataset"].plot(metric=["answer_prob"]), ValueError, "metric"),
    (lambda m, f: f["dataset"].plot(ax=object()), TypeError, "ax"),
    (lambda m, f: f["dataset"].summary(n_boot=10**30), ValueError, "n_boot"),
    (lambda m, f: show_lens_diff(f["result"], f["result"], metric=[1]), ValueError, "metric"),
    (lambda m, f: f["widget"].save_html(None), TypeError, "path"),
    (lambda m, f: f["widget"].save_html("a\x00.html"), ValueError, "path"),
]


@pytest.mark.parametrize(("call", "error", "name"), BAD_ARGUMENTS)
def test_a_bad_argument_is_named_before_any_model_work(
    call, error, name, guarded, dataset, result, widget, demo_lens
):
    fixtures = {"dataset": dataset, "result": result, "widget": widget, "lens": demo_lens}
    with pytest.raises(error) as raised:
        call(guarded, fixtures)  # the guarded model fails on any trace, generation or tokenizing
    assert name in str(raised.value)
    # The package's own check raised it, not the standard library, torch, numpy or pandas.
    where = traceback.extract_tb(raised.tb)[-1].filename
    assert "murano_widgets" in where and "site-packages" not in where, where


# ---------------------------------------------------------------------------------------------
# numpy numbers and odd unicode are accepted where they make sense


def test_numpy_numbers_are_accepted_where_python_ones_are(demo):
    widget = show_logit_lens(
        demo, PROMPTS, top_k=np.int64(2), prompt=np.int64(1), layer=np.int32(3)
    )
    assert widget.prompt == 1 and widget.result.topk_tokens.shape[-1] == 2
    sampled = run_logit_lens(
        demo,
        PROMPTS[0],
        generate=np.int64(2),
        do_sample=np.bool_(True),
        temperature=np.float64(0.7),
        top_p=np.float32(0.95),
        seed=np.int64(1),
    )
    assert sampled.generation_starts is not None
    data = lens_dataset(demo, PROMPTS, ANSWERS, batch_size=np.int64(1), progress=np.bool_(False))
    assert data.n_prompts == 2 and data.provenance["batch_size"] == 1
    assert type(data.provenance["batch_size"]) is int


def test_numpy_numbers_are_accepted_by_the_tuned_lens_trainer(demo):
    # stop_after=0: the arguments, the tokens and the trainer are made, no step is taken.
    lens = TunedLens.train(
        demo,
        TEXTS,
        steps=np.int64(2),
        tokens_per_step=np.int32(64),
        lr=np.float32(0.5),
        momentum=np.float64(0.9),
        weight_decay=0,
        seed=np.int64(3),
        seq_len=np.int64(16),
        stop_after=np.int64(0),
        max_chunk_bytes=np.int64(2**20),
        progress=np.bool_(False),
    )
    assert type(lens.provenance["steps_planned"]) is int and lens.provenance["seed"] == 3
    run = lens.training_state["run"]
    assert run["steps"] == 2 and run["seed"] == 3 and run["seq_len"] == 16
    assert all(type(run[key]) is int for key in ("steps", "tokens_per_step", "seed", "seq_len"))
    assert all(type(run[key]) is float for key in ("lr", "momentum", "weight_decay"))


def test_odd_unicode_in_prompts_targets_and_titles_works(demo):
    odd = "\u202eright to left \x00 nul <b>&amp;"
    with pytest.warns(UserWarning, match="several tokens long"):
        widget = show_logit_lens(demo, [odd, "The capital"], targets=[" Paris", "\u202e"])
    assert widget.result.prompts[0] == odd
    page = widget.to_html(title=odd)
    assert "<b>&amp;" not in page.split("<title>", 1)[-1].split("</title>", 1)[0]
    comparison = compare_lenses(demo, [odd], token=0)
    assert comparison.source == "run together"


@pytest.mark.parametrize(
    ("value", "options", "expected"),
    [
        (np.float64(0.95), {"low": 0, "high": 1}, 0.95),
        (np.int64(3), {}, 3.0),
        (np.float32(0.5), {"low": 0, "low_open": True}, 0.5),
    ],
)
def test_check_float_accepts_every_real_number_type(value, options, expected):
    got = check_float("x", value, **options)
    assert type(got) is float and got == pytest.approx(expected)


@pytest.mark.parametrize(
    ("value", "options", "words"),
    [
        (True, {}, ["x must be a number", "bool"]),
        ("0.5", {}, ["x must be a number", "str '0.5'"]),
        (None, {}, ["x must be a number", "NoneType"]),
        (math.inf, {}, ["x must be a number finite", "inf"]),
        (math.nan, {"low": 0, "high": 1}, ["x must be a number in [0, 1]", "nan"]),
        (0, {"low": 0, "low_open": True}, ["x must be a number above 0", "got 0"]),
        (1, {"low": 0, "high": 1, "high_open": True}, ["in [0, 1)"]),
    ],
)
def test_check_float_names_what_is_allowed(value, options, words):
    with pytest.raises(ValueError) as raised:
        check_float("x", value, **options)
    for word in words:
        assert word in str(raised.value)


def test_check_str_refuses_non_strings_empty_strings_and_lone_surrogates():
    assert check_str("title", None, optional=True) is None
    assert check_str("title", "", empty=True) == ""
    assert check_str("title", "\u202e\x00 ok") == "\u202e\x00 ok"
    with pytest.raises(TypeError, match=r"title must be a string or None, got list \['a'\]"):
        check_str("title", ["a"], optional=True)
    with pytest.raises(ValueError, match="title must be a non-empty string"):
        check_str("title", "  ")
    with pytest.raises(ValueError, match=r"title holds a lone surrogate U\+D800 at character 1"):
        check_str("title", "a\ud800")


def test_the_front_door_exports_run_logit_lens_and_names_lens(demo, demo_lens):
    """``run_logit_lens`` is importable from the package, as the documentation's pages import
    it, and ``lens=`` is a parameter of ``show_logit_lens`` that readers, IDEs and type checkers
    see (not one of ``**options``), still reaching the run."""
    import inspect

    import murano_widgets
    import murano_widgets.run

    assert murano_widgets.run_logit_lens is murano_widgets.run.run_logit_lens
    assert "run_logit_lens" in murano_widgets.__all__
    # The pages' own imports of it (the independent truth of what users are told to write).
    root = Path(murano_widgets.__file__).parents[1]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    statement = re.compile(r"\s*from\s+(?P<module>[\w.]+)\s+import\s+.*\brun_logit_lens\b")
    imports = [
        found["module"]
        for page in pages
        for line in page.read_text(encoding="utf-8").splitlines()
        if (found := statement.match(line))
    ]
    assert imports, "no page imports run_logit_lens: the check below would pass on nothing"
    assert set(imports) == {"murano_widgets"}, imports

    parameter = inspect.signature(show_logit_lens).parameters["lens"]
    assert parameter.kind is parameter.KEYWORD_ONLY and parameter.default is None
    # It reaches the run: the widget holds the tuned lens's numbers, not the logit lens's.
    widget = show_logit_lens(demo, PROMPTS, lens=demo_lens)
    tuned = run_logit_lens(demo, PROMPTS, lens=demo_lens)
    plain = run_logit_lens(demo, PROMPTS)
    assert widget.result.lens_kind == tuned.lens_kind == "tuned"
    # Padding cells are NaN in both: equal as NaN, every other cell exactly.
    torch.testing.assert_close(
        widget.result.max_probs, tuned.max_probs, rtol=0, atol=0, equal_nan=True
    )
    assert not torch.allclose(widget.result.max_probs, plain.max_probs, equal_nan=True)
    # And the session keeps it for what the widget runs later (a typed prompt, a patch).
    assert widget.session.step.lens is demo_lens
