"""The Jacobian lens: reading, fitting, files, merging, published lenses and the shipped demo lens.

Every number is checked against an independent computation: the readout against plain
transformers (hooks on the blocks, ``J h``, the model's own norm, ``lm_head`` and soft-cap:
``tests/reference.py``), the fit against the definition computed with full autograd Jacobians
(``reference_jacobian_lens``), merges against a weighted mean written here. Interoperability with
the real TransformerLens lives in ``tests/transformer_lens_interop/`` (marker
``transformer_lens_interop``; ``bash .ci/transformer_lens.sh``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from pathlib import Path

import pytest
import torch
from reference import ReferenceLens, reference_jacobian_lens
from test_logit_lens import PROMPTS, run_lens

import murano_widgets.lenses.jacobian_fit as jacobian_fit
from murano_widgets import JacobianLens, LogitLens, MuranoModel
from murano_widgets.lenses import jacobian_hub

TEXTS = [
    "The capital of France is Paris and the capital of Italy is Rome.",
    "one two three four five six seven eight nine ten",
    "Alice met Bob. Alice gave Bob a book. Bob thanked Alice.",
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday",
]
SKIP = 3  # the tiny texts are 10 to 16 tokens: the default 16 would leave no valid position


def _random_lens(model, seed: int = 0, scale: float = 0.3, layers=None) -> JacobianLens:
    """``I + scale · noise / sqrt(d)``: far enough from the identity to change every reading."""
    d = model.config.hidden_size if hasattr(model.config, "hidden_size") else model.config.n_embd
    generator = torch.Generator().manual_seed(seed)
    layers = range(model.n_layers - 1) if layers is None else layers
    matrices = {
        layer: torch.eye(d) + scale * torch.randn(d, d, generator=generator) / d**0.5
        for layer in layers
    }
    return JacobianLens(matrices, n_prompts=4, metadata={"note": "random"})


def _fit(model, texts=TEXTS, **kwargs) -> JacobianLens:
    return JacobianLens.fit(model, texts, **{"skip_first": SKIP, "progress": False, **kwargs})


def _fields(result) -> dict:
    return {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}


# ---------------------------------------------------------------------------------------------
# Reading


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_identity_matrices_read_exactly_as_the_logit_lens(load_tiny, arch):
    """``J_l = I`` is the logit lens: every field of the result is equal, on both paths."""
    model = load_tiny(arch)
    d = model.config.hidden_size if arch == "llama" else model.config.n_embd
    identity = JacobianLens(
        {layer: torch.eye(d) for layer in range(model.n_layers - 1)}, n_prompts=1
    )
    for reduce_in_trace in (False, True):
        plain = _fields(run_lens(model, reduce_in_trace=reduce_in_trace, targets=[" Paris"]))
        jlens = _fields(
            run_lens(model, lens=identity, reduce_in_trace=reduce_in_trace, targets=[" Paris"])
        )
        assert (jlens.pop("lens_kind"), jlens.pop("lens_title")) == ("jacobian", "Jacobian lens")
        assert plain.pop("lens_kind") == "logit"
        plain.pop("lens_title"), plain.pop("lens_provenance")
        assert jlens.pop("lens_provenance")["kind"] == "jacobian"
        assert plain.keys() == jlens.keys()
        for name, value in plain.items():
            other = jlens[name]
            if isinstance(value, torch.Tensor):
                assert torch.equal(value.nan_to_num(-7.0), other.nan_to_num(-7.0)), name
            else:
                assert value == other, name


@pytest.mark.parametrize("arch", ["gpt2", "llama", "gemma2"])
def test_the_lens_reads_j_h_through_the_models_own_norm_unembedding_and_soft_cap(
    load_tiny, tiny_model_dirs, arch
):
    """Every field against plain transformers: ``lm_head(norm(J_l h))``, Gemma 2's soft-cap
    ``tanh(z / c) c`` applied, the last layer the model's own output."""
    model = load_tiny(arch)
    lens = _random_lens(model)
    reference = ReferenceLens(tiny_model_dirs[arch])
    result = run_lens(model, lens=lens)
    for p, prompt in enumerate(PROMPTS):
        ref = reference.run(prompt, jacobians=lens.jacobians)
        positions = result.positions(p)
        for name in ("max_probs", "entropy", "kl_to_final", "final_token_probs", "topk_probs"):
            ours = getattr(result, name)[:, p, positions]
            torch.testing.assert_close(ours, ref[name], atol=2e-5, rtol=1e-4, msg=name)
        assert torch.equal(result.predicted_tokens[:, p, positions], ref["predicted_tokens"])
    # The matrices changed every layer but the last.
    plain = run_lens(model)
    assert not torch.allclose(result.max_probs[:-1], plain.max_probs[:-1], equal_nan=True)
    torch.testing.assert_close(result.max_probs[-1], plain.max_probs[-1], equal_nan=True)
    if arch == "gemma2":
        # The cap is what makes the two agree: without it the reference is far off.
        reference.cap = None
        uncapped = reference.run(PROMPTS[0], jacobians=lens.jacobians)["max_probs"]
        ours = result.max_probs[:, 0, result.positions(0)]
        assert float((uncapped - ours).abs().max()) > 1e-2


