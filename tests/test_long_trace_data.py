"""Issue 51, the data side of long traces: a long result's payload keeps its string table to the
base sections' strings (the top-k's others follow with the details, equal to the one-table
payload's), and a long prompt's step unembeds its positions in chunks, never all at once."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from murano_widgets import RESID_POST, LogitLens, LogitLensResult, Node, PromptBatch
from murano_widgets.payload import long as long_payload
from murano_widgets.payload.codec import decode_sections
from murano_widgets.payload.lens import LensPayload
from murano_widgets.step import chunk_loop, reductions


def _result(n_layers: int = 3, n_positions: int = 40, vocab: int = 500, k: int = 4):
    """A random result whose top-k ids (uniform, as a model with random weights gives) hold many
    strings the top-1s do not."""
    generator = torch.Generator().manual_seed(0)
    cell = (n_layers, 1, n_positions)
    topk_tokens = torch.randint(0, vocab, (*cell, k), generator=generator)
    topk_probs = torch.rand(*cell, k, generator=generator).sort(dim=-1, descending=True).values
    input_ids = torch.randint(0, vocab, (1, n_positions), generator=generator)
    # Two ids share a string: the table holds distinct strings.
    words = {i: f" w{i}" if i != 7 else " w8" for i in range(vocab)}
    predicted = topk_tokens[..., 0]
    return LogitLensResult(
        all_probs=None,
        max_probs=topk_probs[..., 0],
        predicted_tokens=predicted,
        predicted_words=[[[words[int(t)] for t in row] for row in layer] for layer in predicted],
        input_words=[[words[int(t)] for t in row] for row in input_ids],
        attention_mask=torch.ones(1, n_positions, dtype=torch.long),
        addresses=[Node(i, RESID_POST) for i in range(n_layers)],
        topk_tokens=topk_tokens,
        topk_probs=topk_probs,
        entropy=torch.rand(cell, generator=generator),
        final_token_probs=torch.rand(cell, generator=generator),
        final_token_ranks=torch.randint(0, vocab, cell, generator=generator),
        kl_to_final=torch.rand(cell, generator=generator),
        final_tokens=predicted[-1],
        input_ids=input_ids,
        token_strings=words,
        vocab_size=vocab,
    )


def _decoded(payload: LensPayload) -> tuple[list[str], dict[str, np.ndarray]]:
    """The full string table (the base one and any continuation) and every section decoded."""
    arrays = long_payload.join_planes(decode_sections(payload.meta, payload.every_section()))
    table = list(payload.meta["tokens"])
    later = arrays.pop(long_payload.DETAIL_TOKENS, None)
    if later is not None:
        table += json.loads(bytes(later.astype(np.uint8)).decode())
    return table, arrays


def test_a_long_payload_sends_the_base_strings_first_and_the_same_details(monkeypatch):
    result = _result()
    eager = LensPayload.from_result(result)
    assert long_payload.DETAIL_TOKENS not in eager.arrays  # short: one table, as before
    monkeypatch.setattr(long_payload, "LONG_PAYLOAD_CELLS", 3 * 40 - 1)
    split = LensPayload.from_result(result)

    # The base table: exactly the distinct strings of the inputs, top-1s and final predictions.
    words = result.token_strings
    base_ids = torch.cat([result.predicted_tokens.flatten(), result.input_ids.flatten()])
    assert sorted(split.meta["tokens"]) == sorted({words[int(i)] for i in base_ids})
    base = split.base_sections()
    assert long_payload.DETAIL_TOKENS not in base
    assert long_payload.DETAIL_TOKENS in split.meta["detail_sections"]

    # Every section reads as the one-table payload's: the token sections as strings.
    eager_table, eager_arrays = _decoded(eager)
    split_table, split_arrays = _decoded(split)
    assert set(split_arrays) == set(eager_arrays)
    for name, values in eager_arrays.items():
        if name in ("input_ids", "final_tokens", "predicted_tokens", "topk_tokens"):
            want = np.array(eager_table)[values.astype(int)]
            np.testing.assert_array_equal(
                np.array(split_table)[split_arrays[name].astype(int)], want
            )
        else:
            np.testing.assert_array_equal(split_arrays[name], values, err_msg=name)
    # And the top-k strings are the result's own (an independent read of its ids).
    topk = np.array(split_table)[split_arrays["topk_tokens"].astype(int)]
    want = np.vectorize(words.get)(result.topk_tokens[:, 0, :, 1:].numpy())
    np.testing.assert_array_equal(topk, want)


def test_token_sections_take_the_narrowest_index_type_their_own_indices_need():
    arrays = {
        "predicted_tokens": np.array([[3, 65535]], dtype=np.uint32),
        "1/topk_tokens": np.array([[[65536]]], dtype=np.uint32),
        "max_probs": np.array([[1, 2]], dtype=np.uint32),
    }
    long_payload.narrow_token_sections(arrays)
    assert arrays["predicted_tokens"].dtype == np.uint16
    assert arrays["1/topk_tokens"].dtype == np.uint16  # its low bits, and a high plane
    assert arrays["1/topk_tokens" + long_payload.HIGH].tolist() == [[[1]]]
    assert arrays["max_probs"].dtype == np.uint32  # not a token section


@pytest.mark.parametrize("arch", ["llama"])
def test_a_long_prompt_is_unembedded_in_chunks_of_positions(load_tiny, monkeypatch, arch):
    """One prompt: its positions are cut in chunks under the byte budget, and no [rows, vocab]
    buffer is larger than one chunk's rows for each layer (the layers of a chunk are unembedded
    as one block), far from [n_layers x seq x vocab]; the fields equal an unchunked run's."""
    model = load_tiny(arch)
    vocab = int(model.vocab_size)
    prompt = " ".join(["The Eiffel Tower is in the city of Paris."] * 10)
    whole = LogitLens(model, layers="all")({"prompts": PromptBatch([prompt])})["logit_lens"]
    n_positions = int(whole.attention_mask.sum())
    rows_budget = 16
    budget = 4 * vocab * rows_budget
    seen: list[slice] = []
    biggest: list[int] = []

    def recording_chunks(max_bytes, vocab_size, n_rows):
        for chunk in reductions.chunks(max_bytes, vocab_size, n_rows):
            seen.append(chunk)
            yield chunk

    real_get = reductions.Buffers.get

    def recording_get(self, role, rows, *args, **kwargs):
        biggest.append(rows)
        return real_get(self, role, rows, *args, **kwargs)

    monkeypatch.setattr(chunk_loop, "chunks", recording_chunks)
    monkeypatch.setattr(reductions.Buffers, "get", recording_get)
    step = LogitLens(model, layers="all", max_chunk_bytes=budget)
    chunked = step({"prompts": PromptBatch([prompt])})["logit_lens"]
    assert n_positions > 4 * rows_budget
    assert len(seen) >= n_positions // rows_budget  # one prompt, cut by positions
    assert max(c.stop - c.start for c in seen) <= rows_budget
    assert max(biggest) <= rows_budget * len(whole.layers) < n_positions * len(whole.layers) / 4
    for name in ("max_probs", "entropy", "kl_to_final", "topk_probs", "final_token_ranks"):
        torch.testing.assert_close(getattr(chunked, name), getattr(whole, name), equal_nan=True)
    torch.testing.assert_close(chunked.topk_tokens, whole.topk_tokens)


