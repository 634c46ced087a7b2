"""Benchmark: bytes the widget sends per heatmap cell, against plain JSON of the same data.

A synthetic 80-layer result (two prompts of 1,000 tokens, a 50k-token vocabulary, top-5) goes
through the real ``LogitLensWidget``; it prints the bytes per cell of the default view (top-1
token and probability), with the top-5 sections added, with every detail section, the string
table, and what nested JSON lists of floats and strings would cost instead; then the same result
three times over as lenses side by side (``LensResults``), per cell of each lens (one lens must
cost what it does alone: the per-position sections are sent once).

Usage::

    python bench/payload_size.py
    python bench/payload_size.py --layers 12 --positions 256 --prompts 16
    PYTHONPATH=. python bench/payload_size.py --long   # one prompt, 32 x 16,384 and 80 x 10,000
"""

from __future__ import annotations

import argparse
import json


def synthetic_result(
    n_layers: int,
    n_prompts: int,
    n_positions: int,
    vocab_size: int = 50_000,
    k: int = 5,
    uniform: bool = False,
):
    """A result of the given size with random (but valid) fields; no model is run.

    ``uniform``: top-k ids drawn uniformly from the vocabulary (a model with random weights:
    the worst case for the string table) instead of Zipf-like ones.
    """
    import torch

    from murano_widgets import RESID_POST, LogitLensResult, Node

    generator = torch.Generator().manual_seed(0)
    cell = (n_layers, n_prompts, n_positions)
    # Zipf-like ids: a real lens repeats frequent tokens, so the string table is much smaller
    # than cells x k; uniform ids would be the worst case for the table only.
    ranks = torch.randint(1, vocab_size, (*cell, k), generator=generator)
    topk_tokens = (vocab_size / ranks).long().clamp_max(vocab_size - 1)
    if uniform:
        topk_tokens = torch.randint(0, vocab_size, (*cell, k), generator=generator)
    topk_probs = torch.rand(*cell, k, generator=generator).sort(dim=-1, descending=True).values
    input_ids = torch.randint(0, vocab_size, (n_prompts, n_positions), generator=generator)
    ids = torch.cat([topk_tokens.flatten(), input_ids.flatten()]).unique().tolist()
    words = {i: f" word{i}" for i in ids}
    predicted = topk_tokens[..., 0]
    nested = [[[words[int(t)] for t in row] for row in layer] for layer in predicted.tolist()]
    return LogitLensResult(
        all_probs=None,
        max_probs=topk_probs[..., 0],
        predicted_tokens=predicted,
        predicted_words=nested,
        input_words=[[words[int(t)] for t in row] for row in input_ids.tolist()],
        attention_mask=torch.ones(n_prompts, n_positions, dtype=torch.long),
        addresses=[Node(i, RESID_POST) for i in range(n_layers)],
        topk_tokens=topk_tokens,
        topk_probs=topk_probs,
        entropy=torch.rand(cell, generator=generator) * 10,
        final_token_probs=torch.rand(cell, generator=generator),
        final_token_ranks=torch.randint(0, vocab_size, cell, generator=generator),
        kl_to_final=torch.rand(cell, generator=generator) * 5,
        final_tokens=predicted[-1],
        input_ids=input_ids,
        token_strings=words,
        vocab_size=vocab_size,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=80)
    parser.add_argument("--positions", type=int, default=1000)
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument(
        "--long",
        action="store_true",
        help="one prompt at 32 x 16,384 and 80 x 10,000 (issue 51's targets) instead",
    )
    args = parser.parse_args()
    if args.long:
        long_prompts()
        return

    from murano_widgets import LogitLensWidget

    result = synthetic_result(args.layers, args.prompts, args.positions)
    widget = LogitLensWidget(result)
    cells = args.layers * args.prompts * args.positions

    def per_cell(names: list[str]) -> float:
        sizes = widget.payload_nbytes()
        return sum(sizes.get(name, 0) for name in names) / cells

    base = per_cell(["predicted_tokens", "max_probs"])
    per_position = per_cell(["input_ids", "final_tokens"])
    table = widget.payload_nbytes()["tokens_table"]
    widget._details = True
    topk = per_cell(["predicted_tokens", "max_probs", "topk_tokens", "topk_probs"])
    everything = per_cell([n for n in widget.payload_nbytes() if n != "tokens_table"])

    # The naive alternative: nested JSON lists of top-1 probability and token text per cell.
    probs = result.max_probs.tolist()
    words = result.predicted_words
    naive = len(json.dumps({"probs": probs, "words": words}).encode()) / cells
    naive_top5 = naive + len(json.dumps(result.topk_probs.tolist()).encode()) / cells

    print(
        f"{args.layers} layers x {args.prompts} prompts x {args.positions} positions = {cells:,} cells"
    )
    print(f"string table: {len(widget._meta['tokens']):,} strings, {table / 1e3:.0f} kB of JSON")
    print(f"{'view':<32} {'bytes/cell':>10} {'target':>8} {'naive JSON':>11} {'ratio':>6}")
    print(
        f"{'default (top-1 token + prob)':<32} {base:10.2f} {'<= 6':>8} {naive:11.1f} {naive / base:5.1f}x"
    )
    # Issue 4 set 16 bytes with top-5 when its probabilities were uint8; issue 21 made them uint16
    # (a uint8 top-k printed 0.023374 as "2.35%" beside the same number's "2.34%"): 4 + 4 x (2 + 2).
    print(
        f"{'with top-5':<32} {topk:10.2f} {'<= 20':>8} {naive_top5:11.1f} {naive_top5 / topk:5.1f}x"
    )
    print(f"{'all sections (+ metrics)':<32} {everything:10.2f} {'':>8}")
    print(f"{'per-position arrays (amortised)':<32} {per_position:10.2f}")

    # Three lenses side by side (the same numbers under three names: the bytes are the same as
    # for three different lenses of this size). Per cell of one lens, all lenses' sections.
    from murano_widgets import LensResults

    lenses = LogitLensWidget(LensResults({"logit": result, "tuned": result, "jacobian": result}))
    sizes = lenses.payload_nbytes()
    prefixes = ["", "1/", "2/"]
    three = sum(sizes.get(p + n, 0) for p in prefixes for n in ("predicted_tokens", "max_probs"))
    lenses._details = True
    sizes = lenses.payload_nbytes()
    three_all = sum(v for n, v in sizes.items() if n != "tokens_table") / cells
    print(
        f"{'three lenses, default, per lens':<32} {three / cells / 3:10.2f} {'= 1 lens':>8}"
        f"   (all three: {three / cells:.2f}; every section: {three_all:.2f})"
    )


