"""A client of the local NDIF server, run inside its network namespace by the remote tests.

    python client.py lens MODEL_DIR OUT.pt [--top-k K] [--full-probs] [--layers 0,-1]
        [--right-padding] [--answers] [--targets N] [--jacobian] [--named] [--decompose]
        [--patchscope]
        LogitLens with remote=True, then the same lens locally; both results to OUT.pt.
        --answers scores single- and multi-token answers (with alternatives) and --targets
        tracks N strings at every position. --jacobian reads every layer through a Jacobian
        lens of seeded random matrices (sent to the server with the trace); --named reads through
        the logit lens and that Jacobian lens side by side, with the KL between them.
        --patchscope reads through the logit lens and two PatchscopeLens side by side (their
        patched passes run on the server), with the KL between them.
    python client.py patch MODEL_DIR OUT.pt
        patch_lens with remote=True, then the same locally, for a prompt source (longer than
        the prompt), zero ablation and a mean over other prompts, with a multi-token answer and
        an alternative; every comparison field and both results' fields to OUT.pt.
    python client.py live MODEL_DIR OUT.pt
        show_logit_lens(..., remote=True): a prompt added, a token tracked and a cell patched
        through the live widget's Python calls, then the same locally; the fields to OUT.pt.
    python client.py fail MODEL_DIR
        A trace that fails on the server; prints the error the caller gets.
    python client.py dataset MODEL_DIR OUT_DIR [--prompts N] [--batch-tokens T]
        lens_dataset(..., remote=True) over N toy-world prompts from a generator: uninterrupted
        with its progress bar (two jobs in flight, the default), with one and with three; interrupted by Ctrl-C from the stream and resumed from its
        folder; with the first job failing on the server (retried once); and locally. The data
        sets' arrays to OUT_DIR/<run>.npz.

Prints one JSON line last (timings, the error). It must be a real file: nnsight reads the
source of the code inside ``with model.trace(...)``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time

import nnsight.modeling.huggingface as hf
import torch
from nnsight import CONFIG

from murano_widgets import LogitLens, MuranoModel, PromptBatch
from murano_widgets.step import assemble
from murano_widgets.step import trace as step_trace

# Answers of one and of several tokens, alternatives, and a prompt without one.
ANSWERS = [" Rome", [" one", " two three"], None, " six"]
FOILS = [" Paris", None, None, " five"]

# Very different lengths: a batch that is mostly padding for some rows.
PROMPTS = [
    "The Eiffel Tower is in the city of Paris, and the capital of Italy is Rome.",
    "one",
    "Alice met Bob. Alice gave",
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday one two three four five",
]


def connect(path: str) -> MuranoModel:
    CONFIG.API.HOST = "http://127.0.0.1:8001"  # plain http: the client uses ws:// too
    CONFIG.API.APIKEY = None  # the local server runs without authentication
    # nnsight names a model by its Hub id; a local folder has none, and the server loads the
    # same path from the same file system.
    hf._ID_CACHE[path] = path
    return MuranoModel(path, backend="nnsight")


def lens(args: argparse.Namespace) -> dict:
    model = connect(args.model)
    if args.right_padding:
        model.tokenizer.padding_side = "right"
    options = {"top_k": args.top_k, "store_full_probs": args.full_probs}
    if args.layers:
        options["layers"] = [int(x) for x in args.layers.split(",")]
    if args.targets:
        words = [model.tokenizer.decode([i]) for i in range(40, 40 + args.targets)]
        options["targets"] = list(dict.fromkeys(words))
    if args.jacobian:
        options["lens"] = random_jacobian_lens(model)
    if args.named:
        options["lens"] = {"logit": None, "jacobian": random_jacobian_lens(model)}
        options["kl_between_lenses"] = True
    if args.patchscope:
        from murano_widgets import PatchscopeLens

        # The identity prompt, and one patched at block 0 behind a placeholder string, whose
        # tokens before the placeholder run once (their key/value cache) on the server.
        options["lens"] = {
            "logit": None,
            "patchscope": PatchscopeLens(),
            "at0": PatchscopeLens("Paris is in France. X is in", placeholder="X", target_layer=0),
        }
        options["kl_between_lenses"] = True
    answers = ANSWERS if args.answers else None
    foils = None
    if args.decompose:
        # Direct logit attribution with heads and the rows after each attention, answer − foil.
        options.update(decompose=True, heads=True, sites=("resid_mid", "resid_post"))
        foils = FOILS if answers is not None else None
    timings = {}
    results = {}
    for where, extra in (("remote", {"remote": True}), ("local", {})):
        start = time.perf_counter()
        step = LogitLens(model, **options, **extra)
        batch = PromptBatch(PROMPTS, answers=answers, foils=foils)
        results[where] = step({"prompts": batch})["logit_lens"]
        timings[where] = time.perf_counter() - start
    torch.save({where: _all_fields(result) for where, result in results.items()}, args.out)
    return {
        "seconds": timings,
        "padding_side": model.tokenizer.padding_side,
        "logit_transform": model.logit_transform.describe(),
        # The weights stayed on the server until the local run: the self-check ran there.
        "self_checked": model._self_checked,
    }


def random_jacobian_lens(model):
    """``I + 0.3 · noise / sqrt(d)`` for every layer but the last: far enough from the logit
    lens to change every reading."""
    from murano_widgets import JacobianLens

    config = model.config
    d = getattr(config, "hidden_size", None) or config.n_embd
    generator = torch.Generator().manual_seed(0)
    return JacobianLens(
        {
            layer: torch.eye(d) + 0.3 * torch.randn(d, d, generator=generator) / d**0.5
            for layer in range(model.n_layers - 1)
        },
        n_prompts=1,
    )


def _all_fields(result) -> dict:
    """A result's fields; named lenses' (a LensResults) as ``<lens>.<field>``, with the KL
    between lenses as ``kl.<a>.<b>``."""
    if dataclasses.is_dataclass(result):
        return _fields(result)
    fields = {}
    for name, one in result.items():
        fields.update({f"{name}.{key}": value for key, value in _fields(one).items()})
    for (a, b), kl in (getattr(result, "kl_between", None) or {}).items():
        fields[f"kl.{a}.{b}"] = kl
    return fields


def _fields(result) -> dict:
    """The result's fields, each answer set's flattened to ``answer_sets.<name>.<field>``."""
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    for name, scores in (fields.pop("answer_sets") or {}).items():
        for field in dataclasses.fields(scores):
            fields[f"answer_sets.{name}.{field.name}"] = getattr(scores, field.name)
    return fields


# patch_lens: one prompt, three sources, an answer with a multi-token alternative.
PATCH_PROMPT = "The capital of France is"
PATCHES = {
    "prompt": {
        "layer": 1,
        "position": -2,
        "source": "The capital of Italy is Rome and the capital of",
    },
    "zero": {"layer": 0, "position": 3, "source": "zero"},
    "mean": {"layer": -1, "position": -1, "source": "mean", "mean_over": ["one two", PROMPTS[2]]},
}


def patch(args: argparse.Namespace) -> dict:
    from murano_widgets import patch_lens

    model = connect(args.model)
    out, timings = {}, {}
    for name, options in PATCHES.items():
        for where, remote in (("remote", True), ("local", False)):
            start = time.perf_counter()
            comparison = patch_lens(
                model, PATCH_PROMPT, answers=[[" Paris", " Rome and"]], remote=remote, **options
            )
            timings[f"{name}.{where}"] = time.perf_counter() - start
            fields = {
                key: getattr(comparison, key)
                for key in ("delta_prob", "token_prob_a", "token_prob_b", "kl_a_to_b", "token")
            }
            fields.update({f"a.{k}": v for k, v in _fields(comparison.a).items()})
            fields.update({f"b.{k}": v for k, v in _fields(comparison.b).items()})
            fields["patch"] = dataclasses.asdict(comparison.patch)
            out[f"{name}.{where}"] = fields
    torch.save(out, args.out)
    return {"seconds": timings}


def live(args: argparse.Namespace) -> dict:
    """A live widget on a remote model: a prompt added, a token tracked, a cell patched, each
    run on NDIF; then the same widget built and driven locally."""
    from murano_widgets import show_logit_lens

    model = connect(args.model)
    out, timings = {}, {}
    for where, remote in (("remote", True), ("local", False)):
        start = time.perf_counter()
        widget = show_logit_lens(model, PROMPTS[:2], remote=remote)
        timings[f"{where}.show"] = time.perf_counter() - start
        start = time.perf_counter()
        widget.add_prompt("The capital of Italy is")
        timings[f"{where}.add_prompt"] = time.perf_counter() - start
        widget.track(" Paris")  # one token on the tiny models (a text of several is refused)
        start = time.perf_counter()
        patched = widget.patch(layer=1, position=2, source="zero", prompt=2)
        timings[f"{where}.patch"] = time.perf_counter() - start
        fields = {f"result.{k}": v for k, v in _fields(widget.result).items()}
        fields.update({f"patched.{k}": v for k, v in _fields(patched.b).items()})
        fields["prompts"] = list(widget.prompts)
        fields["targets"] = list(widget.targets)
        out[where] = fields
        widget.close()
    torch.save(out, args.out)
    return {"seconds": timings}


def fail(args: argparse.Namespace) -> dict:
    model = connect(args.model)
    inputs = dict(model.tokenizer(PROMPTS[:2], return_tensors="pt", padding=True))
    try:
        with model.trace(inputs, remote=True):
            # [batch, seq, d_model] @ [3, 7]: a shape error that only the server meets.
            wrong = (model.layer(0) @ torch.ones(3, 7)).save()
    except Exception as error:  # what a user would see
        return {
            "type": type(error).__name__,
            "module": type(error).__module__,
            "message": str(error),
            "job_id": getattr(error, "job_id", None),
            "details": getattr(error, "details", ""),
        }
    return {"type": None, "shape": list(wrong.shape)}


def demo_pairs(n: int):
    """``n`` (prompt, answer) pairs of the toy world's held-out prompts, varied: a generator."""
    from murano_widgets.demo_model.corpus import eval_prompts

    facts = eval_prompts()
    prefixes = ["", "So, ", "Well, ", "Indeed, it is said that "]
    for i in range(n):
        fact = facts[i % len(facts)]
        yield prefixes[(i // len(facts)) % len(prefixes)] + fact.prompt, fact.answer


class Interrupt:
    """A stream that raises KeyboardInterrupt (a user's Ctrl-C) when it reaches ``at``."""

    def __init__(self, pairs, at: int) -> None:
        self.pairs, self.at = pairs, at

    def __iter__(self):
        for i, pair in enumerate(self.pairs):
            if i == self.at:
                raise KeyboardInterrupt
            yield pair


def dataset(args: argparse.Namespace) -> dict:
    import sys
    import warnings
    from pathlib import Path

    import numpy as np

    from murano_widgets import lens_dataset

    model = connect(args.model)
    out = Path(args.out)
    n, options = args.prompts, {"batch_tokens": args.batch_tokens}
    jobs: list[int] = []
    original = LogitLens.run

    def counted(self, prompts, *a, **k):
        jobs.append(len(prompts))
        return original(self, prompts, *a, **k)

    LogitLens.run = counted

    def arrays(data) -> dict:
        return {
            "prob": data.answer_probs["answer"],
            "rank": data.answer_ranks["answer"],
            "entropy": data.entropy,
            "kl": data.kl_to_final,
            "final_prob": data.final_token_probs,
            "final_rank": data.final_token_ranks,
            "top1": data.top1_tokens,
        }

    summary: dict = {}
    # 1. Uninterrupted, its progress bar on stderr (the job statuses in it).
    start = time.perf_counter()
    whole = lens_dataset(model, demo_pairs(n), remote=True, progress=True, **options)
    summary["seconds"] = time.perf_counter() - start
    summary["jobs"] = len(jobs)
    summary["n_batches"] = whole.provenance["n_batches"]
    summary["remote"] = whole.provenance.get("remote")
    np.savez(out / "whole.npz", **arrays(whole))
    print("\n--- interrupted", file=sys.stderr)
    # 1b. One job at a time, and three in flight: the same numbers; the time of each.
    for name, in_flight in (("one_job", 1), ("three_jobs", 3)):
        jobs.clear()
        start = time.perf_counter()
        data = lens_dataset(
            model, demo_pairs(n), remote=True, progress=False, remote_jobs=in_flight, **options
        )
        summary[f"seconds_{name}"] = time.perf_counter() - start
        summary[f"jobs_{name}"] = len(jobs)
        np.savez(out / f"{name}.npz", **arrays(data))
    # 2. Ctrl-C from the stream (in its last slice of 256, so that the windows before it ran),
    # then resumed from the folder.
    folder = out / "run"
    try:
        lens_dataset(
            model, Interrupt(demo_pairs(n), n - 100), remote=True, path=folder,
            progress=False, **options,
        )  # fmt: skip
    except KeyboardInterrupt:
        summary["interrupted"] = True
    summary["shards_before"] = len(list(folder.glob("w*.npz")))
    jobs.clear()
    resumed = lens_dataset(
        model, demo_pairs(n), remote=True, path=folder, progress=False, **options
    )
    summary["resumed_jobs"] = len(jobs)
    np.savez(out / "resumed.npz", **arrays(resumed))
    # 3. The first job fails on the server, and is sent again. The trace's code runs on the
    # server (nnsight 0.8), so whether to fail is decided here and travels with the step.
    calls = []
    reduce_in_trace, read_states = assemble.reduce_in_trace, step_trace.read_states

    def reduce_once(*a, **k):
        # The trace's code reads read_states from its module when it is sent: the first job
        # sends the failing one.
        calls.append(1)
        step_trace.read_states = read_and_fail if len(calls) == 1 else read_states
        return reduce_in_trace(*a, **k)

    def read_and_fail(config, states, take, intervention=None):
        read_states(config, states, take, intervention)
        # Block 0's output again, after the later blocks ran: the server refuses it.
        states["post"][0] = take(config.model.layer(0))

    assemble.reduce_in_trace = reduce_once
    jobs.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # One job at a time: the failure is decided on the step, which jobs in flight share.
        retried = lens_dataset(
            model, demo_pairs(n), remote=True, progress=False, remote_jobs=1, **options
        )
    assemble.reduce_in_trace, step_trace.read_states = reduce_in_trace, read_states
    summary["retry_warnings"] = [str(w.message) for w in caught if "once more" in str(w.message)]
    summary["retry_jobs"] = len(jobs)
    np.savez(out / "retried.npz", **arrays(retried))
    # 4. The same data set locally (the weights load here now).
    local = lens_dataset(model, demo_pairs(n), progress=False, **options)
    np.savez(out / "local.npz", **arrays(local))
    return summary


def dataset_groups(args: argparse.Namespace) -> dict:
    """Token groups (one for every prompt, one per prompt) and the logit difference in a remote
    data set: two jobs, then the same data set locally."""
    from pathlib import Path

    import numpy as np

    from murano_widgets import lens_dataset

    model = connect(args.model)
    pairs = list(demo_pairs(12))
    prompts, answers = [p for p, _ in pairs], [a for _, a in pairs]
    options = {
        "groups": {"the": "the", "answer": [a.strip() for a in answers]},
        "foils": [" the"] * len(prompts),
        "batch_size": 6,
        "progress": False,
    }
    out = Path(args.out)
    remote = lens_dataset(model, prompts, answers, remote=True, **options)
    local = lens_dataset(model, prompts, answers, **options)
    for name, data in (("remote", remote), ("local", local)):
        arrays = {f"group_{g}": data.group_probs[g] for g in data.group_names}
        np.savez(out / f"{name}.npz", logit_diff=data.logit_diff, **arrays)
    return {"n_batches": remote.provenance["n_batches"], "groups": remote.group_names}


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("lens")
    run.add_argument("model")
    run.add_argument("out")
    run.add_argument("--top-k", type=int, default=5)
    run.add_argument("--full-probs", action="store_true")
    run.add_argument("--layers", default="")
    run.add_argument("--right-padding", action="store_true")
    run.add_argument("--answers", action="store_true")
    run.add_argument("--targets", type=int, default=0)
    run.add_argument("--jacobian", action="store_true")
    run.add_argument("--named", action="store_true")
    run.add_argument("--patchscope", action="store_true")
    run.add_argument("--decompose", action="store_true")
    patching = sub.add_parser("patch")
    patching.add_argument("model")
    patching.add_argument("out")
    living = sub.add_parser("live")
    living.add_argument("model")
    living.add_argument("out")
    failing = sub.add_parser("fail")
    failing.add_argument("model")
    data = sub.add_parser("dataset")
    data.add_argument("model")
    data.add_argument("out")
    data.add_argument("--prompts", type=int, default=700)
    data.add_argument("--batch-tokens", type=int, default=512)
    grouped = sub.add_parser("dataset_groups")
    grouped.add_argument("model")
    grouped.add_argument("out")
    args = parser.parse_args()
    commands = {
        "lens": lens,
        "patch": patch,
        "live": live,
        "fail": fail,
        "dataset": dataset,
        "dataset_groups": dataset_groups,
    }
    print(json.dumps(commands[args.command](args)))


if __name__ == "__main__":
    main()