def test_translate_in_the_hiddens_dtype_and_device_with_fresh_copies(load_tiny):
    model = load_tiny("llama")
    lens = _random_lens(model)
    hidden = torch.randn(2, 5, 32)
    expected = hidden.double() @ lens.jacobians[1].double().T
    got = lens.translate(1, hidden)
    assert got.dtype == torch.float32 and got.shape == (2, 5, 32)
    torch.testing.assert_close(got.double(), expected, rtol=1e-5, atol=1e-5)
    half = lens.translate(1, hidden.bfloat16())
    assert half.dtype == torch.bfloat16
    torch.testing.assert_close(half.double(), expected, rtol=0.02, atol=0.05)
    exact = lens.translate(1, hidden.double())
    torch.testing.assert_close(exact, expected, rtol=1e-6, atol=1e-6)
    lens.jacobians[1].mul_(2.0)  # an in-place edit reaches the cached copies
    torch.testing.assert_close(lens.translate(1, hidden.double()), 2 * expected)
    assert not lens.translate(1, hidden).requires_grad
    with pytest.raises(ValueError, match=r"no matrix for layer 2 \(it has layers \[0, 1\]\)"):
        lens.translate(2, hidden)
    with pytest.raises(ValueError, match=r"hidden must be \[\.\.\., 32\]"):
        lens.translate(0, torch.zeros(1, 33))
    lens.metadata["target_layer"] = 2  # the block every matrix maps to reads as it is
    assert lens.translate(2, hidden) is hidden
    # Sent to NDIF by value: the matrices, not the device copies.
    assert lens.__getstate__()["_operands"] == {}


def test_a_lens_for_some_layers_is_refused_before_any_model_work_then_reads_those(
    load_tiny, tiny_model_dirs
):
    model = load_tiny("gpt2")
    lens = _random_lens(model, layers=[0])
    with pytest.raises(ValueError, match=r"no matrix for layers \[1\] .* pass layers=\[0, 2\]"):
        LogitLens(model, lens=lens)
    result = run_lens(model, layers=[0, 2], lens=lens)
    ref = ReferenceLens(tiny_model_dirs["gpt2"]).run(PROMPTS[0], jacobians=lens.jacobians)
    torch.testing.assert_close(
        result.max_probs[:, 0, result.positions(0)], ref["max_probs"][[0, 2]], atol=2e-5, rtol=1e-4
    )


def test_check_names_width_depth_and_target(load_tiny):
    model = load_tiny("llama")
    _random_lens(model).check(model)
    wide = JacobianLens({0: torch.eye(48)}, n_prompts=1, metadata={"model_name": "big"})
    with pytest.raises(ValueError, match=r"d_model=48 \(fitted for 'big'\) .* hidden size 32"):
        wide.check(model)
    deep = JacobianLens({layer: torch.eye(32) for layer in range(5)}, n_prompts=1)
    with pytest.raises(ValueError, match=r"has 3 layers.*layers \[2, 3, 4\] belong to a deeper"):
        deep.check(model)
    other_target = JacobianLens({0: torch.eye(32)}, n_prompts=1, metadata={"target_layer": 1})
    with pytest.raises(ValueError, match=r"to block 1's output, .* ends at block 2"):
        other_target.check(model)
    with pytest.raises(ValueError, match="d_model=48"):
        LogitLens(model, lens=wide)


