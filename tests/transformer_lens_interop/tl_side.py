"""The TransformerLens side of the interoperability suite: run by the python of a venv that
holds transformer-lens 4.3.0 (and torch, transformers) but not murano_widgets.

Every command boots the model with ``TransformerBridge.boot_transformers(DIR, device="cpu")``
and sets ``cfg.default_prepend_bos = False``, so that TransformerLens tokenizes a text as the
tokenizer alone does (as murano_widgets does).

    python tl_side.py fit --model DIR --texts TEXTS.json --out LENS.pt
        [--skip-first 16] [--max-seq-len 128] [--dim-batch 8]
        TransformerLens's own ``JacobianLens.fit``, saved with its ``save`` in float32.
    python tl_side.py readout --model DIR --lens LENS.pt --ids IDS.pt --out OUT.pt
        Loads LENS with ``JacobianLens.load`` and writes, for each row of token ids in IDS.pt
        (a list of 1-D tensors), ``readout(..., return_full_logits=True)``'s logits of every
        layer (the fitted ones through J, the last the model's own), and the lens it read.
    python tl_side.py load --lens FILE.pt --out OUT.pt
        ``JacobianLens.load`` of FILE (an artifact or a fit checkpoint): its matrices, prompt
        count and metadata.
    python tl_side.py registry --out OUT.json
        TransformerLens's own registry of published lenses.
    python tl_side.py dla --model DIR --cases CASES.json --mode plain|default --out OUT.pt
        ``direct_logit_attribution`` at the last position of each prompt of CASES (``ids``: a
        list of token-id lists, ``answers`` and ``foils``: one token id each), with
        ``unit="component"`` and ``unit="head"``, for the answer alone and for answer − foil.
        ``plain`` boots in compatibility mode with only the final norm folded (the option DLA
        requires), so that TransformerLens computes the plain model's quantities; ``default``
        with the default processing (centred unembedding and writing weights, value biases folded
        into the output bias). Also writes the unembedding bias the readout adds (``b_U`` after
        folding: the final norm's bias through W_U plus the model's own) and the model's logits
        at each prompt's last position.
    python tl_side.py logit_diff --model DIR --cases CASES.json --out OUT.pt
        The logit difference per layer as TransformerLens's "Exploratory Analysis Demo" computes
        it, at the last position of each prompt of CASES (as for ``dla``), in the ``plain`` mode:
        ``cache.accumulated_resid(incl_mid=True, apply_ln=True, pos_slice=-1)`` (the final norm
        recomputed for each layer's accumulated residual) times the difference of the answer's
        and the foil's unembedding directions; with the stack's labels and ``b_U``.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import torch


def _boot(folder: str):
    from transformer_lens.model_bridge import TransformerBridge

    model = TransformerBridge.boot_transformers(folder, device="cpu")
    model.cfg.default_prepend_bos = False
    return model.eval()


def _lens_state(lens) -> dict:
    return {
        "jacobians": {layer: matrix.clone() for layer, matrix in lens.jacobians.items()},
        "n_prompts": lens.n_prompts,
        "d_model": lens.d_model,
        "metadata": json.loads(json.dumps(lens.metadata)),
    }


def fit(args) -> None:
    from transformer_lens.tools.analysis import JacobianLens

    model = _boot(args.model)
    texts = json.loads(Path(args.texts).read_text())
    lens = JacobianLens.fit(
        model,
        texts,
        corpus="interop",
        dim_batch=args.dim_batch,
        max_seq_len=args.max_seq_len,
        skip_first_positions=args.skip_first,
        show_progress=False,
    )
    lens.save(args.out, dtype=torch.float32)


def readout(args) -> None:
    from transformer_lens.tools.analysis import JacobianLens

    model = _boot(args.model)
    lens = JacobianLens.load(args.lens)
    rows = torch.load(args.ids, weights_only=True)
    out = []
    for ids in rows:
        result = lens.readout(model, ids.unsqueeze(0), return_full_logits=True)
        out.append({layer: logits.float() for layer, logits in result.lens_logits.items()})
    torch.save({"logits": out, "lens": _lens_state(lens)}, args.out)


def load(args) -> None:
    from transformer_lens.tools.analysis import JacobianLens

    torch.save(_lens_state(JacobianLens.load(args.lens)), args.out)


def registry(args) -> None:
    import transformer_lens.tools.analysis.jacobian_lens as module

    shutil.copyfile(Path(module.__file__).with_name("jacobian_lens_registry.json"), args.out)


# The processing options of ``enable_compatibility_mode`` (TransformerLens 4.3.0). DLA needs the
# final norm folded (it refuses a learned final-norm weight or bias); nothing else. ``plain``
# turns off everything that changes what a component's number means: centring the unembedding
# subtracts the vocabulary mean from every logit, centring the writing weights subtracts each
# output's mean over d_model (under LayerNorm only, where the norm centres anyway), and folding
# value biases moves each head's b_V·W_O into the layer's output bias.
MODES = {
    "plain": {
        "fold_ln": True,
        "center_writing_weights": False,
        "center_unembed": False,
        "fold_value_biases": False,
    },
    "default": {},
}


def dla(args) -> None:
    from transformer_lens.tools.analysis import direct_logit_attribution

    model = _boot(args.model)
    model.enable_compatibility_mode(disable_warnings=True, **MODES[args.mode])
    cases = json.loads(Path(args.cases).read_text())
    out = []
    for ids, answer, foil in zip(cases["ids"], cases["answers"], cases["foils"], strict=True):
        tokens = torch.tensor([ids])
        row: dict = {}
        for unit in ("component", "head"):
            for name, incorrect in (("single", None), ("diff", foil)):
                found = direct_logit_attribution(
                    model, tokens, answer_tokens=answer, incorrect_tokens=incorrect, unit=unit
                )
                assert found.attribution.shape == (len(found.labels), 1), found.attribution.shape
                row[f"{unit}_labels"] = list(found.labels)
                row[f"{unit}_{name}"] = found.attribution[:, 0].detach().float().clone()
        with torch.no_grad():
            logits = model(tokens)[0, -1].float()
        row["logits"] = logits.clone()
        row["b_U"] = model.b_U.detach().float().clone()
        out.append(row)
    torch.save(out, args.out)


def logit_diff(args) -> None:
    model = _boot(args.model)
    model.enable_compatibility_mode(disable_warnings=True, **MODES["plain"])
    cases = json.loads(Path(args.cases).read_text())
    out = []
    for ids, answer, foil in zip(cases["ids"], cases["answers"], cases["foils"], strict=True):
        with torch.no_grad():
            _, cache = model.run_with_cache(torch.tensor([ids]))
            stack, labels = cache.accumulated_resid(
                layer=-1, incl_mid=True, apply_ln=True, pos_slice=-1, return_labels=True
            )
            direction = model.W_U[:, answer] - model.W_U[:, foil]
            values = (stack[:, 0] @ direction).float()
        out.append(
            {"values": values.clone(), "labels": list(labels), "b_U": model.b_U.detach().float()}
        )
    torch.save(out, args.out)


def main() -> None:
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("fit")
    one.add_argument("--model", required=True)
    one.add_argument("--texts", required=True)
    one.add_argument("--out", required=True)
    one.add_argument("--skip-first", type=int, default=16)
    one.add_argument("--max-seq-len", type=int, default=128)
    one.add_argument("--dim-batch", type=int, default=8)
    two = commands.add_parser("readout")
    two.add_argument("--model", required=True)
    two.add_argument("--lens", required=True)
    two.add_argument("--ids", required=True)
    two.add_argument("--out", required=True)
    three = commands.add_parser("load")
    three.add_argument("--lens", required=True)
    three.add_argument("--out", required=True)
    four = commands.add_parser("registry")
    four.add_argument("--out", required=True)
    five = commands.add_parser("dla")
    five.add_argument("--model", required=True)
    five.add_argument("--cases", required=True)
    five.add_argument("--mode", choices=sorted(MODES), required=True)
    five.add_argument("--out", required=True)
    six = commands.add_parser("logit_diff")
    six.add_argument("--model", required=True)
    six.add_argument("--cases", required=True)
    six.add_argument("--out", required=True)
    args = parser.parse_args()
    run = {
        "fit": fit,
        "readout": readout,
        "load": load,
        "registry": registry,
        "dla": dla,
        "logit_diff": logit_diff,
    }
    run[args.command](args)


if __name__ == "__main__":
    main()
