"""Issue 51: a long live widget's top-k comes by blocks of positions. Scrolled to the end of a
long prompt, hovering a cell asks Python for its block; the tooltip then shows the same top-k as
the result holds."""

from __future__ import annotations

import torch
from harness import Bridge, encode

from murano_widgets import RESID_POST, LogitLensResult, LogitLensWidget, Node
from murano_widgets.payload import lens as lens_payload
from murano_widgets.payload import long as long_payload

LAYERS, POSITIONS, VOCAB, K = 3, 200, 500, 4


def long_result() -> LogitLensResult:
    """Random top-k ids (uniform, as random weights give), each string its id's."""
    generator = torch.Generator().manual_seed(1)
    cell = (LAYERS, 1, POSITIONS)
    topk_tokens = torch.randint(0, VOCAB, (*cell, K), generator=generator)
    topk_probs = torch.rand(*cell, K, generator=generator).sort(dim=-1, descending=True).values
    input_ids = torch.randint(0, VOCAB, (1, POSITIONS), generator=generator)
    words = {i: f"tok{i}" for i in range(VOCAB)}
    predicted = topk_tokens[..., 0]
    return LogitLensResult(
        all_probs=None,
        max_probs=topk_probs[..., 0],
        predicted_tokens=predicted,
        predicted_words=[[[words[int(t)] for t in row] for row in layer] for layer in predicted],
        input_words=[[words[int(t)] for t in row] for row in input_ids],
        attention_mask=torch.ones(1, POSITIONS, dtype=torch.long),
        addresses=[Node(i, RESID_POST) for i in range(LAYERS)],
        topk_tokens=topk_tokens,
        topk_probs=topk_probs,
        entropy=torch.rand(cell, generator=generator),
        final_tokens=predicted[-1],
        input_ids=input_ids,
        token_strings=words,
        vocab_size=VOCAB,
    )


def test_hovering_a_cell_out_of_the_first_view_fetches_its_top_k_block(page, monkeypatch):
    monkeypatch.setattr(long_payload, "LONG_PAYLOAD_CELLS", LAYERS * POSITIONS - 1)
    monkeypatch.setattr(lens_payload, "TOPK_WINDOW", 16)
    result = long_result()
    widget = LogitLensWidget(result)
    replies: list[tuple[dict, list]] = []
    monkeypatch.setattr(
        widget, "send", lambda content, buffers=None: replies.append((content, buffers or []))
    )
    bridge = Bridge(page, widget)
    page.evaluate("() => { document.querySelector('.murano-scroll').scrollLeft = 1e9; }")
    bridge.wait_frames()
    position = POSITIONS - 3
    x, y = bridge.cell_center(1, position)
    page.mouse.move(x, y)
    bridge.wait_frames()
    bridge.sync()  # the other detail sections (asked for by the hover, as before)
    asked = page.evaluate("() => window.model.messages")
    assert asked == [{"action": "topk_window", "start": position - position % 16}]
    assert "Loading details…" in page.inner_text(".murano-tooltip")

    # The kernel's side answers; its reply goes back to the page with its buffers.
    widget._on_message(widget, asked[0], [])
    content, buffers = replies.pop()
    page.evaluate("([c, b]) => window.model.reply(c, b)", [content, [encode(b) for b in buffers]])
    bridge.wait_frames()
    tip = page.inner_text(".murano-tooltip")
    assert "Loading" not in tip
    want = [result.token_strings[int(t)] for t in result.topk_tokens[1, 0, position]]
    shown = [entry["token"] for entry in bridge.debug(f"cellDetails(1, {position})")["top"]]
    assert shown == want
    for word in want:
        assert word in tip
    # Hovering another cell of the same block asks nothing more.
    x, y = bridge.cell_center(2, position + 1)
    page.mouse.move(x, y)
    bridge.wait_frames()
    assert len(page.evaluate("() => window.model.messages")) == 1