def long_prompts() -> None:
    """Issue 51's shapes: one long prompt, a Llama-3 vocabulary (128,256), top-5; Zipf-like
    top-k ids and uniform ones (random weights: the top-1s alone cover the vocabulary, the worst
    case for the table). Target: the state before any hover <= 6 bytes a cell plus the strings,
    and the string table not growing with cells x k. Printed: the base state a cell and its
    table; the detail sections a live widget syncs on the first hover (the metrics: the top-k
    comes by blocks); one block of top-k (its bytes and strings); an export's sections a cell."""
    from murano_widgets import LogitLensWidget
    from murano_widgets.payload.long import topk_window

    print(
        f"{'shape':<14} {'top-k ids':<8} {'base B/cell':>11} {'table kB':>9} {'strings':>8}"
        f" {'+details':>9} {'block kB':>9} {'export B/cell':>14}"
    )
    for n_layers, n_positions in ((32, 16_384), (80, 10_000)):
        for uniform in (False, True):
            result = synthetic_result(n_layers, 1, n_positions, 128_256, uniform=uniform)
            widget = LogitLensWidget(result)
            cells = n_layers * n_positions
            sizes = widget.payload_nbytes()
            base = sum(v for n, v in sizes.items() if n != "tokens_table") / cells
            widget._details = True
            details = sum(v for n, v in widget.payload_nbytes().items() if n != "tokens_table")
            message, buffers = topk_window(widget._payload, 0)
            block = sum(map(len, buffers)) + len(json.dumps(message["strings"]).encode())
            export = sum(map(len, widget._payload.every_section().values()))
            print(
                f"{n_layers} x {n_positions:<8,} {'uniform' if uniform else 'Zipf':<8} "
                f"{base:11.2f} {sizes['tokens_table'] / 1e3:9.0f} {len(widget._meta['tokens']):8,}"
                f" {details / cells:9.2f} {block / 1e3:9.0f} {export / cells:14.2f}"
            )
    print("target: base <= 6 bytes a cell plus the strings")


if __name__ == "__main__":
    main()