# ---------------------------------------------------------------------------------------------
# Fitting


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_the_fit_equals_the_definition(load_tiny, tiny_model_dirs, arch):
    """Against full autograd Jacobians of the last block's output with respect to each block's
    output (tests/reference.py), summed over valid targets, averaged over valid sources and
    texts, in float64; a text with no valid position is left out of both, with a warning."""
    model = load_tiny(arch)
    texts = [*TEXTS[:3], "Paris"]  # two tokens: no valid position
    with pytest.warns(UserWarning, match=r"1 of 4 texts .* left out of the fit \(texts\[3\]\)"):
        lens = _fit(model, texts, dim_batch=5)  # 32 = 6 passes of 5 and one of 2
    expected = reference_jacobian_lens(tiny_model_dirs[arch], texts, skip_first=SKIP)
    assert lens.source_layers == [0, 1] and lens.n_prompts == 3 and lens.d_model == 32
    for layer, matrix in expected.items():
        error = (lens.jacobians[layer].double() - matrix).norm() / matrix.norm()
        assert error < 1e-5, (layer, float(error))
    # The matrices are far from the identity: the test could fail.
    assert float((lens.jacobians[0] - torch.eye(32)).norm()) > 1.0
    meta = lens.metadata
    assert meta["estimator"] == "jacobian_lens" and meta["target_layer"] == 2
    assert meta["skip_first_positions"] == SKIP and meta["dim_batch"] == 5
    assert meta["model_name"] == model.name and meta["n_skipped"] == 1
    json.dumps(lens.provenance)
    # Some layers, and the same on the nnsight backend.
    some = _fit(model, TEXTS[:2], source_layers=[-2])
    other = _fit(
        MuranoModel(tiny_model_dirs[arch], backend="nnsight"), TEXTS[:2], source_layers=[1]
    )
    assert some.source_layers == [1]
    # More lanes than output dimensions: one pass, the same matrices.
    wide = _fit(model, TEXTS[:2], source_layers=[1], dim_batch=64)
    torch.testing.assert_close(wide.jacobians[1], some.jacobians[1], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(some.jacobians[1], other.jacobians[1], rtol=1e-6, atol=1e-6)


def test_fit_settings_are_checked_before_any_model_work(load_tiny, monkeypatch):
    model = load_tiny("llama")
    monkeypatch.setattr(jacobian_fit, "prompt_jacobians", _fail)
    for kwargs, message in (
        ({"source_layers": [0, 0]}, "holds a layer twice"),
        ({"source_layers": [2]}, r"source_layers \[2\] are not below target_layer=2"),
        ({"source_layers": [5]}, r"source_layers\[0\] must be an int from -3 to 2"),
        ({"source_layers": []}, "must not be empty"),
        ({"target_layer": 0}, "target_layer must be above layer 0"),
        ({"dim_batch": 0}, "dim_batch must be an int at least 1"),
        ({"max_seq_len": 1}, "max_seq_len must be an int at least 2"),
        ({"skip_first": -1}, "skip_first must be an int at least 0"),
        ({"skip_first": 40}, r"every text is too short: .* more than skip_first \+ 1 = 41"),
    ):
        with pytest.raises(ValueError, match=message):
            _fit(model, **kwargs)
    with pytest.raises(ValueError, match=r"wrap one text in a list"):
        _fit(model, "one text")
    with pytest.raises(ValueError, match=r"texts\[1\] is int"):
        _fit(model, ["one", 2])
    with pytest.raises(TypeError, match="resume must be True or False"):
        _fit(model, resume="yes")
    with pytest.raises(TypeError, match="model must be a loaded model"):
        _fit("gpt2")
    with pytest.raises(IsADirectoryError, match="is a folder; give a file name in it"):
        _fit(model, checkpoint_path=Path(__file__).parent)


def test_a_half_precision_fit_warns_and_stays_near_the_float32_one(load_tiny, tiny_model_dirs):
    exact = _fit(load_tiny("llama"), TEXTS[:2])
    half = MuranoModel(tiny_model_dirs["llama"], dtype=torch.bfloat16)
    with pytest.warns(UserWarning, match="fitting in bfloat16: .* load the model in float32"):
        rough = _fit(half, TEXTS[:2])
    assert rough.metadata["fit_dtype"] == "bfloat16"
    for layer in exact.source_layers:
        error = (rough.jacobians[layer] - exact.jacobians[layer]).norm() / exact.jacobians[
            layer
        ].norm()
        assert 0 < float(error) < 0.05, float(error)


def _fail(*args, **kwargs):
    raise AssertionError("the model ran")


def test_fit_is_deterministic_resumable_and_interrupt_safe(load_tiny, tmp_path, monkeypatch):
    model = load_tiny("gpt2")
    straight = _fit(model)
    assert all(
        torch.equal(a, b)
        for a, b in zip(straight.jacobians.values(), _fit(model).jacobians.values(), strict=True)
    )
    checkpoint = tmp_path / "fit" / "checkpoint.pt"
    checkpoint.parent.mkdir()

    # Interrupted during the third text: the checkpoint holds the first two, whole.
    real, calls = jacobian_fit.prompt_jacobians, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(jacobian_fit, "prompt_jacobians", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _fit(model, checkpoint_path=checkpoint)
    assert sorted(p.name for p in checkpoint.parent.iterdir()) == ["checkpoint.pt"]
    partial = JacobianLens.load(checkpoint, model)  # the running mean of two texts
    first_two = _fit(model, TEXTS[:2])
    assert partial.n_prompts == 2
    for layer in first_two.source_layers:
        assert torch.equal(partial.jacobians[layer], first_two.jacobians[layer])
    assert all(p.requires_grad for p in model._hf_model.parameters())  # restored

    monkeypatch.setattr(jacobian_fit, "prompt_jacobians", real)
    resumed = _fit(model, checkpoint_path=checkpoint)
    for layer in straight.source_layers:
        assert torch.equal(resumed.jacobians[layer], straight.jacobians[layer])
    assert resumed.n_prompts == 4
    # Finished: the same call returns at once, without running the model.
    monkeypatch.setattr(jacobian_fit, "prompt_jacobians", _fail)
    again = _fit(model, checkpoint_path=checkpoint)
    assert torch.equal(again.jacobians[0], straight.jacobians[0])
    # Another run is refused, naming what changed.
    with pytest.raises(ValueError, match=r"from another fit: texts_sha256 was '[0-9a-f]{6}"):
        _fit(model, TEXTS[::-1], checkpoint_path=checkpoint)
    with pytest.raises(ValueError, match=r"dim_batch was 8, now 4"):
        _fit(model, checkpoint_path=checkpoint, dim_batch=4)
    # resume=False starts over.
    monkeypatch.setattr(jacobian_fit, "prompt_jacobians", real)
    over = _fit(model, TEXTS[:2], checkpoint_path=checkpoint, resume=False)
    assert JacobianLens.load(checkpoint).n_prompts == over.n_prompts == 2


def test_the_checkpoint_schema_loads_as_its_running_mean(tmp_path):
    generator = torch.Generator().manual_seed(3)
    sums = {layer: torch.randn(8, 8, generator=generator) for layer in (0, 1, 2)}
    payload = {
        "jacobian_sum": sums,
        "n_done": 4,
        "next_idx": 5,
        "source_layers": [0, 1, 2],
        "target_layer": 3,
        "skip_first": 16,
        "model_name": "tiny",
        "corpus": "toy",
    }
    torch.save(payload, tmp_path / "checkpoint.pt")
    lens = JacobianLens.load(tmp_path / "checkpoint.pt")
    for layer, total in sums.items():
        torch.testing.assert_close(lens.jacobians[layer], total / 4, rtol=0, atol=0)
    assert lens.n_prompts == 4 and lens.target_layer == 3
    assert lens.metadata["converted_from"] == "jacobian_lens_checkpoint"
    assert lens.metadata["model_name"] == "tiny" and lens.metadata["corpus"] == "toy"


# ---------------------------------------------------------------------------------------------
# Files


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_save_writes_the_reference_format_and_load_reads_it_back(load_tiny, tmp_path, dtype):
    model = load_tiny("llama")
    lens = _random_lens(model)
    file = lens.save(tmp_path / "sub" / "lens.pt", dtype=dtype)
    payload = torch.load(file, weights_only=True)
    assert set(payload) == {"J", "n_prompts", "source_layers", "d_model", "metadata"}
    assert payload["source_layers"] == [0, 1] and payload["d_model"] == 32
    assert payload["n_prompts"] == 4 and payload["metadata"] == {"note": "random"}
    assert all(m.dtype == dtype and m.shape == (32, 32) for m in payload["J"].values())
    loaded = JacobianLens.load(file, model)
    for layer, matrix in lens.jacobians.items():
        assert torch.equal(loaded.jacobians[layer], matrix.to(dtype).float())
    assert loaded.source == str(file) and loaded.metadata == lens.metadata
    assert file.stat().st_size < 2 * 32 * 32 * (2 if dtype == torch.float16 else 4) + 4000
    json.dumps(loaded.provenance)
    with pytest.raises(ValueError, match="beyond float16's range"):
        JacobianLens({0: torch.full((4, 4), 1e6)}, n_prompts=1).save(tmp_path / "x.pt")
    with pytest.raises(ValueError, match="dtype must be one of"):
        lens.save(tmp_path / "x.pt", dtype=torch.int8)


class _RunsCode:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_bad_files_get_clear_errors_naming_the_file(load_tiny, tmp_path):
    model = load_tiny("llama")
    good = _random_lens(model).save(tmp_path / "good.pt", dtype=torch.float32)

    def saved(name: str, payload) -> Path:
        path = tmp_path / name
        torch.save(payload, path)
        return path

    def artifact(**changes):
        payload = torch.load(good, weights_only=True)
        payload.update(changes)
        return payload

    eye = torch.eye(32)
    cases = [
        (saved("code.pt", {"J": _RunsCode()}), r"refused: loading it would import and call"),
        (saved("list.pt", [1, 2]), r"holds a list, not a Jacobian lens"),
        (saved("other.pt", {"weights": eye}), r"has 'weights', but neither 'J'"),
        (
            saved("nonsquare.pt", artifact(J={0: torch.zeros(32, 31), 1: eye})),
            r"\[0\] is \[32, 31\], not a square",
        ),
        (
            saved("widths.pt", artifact(J={0: eye, 1: torch.eye(16)})),
            r"\[1\] is \[16, 16\], but the other matrices are \[32, 32\]",
        ),
        (
            saved("dmodel.pt", artifact(d_model=64)),
            r"'d_model' is 64 but the matrices are \[32, 32\]",
        ),
        (
            saved("listed.pt", artifact(source_layers=[0, 1, 2])),
            r"'source_layers' lists \[0, 1, 2\] but the matrices are for layers \[0, 1\]",
        ),
        (
            saved("negative.pt", artifact(J={-1: eye})),
            r"has the key -1: layers must be ints from 0",
        ),
        (
            saved("nan.pt", artifact(J={0: eye * float("nan")}, source_layers=[0])),
            r"NaN or infinite values: the file is damaged",
        ),
        (saved("count.pt", artifact(n_prompts=-2)), r"'n_prompts' must be an int of at least 0"),
        (saved("empty_j.pt", artifact(J={})), r"must be a non-empty dict"),
        (
            saved("notensor.pt", artifact(J={0: [[1.0]]}, source_layers=[0])),
            r"\[0\] is a list, not a tensor",
        ),
        (
            saved("ckpt.pt", {"jacobian_sum": {0: eye}, "n_done": 0}),
            r"'n_done' must be a positive int",
        ),
        (
            saved("target.pt", artifact(metadata={"target_layer": 1})),
            r"'target_layer' is 1, but it must be an int above every source layer",
        ),
    ]
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    cases.append((truncated, "truncated or damaged"))
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    cases.append((empty, "is empty"))
    # Another model's lens: a wider one, a deeper one, one mapping to another block.
    cases.append(
        (
            JacobianLens({0: torch.eye(48)}, n_prompts=1).save(tmp_path / "wide.pt"),
            r"d_model=48 .* hidden size 32: it was fitted for another model",
        )
    )
    deep = JacobianLens({layer: eye for layer in range(4)}, n_prompts=1)
    cases.append((deep.save(tmp_path / "deep.pt"), r"layers \[2, 3\] belong to a deeper model"))
    shallow = JacobianLens({0: eye}, n_prompts=1, metadata={"target_layer": 1})
    cases.append(
        (
            shallow.save(tmp_path / "shallow.pt"),
            r"ends at block 2: it was fitted for a model of another depth",
        )
    )
    for path, message in cases:
        with pytest.raises(ValueError, match=message) as caught:
            JacobianLens.load(path, model)
        assert repr(str(path)) in str(caught.value), (path.name, str(caught.value))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        JacobianLens.load(tmp_path / "nowhere.pt", model)
    with pytest.raises(IsADirectoryError, match="is a folder"):
        JacobianLens.load(tmp_path, model)
    with pytest.raises(TypeError, match="model must be a loaded model"):
        JacobianLens.load(good, "gpt2")
    # Foreign metadata a weights-only reader cannot keep is dropped and named, never run.
    odd = saved("odd.pt", artifact(metadata={"ok": 1, "tensor": torch.zeros(2), 3: "x"}))
    assert JacobianLens.load(odd).metadata == {"ok": 1, "dropped_fields": ["tensor", "3"]}


def test_a_lens_path_where_a_lens_goes_says_how_to_load_it(load_tiny):
    with pytest.raises(TypeError, match=r"JacobianLens.load\('lens.pt', model\)"):
        LogitLens(load_tiny("gpt2"), lens="lens.pt")


# ---------------------------------------------------------------------------------------------
# Merging


def test_merge_is_the_prompt_weighted_mean(load_tiny):
    model = load_tiny("gpt2")
    shards = [_random_lens(model, seed=seed) for seed in (1, 2, 3)]
    for shard, n, sha in zip(shards, (1, 2, 5), ("a", "b", "c"), strict=True):
        shard.n_prompts = n
        shard.metadata.update({"model_name": "m", "texts_sha256": sha, "date": sha})
    merged = JacobianLens.merge(shards)
    assert merged.n_prompts == 8 and merged.source_layers == [0, 1]
    for layer in (0, 1):
        expected = (
            1 * shards[0].jacobians[layer].double()
            + 2 * shards[1].jacobians[layer].double()
            + 5 * shards[2].jacobians[layer].double()
        ) / 8
        torch.testing.assert_close(merged.jacobians[layer].double(), expected, rtol=1e-7, atol=1e-7)
    assert [s["texts_sha256"] for s in merged.metadata["merged_from"]] == ["a", "b", "c"]
    assert merged.metadata["model_name"] == "m" and "texts_sha256" not in merged.metadata

    odd = _random_lens(model, seed=4)
    odd.metadata["model_name"] = "other"
    with pytest.raises(ValueError, match=r"lenses\[1\] differs from lenses\[0\] in 'model_name'"):
        JacobianLens.merge([shards[0], odd])
    with pytest.raises(ValueError, match=r"lenses\[1\] has layers \[0\]"):
        JacobianLens.merge([shards[0], _random_lens(model, layers=[0])])
    shards[1].n_prompts = 0
    with pytest.raises(ValueError, match=r"lenses \[1\] were averaged over n_prompts=0"):
        JacobianLens.merge(shards)
    with pytest.raises(ValueError, match="at least one"):
        JacobianLens.merge([])
    with pytest.raises(TypeError, match=r"lenses\[1\] is str"):
        JacobianLens.merge([shards[0], "lens.pt"])


def test_shards_of_one_fit_merge_into_the_whole_fit(load_tiny):
    model = load_tiny("llama")
    whole = _fit(model)
    merged = JacobianLens.merge([_fit(model, TEXTS[:1]), _fit(model, TEXTS[1:])])
    assert merged.n_prompts == whole.n_prompts == 4
    for layer in whole.source_layers:
        torch.testing.assert_close(
            merged.jacobians[layer], whole.jacobians[layer], rtol=1e-6, atol=1e-6
        )


# ---------------------------------------------------------------------------------------------
# Published lenses by name


def _hub_layout(root: Path, lens: JacobianLens) -> Path:
    """A folder laid out like neuronpedia/jacobian-lens, holding a GPT-2 and a Llama lens."""
    entries = jacobian_hub.entries()
    lens.save(root / entries["gpt2-small"]["filename"])
    lens.save(root / entries["llama3.1-8b"]["filename"])
    return root


def test_the_registry_holds_the_published_lenses():
    published = jacobian_hub.entries()
    assert len(published) == 37
    assert len(jacobian_hub.registry()["revision"]) == 40
    assert {entry["repo_id"] for entry in published.values()} == {"neuronpedia/jacobian-lens"}
    assert jacobian_hub.lookup("gpt2")[0] == "gpt2-small"
    assert jacobian_hub.lookup("google/gemma-2-2b")[0] == "gemma-2-2b"
    assert jacobian_hub.lookup("Meta-Llama/Llama-3.1-8B")[0] == "llama3.1-8b"
    assert jacobian_hub.lookup("gpt-5") is None


def test_from_pretrained_reads_a_local_file_and_a_folder_laid_out_like_the_hub(load_tiny, tmp_path):
    model = load_tiny("gpt2")  # its folder is named "gpt2": the registry's alias of gpt2-small
    lens = _random_lens(model)
    root = _hub_layout(tmp_path / "jacobian-lens", lens)
    filename = jacobian_hub.entries()["gpt2-small"]["filename"]
    by_model = JacobianLens.from_pretrained(root, model=model)
    assert by_model.source == str(root / filename)
    assert torch.equal(by_model.jacobians[0], lens.jacobians[0].half().float())
    by_name = JacobianLens.from_pretrained(str(root), filename=filename)
    assert by_name.source == str(root / filename)
    single = tmp_path / "one"
    lens.save(single / "deep" / "x.pt")
    assert JacobianLens.from_pretrained(single).source == str(single / "deep" / "x.pt")
    assert JacobianLens.from_pretrained(single / "deep" / "x.pt").n_prompts == 4
    with pytest.raises(
        ValueError, match=r"holds 2 lens files: gpt2-small/.*choose one with filename="
    ):
        JacobianLens.from_pretrained(root)
    with pytest.raises(FileNotFoundError, match=r"has no 'nope.pt'; its lens files: gpt2-small/"):
        JacobianLens.from_pretrained(root, filename="nope.pt")
    with pytest.raises(FileNotFoundError, match="is not an existing file or folder"):
        JacobianLens.from_pretrained(tmp_path / "missing")
    with pytest.raises(ValueError, match=r"is a file: filename='x.pt' is for a folder"):
        JacobianLens.from_pretrained(single / "deep" / "x.pt", filename="x.pt")


def test_from_pretrained_offline_fails_at_once_naming_the_file_and_the_local_way(
    monkeypatch, tmp_path
):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    entry = jacobian_hub.entries()["gpt2-small"]
    revision = jacobian_hub.registry()["revision"]
    with pytest.raises(FileNotFoundError) as caught:
        JacobianLens.from_pretrained("openai-community/gpt2")
    message = str(caught.value)
    for part in ("neuronpedia/jacobian-lens", entry["filename"], revision, "HF_HUB_OFFLINE is set"):
        assert part in message, part
    assert f"JacobianLens.from_pretrained('DIR', filename={entry['filename']!r})" in message
    # Online in name only: the hub cannot be reached. Checked without a network call.
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr("murano_widgets.backends.loading.hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(FileNotFoundError, match="the Hugging Face hub cannot be reached"):
        JacobianLens.from_pretrained("gpt2", revision="main")
    with pytest.raises(ValueError, match=r"'gpt-5' is not a published Jacobian lens .*closest"):
        JacobianLens.from_pretrained("gpt-5")
    with pytest.raises(ValueError, match="give filename="):
        JacobianLens.from_pretrained("someone/some-repo")


def test_from_pretrained_takes_a_cached_hub_file_at_the_pinned_revision(
    load_tiny, monkeypatch, tmp_path
):
    """What hf_hub_download left in the Hugging Face cache loads offline, by name."""
    import huggingface_hub.constants

    model = load_tiny("gpt2")
    cache = tmp_path / "cache"
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    revision = jacobian_hub.registry()["revision"]
    filename = jacobian_hub.entries()["gpt2-small"]["filename"]
    snapshot = cache / "models--neuronpedia--jacobian-lens" / "snapshots" / revision
    _random_lens(model).save(snapshot / filename)
    lens = JacobianLens.from_pretrained("gpt2", model=model)
    assert lens.source == f"hf://neuronpedia/jacobian-lens/{filename}@{revision}"
    provenance = lens.provenance
    assert provenance["registry_name"] == "gpt2-small" and provenance["revision"] == revision
    assert provenance["corpus"] == "Salesforce-wikitext"


# ---------------------------------------------------------------------------------------------
# Everywhere a lens goes


def test_the_jacobian_lens_reaches_every_view(load_tiny, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from murano_widgets import compare_lenses, lens_dataset, show_logit_lens
    from murano_widgets.run import run_logit_lens

    model = load_tiny("gpt2")
    lens = _random_lens(model)
    widget = show_logit_lens(model, PROMPTS[:2], lens=lens)
    assert widget.payload.meta["lens_title"] == "Jacobian lens"
    assert "<title>Jacobian lens" in widget.save_html(tmp_path / "lens.html").read_text("utf-8")
    assert widget.result.plot(prompt=0).axes[0].get_title(loc="left").startswith("Jacobian lens")
    data = lens_dataset(
        model, ["one two", "Alice met"], [" three", " Bob"], lens=lens, progress=False
    )
    assert data.provenance["lens_kind"] == "jacobian"
    assert data.provenance["lens_provenance"]["n_prompts"] == 4
    both = compare_lenses(model, PROMPTS[:1], lens_b=lens)
    assert (
        bool(torch.isfinite(both.kl_a_to_b[:-1]).any())
        and float(both.kl_a_to_b[-1].nan_to_num().abs().max()) < 1e-6
    )
    generated = run_logit_lens(model, PROMPTS[:1], generate=3, lens=lens)
    assert generated.lens_kind == "jacobian" and len(generated.generated_texts) == 1


def test_a_chat_reads_through_the_jacobian_lens(tiny_model_dirs):
    """Chats too: the lens reads every token of the templated conversation, the template's own
    tokens and the reply's as well, and the last layer stays the model's own output."""
    from tiny_models import CHAT_TEMPLATE

    from murano_widgets.run import run_logit_lens

    model = MuranoModel(tiny_model_dirs["llama"])  # its own: the chat template is set on it
    model.tokenizer.chat_template = CHAT_TEMPLATE
    lens = _random_lens(model)
    chat = [{"role": "user", "content": "The capital of France is"}]
    jlens = run_logit_lens(model, chat=chat, generate=2, lens=lens)
    plain = run_logit_lens(model, chat=chat, generate=2)
    assert jlens.lens_kind == "jacobian" and "template" in set(jlens.token_roles[0])
    assert jlens.generated_texts == plain.generated_texts
    assert not torch.allclose(jlens.max_probs[0], plain.max_probs[0], equal_nan=True)
    torch.testing.assert_close(jlens.max_probs[-1], plain.max_probs[-1], equal_nan=True)


# ---------------------------------------------------------------------------------------------
# The shipped demo lens


@pytest.fixture(scope="module")
def demo():
    from murano_widgets import load_demo_jacobian_lens, load_demo_model

    model = load_demo_model()
    return model, load_demo_jacobian_lens(model)


def test_the_demo_lens_is_small_in_the_reference_format_and_checksummed(demo):
    import hashlib

    from murano_widgets.demo_model import DEMO_JACOBIAN_LENS_FILE, DEMO_JACOBIAN_LENS_PATH

    model, lens = demo
    files = {path.name for path in DEMO_JACOBIAN_LENS_PATH.iterdir()}
    assert files == {DEMO_JACOBIAN_LENS_FILE.name, "README.md", "provenance.json"}
    assert sum(path.stat().st_size for path in DEMO_JACOBIAN_LENS_PATH.iterdir()) < 400_000
    assert lens.source_layers == list(range(model.n_layers - 1)) and lens.d_model == 128
    payload = torch.load(DEMO_JACOBIAN_LENS_FILE, weights_only=True)
    assert all(m.dtype == torch.float16 for m in payload["J"].values())
    provenance = json.loads((DEMO_JACOBIAN_LENS_PATH / "provenance.json").read_text())
    digest = hashlib.sha256(DEMO_JACOBIAN_LENS_FILE.read_bytes()).hexdigest()
    assert provenance["sha256"] == digest
    assert provenance["n_prompts"] == lens.n_prompts > 0
    assert "model_name" not in lens.metadata  # this machine's folder: not the installed one
    assert lens.metadata["base_model"] == "murano_widgets/demo_model/toy-world"
    for key in ("texts_sha256", "skip_first_positions", "date", "seconds"):
        assert key in lens.metadata, key


@pytest.mark.slow
def test_the_demo_lens_card_numbers_reproduce(demo):
    from murano_widgets.demo_model import DEMO_JACOBIAN_LENS_PATH
    from murano_widgets.demo_model.fit_jacobian_lens import measure, parse_card

    model, lens = demo
    card = parse_card((DEMO_JACOBIAN_LENS_PATH / "README.md").read_text())
    measured = measure(lens)
    for kind in ("logit", "tuned", "jacobian"):
        for metric in ("kl", "top1"):
            assert len(card[kind][metric]) == model.n_layers
            for layer, value in enumerate(measured[kind][metric]):
                assert abs(value - card[kind][metric][layer]) <= 2e-4, (kind, metric, layer)
    # Three different readings below the last layer (the tuned lens trained on this KL), one
    # at the last: the model's own output.
    for layer in range(model.n_layers - 1):
        assert card["tuned"]["kl"][layer] < card["logit"]["kl"][layer]
        assert abs(card["jacobian"]["kl"][layer] - card["logit"]["kl"][layer]) > 1e-3
    assert all(card[kind]["top1"][-1] == 1.0 for kind in ("logit", "tuned", "jacobian"))


def test_warnings_are_not_raised_by_a_plain_fit(load_tiny):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _fit(load_tiny("llama"), TEXTS[:2])
