"""The tuned-lens side of the interoperability suite: run by the python of a venv that holds
tuned-lens 0.2.0 (and torch, transformers) but not murano_widgets.

    python tl_side.py make --model DIR --out LENS [--seed 0] [--scale 0.05]
        A tuned-lens ``TunedLens.from_model`` for the model in DIR, every translator set to
        seeded random values, saved with tuned-lens's own ``save``.
    python tl_side.py forward --model DIR --lens LENS --ids IDS.pt --out OUT.pt
        Loads LENS with ``TunedLens.from_model_and_pretrained`` and writes, for the token ids in
        IDS.pt, tuned-lens's own log-probabilities for every hidden state but the last
        (``lens(h, idx)``), the model's own final log-probabilities, and the translators it
        loaded.
"""

from __future__ import annotations

import argparse
import logging

import torch
from transformers import AutoModelForCausalLM
from tuned_lens.nn.lenses import TunedLens


def _model(folder: str):
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    return model.eval()


def make(args) -> None:
    lens = TunedLens.from_model(_model(args.model))
    generator = torch.Generator().manual_seed(args.seed)
    with torch.no_grad():
        for translator in lens:
            translator.weight.copy_(torch.randn(translator.weight.shape, generator=generator))
            translator.weight.mul_(args.scale)
            translator.bias.copy_(torch.randn(translator.bias.shape, generator=generator))
            translator.bias.mul_(args.scale)
    lens.save(args.out)


def forward(args) -> None:
    model = _model(args.model)
    # tuned-lens reports unknown config keys and unembedding mismatches through logging, on the
    # root logger (logging.warning). Other libraries' own loggers are not what is checked: from
    # transformers 5.25, kernels says on every offline load that it skips a publisher check.
    caught: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: (  # type: ignore[method-assign]
        caught.append(record.getMessage()) if record.name == "root" else None
    )
    logging.getLogger().addHandler(handler)
    try:
        lens = TunedLens.from_model_and_pretrained(model, lens_resource_id=args.lens)
    finally:
        logging.getLogger().removeHandler(handler)
    ids = torch.load(args.ids, weights_only=True)
    with torch.no_grad():
        output = model(input_ids=ids, output_hidden_states=True, use_cache=False)
        hidden = output.hidden_states[:-1]  # the last one is already through the final norm
        lens_logprobs = torch.stack([lens(h, idx).log_softmax(-1) for idx, h in enumerate(hidden)])
    torch.save(
        {
            "lens_logprobs": lens_logprobs,
            "final_logprobs": output.logits.log_softmax(-1),
            "weights": torch.stack([t.weight.detach() for t in lens]),
            "biases": torch.stack([t.bias.detach() for t in lens]),
            "config": dict(lens.config.to_dict()),
            "warnings": caught,
        },
        args.out,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("make")
    one.add_argument("--model", required=True)
    one.add_argument("--out", required=True)
    one.add_argument("--seed", type=int, default=0)
    one.add_argument("--scale", type=float, default=0.05)
    two = commands.add_parser("forward")
    two.add_argument("--model", required=True)
    two.add_argument("--lens", required=True)
    two.add_argument("--ids", required=True)
    two.add_argument("--out", required=True)
    args = parser.parse_args()
    {"make": make, "forward": forward}[args.command](args)


if __name__ == "__main__":
    main()
