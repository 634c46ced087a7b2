"""Benchmark: the lens over generated text, in two passes or inside generation, side by side.

``show_logit_lens(model, prompts, generate=N)`` generates, then runs the lens step once over
prompt + generated tokens (two passes). The other way is the lens inside generation: save every
layer's block output at every generation step, and reduce those. Both need the same reduction
(final norm, unembedding, softmax, top-k, ...) over the same positions afterwards, so what
differs is what each adds to plain generation:

- ``transformers``: the Hugging Face model's own ``generate`` (same weights, no nnsight), for
  scale;
- ``generate``: nnsight's ``generate`` alone (greedy, ``N`` new tokens);
- ``generate+save``: the same, saving each block's output at every step (``tracer.iter[:]``):
  the lens inside generation, before its reduction;
- ``forward``: one traced forward pass over prompt + generated tokens saving each block's
  output: what the two-pass way adds to generation, before the same reduction;
- ``two-pass (whole)``: ``run_logit_lens(model, prompts, generate=N)`` end to end, reduction
  included, for scale.

On a random model with GPT-2 small's shape (bench/logit_lens.py's), one process alternates the
runs round by round and prints medians and the two overheads' ratio. Usage::

    python bench/generation.py --rounds 3 [--shape 4x32] [--new 32] [--backend nnsight]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from logit_lens import build_model, prompts_for, time_alternating


def generate_saving(model, inputs: dict, new_tokens: int) -> list:
    """nnsight's generate, saving every block output at every step (the lens inside it)."""
    import nnsight
    import torch

    lm = model._nnsight_model()
    saved: list = []
    with (  # noqa: SIM117
        torch.inference_mode(),
        lm.generate(dict(inputs), max_new_tokens=new_tokens, do_sample=False) as tracer,
    ):
        # nnsight reads this block's source: the loop over steps stays a block of its own.
        with tracer.iter[:]:
            for index in range(model.n_layers):
                saved.append(nnsight.save(model.layer(index)))
    return saved


def forward_saving(model, ids) -> list:
    """One traced forward pass over ``ids`` saving every block output (the two-pass way's
    second pass, before its reduction)."""
    import nnsight
    import torch

    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    saved: list = []
    with torch.inference_mode(), model.trace(inputs, use_cache=False):
        for index in range(model.n_layers):
            saved.append(nnsight.save(model.layer(index)))
    return saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shape", default="4x32", help="prompts x tokens, all of one length")
    parser.add_argument("--new", type=int, default=32, help="tokens to generate")
    parser.add_argument("--backend", default="auto")
    args = parser.parse_args()

    import torch

    from murano_widgets import MuranoModel
    from murano_widgets.run import run_logit_lens

    torch.set_grad_enabled(False)
    with tempfile.TemporaryDirectory() as folder:
        build_model(Path(folder))
        model = MuranoModel(folder, dtype=torch.float32, backend=args.backend)
        prompts = prompts_for(args.shape)
        ids = torch.tensor(model.tokenizer(prompts)["input_ids"])
        inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        generated = model.generate(
            inputs, max_new_tokens=args.new, do_sample=False, pad_token_id=0
        ).cpu()
        # The random model never says end of sequence: every prompt gets all its new tokens.
        assert generated.shape[1] == ids.shape[1] + args.new
        from murano_widgets.generation import _hf_model

        hf_model = _hf_model(model)
        runs = {
            "transformers": lambda: hf_model.generate(
                **inputs, max_new_tokens=args.new, do_sample=False, pad_token_id=0
            ),
            "generate": lambda: model.generate(
                inputs, max_new_tokens=args.new, do_sample=False, pad_token_id=0
            ),
            "generate+save": lambda: generate_saving(model, inputs, args.new),
            "forward": lambda: forward_saving(model, generated),
            "two-pass (whole)": lambda: run_logit_lens(model, prompts, generate=args.new),
        }
        saved = generate_saving(model, inputs, args.new)
        steps = len(saved) // model.n_layers
        print(
            f"{model.backend} backend, {args.shape} prompts, {args.new} new tokens: the lens "
            f"inside generation saves {steps} steps x {model.n_layers} layers "
            f"(first step {tuple(saved[0].shape)}, later ones {tuple(saved[-1].shape)})"
        )
        del saved
        times = time_alternating(runs, args.rounds)
        median = {name: statistics.median(values) for name, values in times.items()}
        for name, value in median.items():
            print(f"{name:>18}: {value:7.3f} s  (x{value / median['generate']:.2f} generate)")
        inside = median["generate+save"] - median["generate"]
        two_pass = median["forward"]
        print(
            f"added to generation: inside {inside:.3f} s, second pass {two_pass:.3f} s; "
            f"second pass / inside = {two_pass / inside:.2f}"
            if inside > 0
            else f"added to generation: inside {inside:.3f} s (noise), second pass {two_pass:.3f} s"
        )


if __name__ == "__main__":
    main()
