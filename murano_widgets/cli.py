"""The command line: ``python -m murano_widgets demo`` (or ``murano-widgets demo``).

Runs the logit lens on the shipped demo model (or ``--model``), writes the interactive widget
as a self-contained HTML file and prints, per prompt, the layer where the model's final
prediction first becomes the top-1 token.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

DEMO_PROMPTS = (
    "The capital of France is",
    "Monday, Tuesday,",
    "Two plus three is",
    "The opposite of hot is",
)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _layer_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be comma-separated layer indices like 0,3,-1; got {text!r}"
        ) from None


def _prompt(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("a prompt must have at least one visible character")
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="murano-widgets",
        description="The logit lens of a language model, as an interactive HTML heatmap.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="run the logit lens and write the interactive widget to an HTML file",
        description="Run the logit lens on the shipped toy-world model (or --model) and write "
        "the interactive widget to one self-contained HTML file.",
    )
    demo.add_argument(
        "--model",
        metavar="ID_OR_PATH",
        help="a hub id or a local model folder (default: the shipped demo model)",
    )
    demo.add_argument(
        "--prompt",
        action="append",
        type=_prompt,
        metavar="TEXT",
        help="a prompt (repeat for several; default: a built-in set)",
    )
    demo.add_argument(
        "--out",
        type=Path,
        default=Path("logit_lens.html"),
        metavar="PATH",
        help="the HTML file to write (default: logit_lens.html)",
    )
    demo.add_argument(
        "--layers",
        type=_layer_list,
        default=None,
        metavar="0,3,-1",
        help="layers to show (default: all)",
    )
    demo.add_argument(
        "--top-k",
        type=_positive_int,
        default=5,
        metavar="K",
        help="top tokens kept per cell (default: 5)",
    )
    demo.add_argument(
        "--device", default=None, help="where to run the model (default: cuda if present, else cpu)"
    )
    demo.set_defaults(command_parser=demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``murano-widgets`` and ``python -m murano_widgets``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    parser = args.command_parser  # errors name the subcommand: "murano-widgets demo: error: ..."
    if args.out.is_dir():
        parser.error(f"--out {str(args.out)!r} is a folder; give a file name such as lens.html")
    if not args.out.parent.exists():
        parser.error(f"--out: the folder {str(args.out.parent)!r} does not exist")
    return run_demo(args, parser)


def run_demo(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from murano_widgets._progress import progress_bar
    from murano_widgets.backends.loading import resolve_source
    from murano_widgets.step.logit_lens import LogitLens
    from murano_widgets.types import PromptBatch, Results
    from murano_widgets.widgets.lens import LogitLensWidget

    prompts = args.prompt or list(DEMO_PROMPTS)
    if args.model is not None:
        # A missing folder or an uncached hub id is known at once: say so before any progress.
        try:
            resolve_source(args.model, argument="--model")
        except OSError as error:
            parser.error(str(error))
    # leave=False: the bar is gone once done, so it never stands around an error message.
    bar = progress_bar(total=4, desc="loading model", unit="step", file=sys.stderr)
    try:
        model = _load_model(args.model, args.device)
        bar.update()
        bar.set_description("checking inputs")
        step = LogitLens(model, layers=args.layers if args.layers else "all", top_k=args.top_k)
        bar.update()
        bar.set_description("running the lens")
        lens = step(Results(prompts=PromptBatch(prompts)))["logit_lens"]
        bar.update()
        bar.set_description("writing HTML")
        path = LogitLensWidget(lens).save_html(args.out)
        bar.update()
    except (OSError, ValueError, TypeError) as error:
        bar.close()
        option = "--model: " if isinstance(error, OSError) else ""
        parser.error(f"{option}{error}")
    bar.close()
    print(f"wrote {path.resolve()}")
    print(summary(lens))
    return 0


def _load_model(model_id: str | None, device: str | None):
    if model_id is None:
        from murano_widgets.demo_model import load_demo_model

        return load_demo_model(device=device)
    from murano_widgets.backends.base import MuranoModel

    return MuranoModel(model_id, device=device)


def summary(lens, width: int = 36) -> str:
    """Per prompt: the final prediction at the last position and where it first becomes top-1.

    Ranks count from 0 (rank 0 is the top-1 token), as everywhere in the package.
    """
    from murano_widgets.tokens import display_token

    lines = []
    layers = lens.layers
    for p, prompt in enumerate(lens.prompts or []):
        last = int(lens.positions(p)[-1])
        final = lens.token_strings.get(int(lens.final_tokens[p, last]), "?")
        ranks = lens.final_token_ranks[:, p, last].tolist()
        first = next((layers[i] for i, rank in enumerate(ranks) if rank == 0), None)
        where = (
            f"first top-1 at layer {first}"
            if first is not None
            else "never top-1 in the shown layers"
        )
        probability = float(lens.final_token_probs[-1, p, last])
        shown = _shorten(display_token(prompt, spaces=False), width)
        lines.append(
            f"  {shown:<{width}} → {_shorten(display_token(final), 12):<12} "
            f"{where} (of {layers[0]}..{layers[-1]}; p = {probability:.2f} at layer {layers[-1]})"
        )
    return "Final prediction per prompt:\n" + "\n".join(lines)


def _shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, ending in "…" when cut, so columns stay aligned."""
    return text if len(text) <= width else text[: width - 1] + "…"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