def test_indices_past_65535_strings_take_three_bytes_and_read_back():
    indices = np.array([[0, 65535, 65536, 128_255]], dtype=np.uint32)
    arrays = {"predicted_tokens": indices.copy()}
    long_payload.narrow_token_sections(arrays)
    assert arrays["predicted_tokens"].dtype == np.uint16
    assert arrays["predicted_tokens" + long_payload.HIGH].dtype == np.uint8
    np.testing.assert_array_equal(long_payload.join_planes(arrays)["predicted_tokens"], indices)


def test_a_long_widget_sends_the_top_k_by_blocks_equal_to_the_eager_top_k(monkeypatch):
    from murano_widgets import LogitLensWidget
    from murano_widgets.payload import lens as lens_payload

    result = _result(n_positions=40)
    eager_table, eager = _decoded(LensPayload.from_result(result))
    monkeypatch.setattr(long_payload, "LONG_PAYLOAD_CELLS", 3 * 40 - 1)
    monkeypatch.setattr(lens_payload, "TOPK_WINDOW", 16)
    widget = LogitLensWidget(result)
    sent: list[tuple[dict, list]] = []
    monkeypatch.setattr(
        widget, "send", lambda content, buffers=None: sent.append((content, buffers))
    )
    widget._details = True
    assert widget._meta["topk_window"] == 16
    assert not {"topk_tokens", "topk_probs", "detail_tokens"} & set(widget._sections)
    assert "entropy" in widget._sections  # the metrics still come whole: the grid paints them

    tokens, probs = [], []
    for start in (0, 16, 32):
        widget._on_message(widget, {"action": "topk_window", "start": start}, [])
        message, buffers = sent.pop()
        assert (message["start"], message["stop"]) == (start, min(start + 16, 40))
        block = decode_sections(
            {"sections": message["sections"]}, dict(zip(message["names"], buffers, strict=True))
        )
        tokens.append(np.array(message["strings"])[block["topk_tokens"].astype(int)])
        probs.append(block["topk_probs"])
    want = np.array(eager_table)[eager["topk_tokens"].astype(int)]
    np.testing.assert_array_equal(np.concatenate(tokens, axis=1), want)
    np.testing.assert_array_equal(np.concatenate(probs, axis=1), eager["topk_probs"])

    # A start that is no block's first position is refused, naming what is allowed.
    widget._on_message(widget, {"action": "topk_window", "start": 5}, [])
    assert "start must be a multiple of 16 in [0, 40), got 5" in sent.pop()[0]["error"]
    # The export holds the whole top-k (one offline file, no kernel to ask).
    state = widget._standalone_state()
    assert {"topk_tokens", "topk_probs", "detail_tokens"} <= set(state["_sections"])
