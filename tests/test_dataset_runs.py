"""A data set's folder knows which run wrote it (issue 37): a shard of another run (another
model, other weights of the same config, dtype, lens or lens contents, layers, options, answers,
foils, batching) is refused by ``LensDataset.load`` and by a resumed ``lens_dataset(..., path=)``
alike, with one message naming the file and what differs, before any model work and without
writing anything; and the weights' fingerprint that tells models apart is cheap and stable.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil

import numpy as np
import pytest
import torch

from murano_widgets import LensDataset, LogitLens, MuranoModel, TunedLens, lens_dataset
from murano_widgets.dataset.io import FINGERPRINT_SAMPLE, _torch_module, tensors_fingerprint
from murano_widgets.dataset.shards import read_shard
from murano_widgets.demo_model.corpus import eval_prompts

EVAL = eval_prompts()
N = 40
PROMPTS = [EVAL[i].prompt for i in range(N)]
ANSWERS = [EVAL[i].answer for i in range(N)]
FOILS = [" the" if i % 2 else " a" for i in range(N)]
#: Small batches: one window of several batches, so that a foreign shard has neighbours.
BASE = {"batch_tokens": 64, "progress": False}
SHARD = "w0000000-b0001.npz"


def _perturbed(tiny_model_dirs):
    """The tiny GPT-2 again, with other weights (the same config): one matrix scaled, as a
    fine-tune changes every entry of it."""
    model = MuranoModel(tiny_model_dirs["gpt2"])
    module = _torch_module(model)
    with torch.no_grad():
        next(p for p in module.parameters() if p.dim() == 2).mul_(1.01)
    return model


def _edited_lens(model):
    """A tuned lens of the same kind and provenance as ``TunedLens.identity(model)``, other
    contents."""
    base = TunedLens.identity(model)
    return TunedLens(base.weight + 0.01, base.bias, dict(base.config), dict(base.provenance))


# Each case: (what differs, the other run's model and options, what the message names). The
# run that owns the folder is the tiny GPT-2 with the logit lens, all layers, BASE's batching,
# ANSWERS; the foils case decomposes in both runs.
CASES = {
    "model": (lambda m, d: (m("llama"), {}), r"model\.model_name is .*llama.*the run's .*gpt2"),
    "weights": (
        lambda m, d: (_perturbed(d), {}),
        r"model\.weights_fingerprint is \"[0-9a-f]{8}",
    ),
    "dtype": (
        lambda m, d: (MuranoModel(d["gpt2"], dtype=torch.float64), {}),
        r"model\.dtype is \"float64\", the run's \"float32\"",
    ),
    "lens": (
        lambda m, d: (m("gpt2"), {"lens": TunedLens.identity(m("gpt2"))}),
        r"model\.lens_kind is \"tuned\", the run's \"logit\"",
    ),
    "layers": (lambda m, d: (m("gpt2"), {"layers": [0, 1]}), r"model\.layers is \[0, 1\]"),
    "options": (lambda m, d: (m("gpt2"), {"variants": True}), r"variants is true, the run's false"),
    "batching": (
        lambda m, d: (m("gpt2"), {"batch_tokens": 128}),
        r"batch_tokens is 128, the run's 64",
    ),
    "answers": (
        lambda m, d: (m("gpt2"), {"answers": [" Paris"] * N}),
        rf"{SHARD} was written by another run: its answers differ from those of window 0's",
    ),
}


def _run(model, folder, answers=ANSWERS, **options):
    return lens_dataset(model, PROMPTS, answers, path=folder, **{**BASE, **options})


def _contents(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _assert_refused_by_load_and_resume(folder, resume, match, monkeypatch):
    """``load`` and a resumed run both refuse the folder with the same message, naming the
    shard; the resumed run before any model work and writing nothing."""
    before = _contents(folder)
    with pytest.raises(ValueError, match=match) as loaded:
        LensDataset.load(folder)
    assert SHARD in str(loaded.value)
    with monkeypatch.context() as patch:
        patch.setattr(LogitLens, "run", lambda *a, **k: pytest.fail("the model ran"))
        with pytest.raises(ValueError, match=match) as resumed:
            resume()
    assert str(resumed.value) == str(loaded.value), "load and resume apply one check"
    assert _contents(folder) == before, "nothing was written"


@pytest.mark.parametrize("case", list(CASES))
def test_a_shard_of_another_run_is_refused_by_load_and_resume(
    case, load_tiny, tiny_model_dirs, tmp_path, monkeypatch
):
    other, match = CASES[case]
    model = load_tiny("gpt2")
    mine = tmp_path / "mine"
    data = _run(model, mine)
    assert SHARD in _contents(mine), "test precondition: the window has several batches"
    # The untouched folder reads back, and resumes, as the run it is.
    np.testing.assert_array_equal(LensDataset.load(mine).entropy, data.entropy)
    other_model, options = other(load_tiny, tiny_model_dirs)
    _run(other_model, tmp_path / "theirs", **options)
    shutil.copyfile(tmp_path / "theirs" / SHARD, mine / SHARD)
    _assert_refused_by_load_and_resume(mine, lambda: _run(model, mine), match, monkeypatch)


def test_a_shard_with_other_foils_or_lens_contents_is_refused(load_tiny, tmp_path, monkeypatch):
    model = load_tiny("gpt2")
    decompose = {"decompose": True}
    mine = tmp_path / "foils"
    lens_dataset(model, PROMPTS, ANSWERS, foils=FOILS, path=mine, **BASE, **decompose)
    other = [" an"] * N
    lens_dataset(model, PROMPTS, ANSWERS, foils=other, path=tmp_path / "t1", **BASE, **decompose)
    shutil.copyfile(tmp_path / "t1" / SHARD, mine / SHARD)
    _assert_refused_by_load_and_resume(
        mine,
        lambda: lens_dataset(model, PROMPTS, ANSWERS, foils=FOILS, path=mine, **BASE, **decompose),
        rf"{SHARD} was written by another run: its foils differ",
        monkeypatch,
    )

    # Two tuned lenses of one kind and provenance, other weights: told apart by contents.
    lens = TunedLens.identity(model)
    mine = tmp_path / "lens"
    _run(model, mine, lens=lens)
    _run(model, tmp_path / "t2", lens=_edited_lens(model))
    shutil.copyfile(tmp_path / "t2" / SHARD, mine / SHARD)
    _assert_refused_by_load_and_resume(
        mine,
        lambda: _run(model, mine, lens=lens),
        r"model\.lens_fingerprint is \"[0-9a-f]{8}.*the run's \"[0-9a-f]{8}",
        monkeypatch,
    )


def _rewrite_meta(path, change):
    """A shard with its ``meta`` entry changed by ``change(meta)`` (its arrays kept)."""
    shard = read_shard(path)
    meta = shard["meta"]
    change(meta)
    arrays = dict(shard["arrays"])
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    path.write_bytes(buffer.getvalue())


def test_renamed_old_and_edited_shards_are_refused(load_tiny, tmp_path, monkeypatch):
    model = load_tiny("gpt2")
    mine = tmp_path / "r"
    _run(model, mine)
    pristine = _contents(mine)

    def restore():
        for name, data in pristine.items():
            (mine / name).write_bytes(data)

    # Another batch of the same run under this batch's name.
    shutil.copyfile(mine / "w0000000-b0002.npz", mine / SHARD)
    _assert_refused_by_load_and_resume(
        mine,
        lambda: _run(model, mine),
        rf"{SHARD} is named window 0's batch 1 but holds",
        monkeypatch,
    )
    restore()
    # A shard that does not record its run (as shards did before run format 2).
    _rewrite_meta(mine / SHARD, lambda meta: meta.pop("run"))
    _assert_refused_by_load_and_resume(
        mine, lambda: _run(model, mine), rf"{SHARD} does not record the run", monkeypatch
    )
    restore()
    # A shard's answer text edited (its recorded hashes kept): load reads the texts and
    # finds they are not those the shards record.
    _rewrite_meta(mine / SHARD, lambda meta: meta["answers"]["answer"].__setitem__(0, [" Oslo"]))
    with pytest.raises(ValueError, match=r"record answers other than those they hold"):
        LensDataset.load(mine)
    restore()
    # A shard past the run's windows.
    shutil.copyfile(mine / SHARD, mine / "w0000005-b0000.npz")
    with pytest.raises(ValueError, match=r"w0000005-b0000.npz lies past the run's 1 windows"):
        LensDataset.load(mine)
    (mine / "w0000005-b0000.npz").unlink()
    assert LensDataset.load(mine).n_prompts == N


# ---------------------------------------------------------------------------------------------
# The weights' fingerprint


def test_the_fingerprint_is_the_sha256_of_names_shapes_and_sampled_bytes():
    small = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    expected = hashlib.sha256(b"k" + b"a:torch.float32:(2, 3);" + small.numpy().tobytes())
    assert tensors_fingerprint([("a", small)], "k") == expected.hexdigest()
    # A large tensor: FINGERPRINT_SAMPLE elements at evenly spaced integer places.
    big = torch.randn(FINGERPRINT_SAMPLE * 3 + 7, generator=torch.Generator().manual_seed(0))
    n = big.numel()
    places = [i * (n - 1) // (FINGERPRINT_SAMPLE - 1) for i in range(FINGERPRINT_SAMPLE)]
    sample = big.numpy()[places]
    assert places[0] == 0 and places[-1] == n - 1
    expected = hashlib.sha256(b"" + f"b:torch.float32:({n},);".encode() + sample.tobytes())
    assert tensors_fingerprint([("b", big)]) == expected.hexdigest()
    # bfloat16 (no numpy type) is fingerprinted by its bytes; a meta tensor has none.
    half = small.to(torch.bfloat16)
    expected = hashlib.sha256(
        b"c:torch.bfloat16:(2, 3);" + half.view(torch.int16).numpy().tobytes()
    )
    assert tensors_fingerprint([("c", half)]) == expected.hexdigest()
    assert tensors_fingerprint([("m", torch.empty(3, device="meta"))]) is None


def test_the_fingerprint_tells_weights_apart_and_stays_the_same(load_tiny, tiny_model_dirs):
    from murano_widgets.dataset.io import _weights_fingerprint

    module = _torch_module(load_tiny("gpt2"))
    first = _weights_fingerprint(module)
    assert _weights_fingerprint(module) == first
    again = _torch_module(MuranoModel(tiny_model_dirs["gpt2"]))
    assert _weights_fingerprint(again) == first, "the same weights loaded again"
    embedding = again.get_input_embeddings().weight
    assert embedding.shape[0] <= FINGERPRINT_SAMPLE, "test precondition: a row each sampled"
    with torch.no_grad():
        # One row edited (a token's embedding): every row has an element in the sample.
        embedding[embedding.shape[0] // 3] += 0.5
    assert _weights_fingerprint(again) != first
