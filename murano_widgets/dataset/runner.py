"""``lens_dataset``: the run that makes a :class:`~murano_widgets.LensDataset`, the lens over a
data set of prompts reduced to per-prompt, per-layer numbers.

The prompts (and their answers and foils) may come from any iterable, a list or a generator, a
pandas column or a file of lines, and are read as a stream (:mod:`murano_widgets.dataset.stream`):
checked item by item, tokenized a slice at a time, sorted by token length within a window of a
few batches and cut into batches by a token budget, so that padding stays small without sorting
(or holding) the whole data set. Every number is written back at the prompt's own index, so the
order given is the order kept. Of each batch only what a data-set question needs is kept
(:func:`_keep_batch`); the windows' records are collected and assembled by
:mod:`murano_widgets.dataset.lens_dataset`, which a finished folder is loaded through too.

With ``path=folder`` each batch is written to the folder as it finishes
(:mod:`murano_widgets.dataset.shards`); an interrupted run called again resumes where it stopped.
Remote batches (``remote=True``) go to NDIF a few jobs at a time.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch

from murano_widgets._checks import check_bool, check_int, check_model, check_path
from murano_widgets._memory import Need, preflight, return_freed_memory
from murano_widgets.backends.nnsight import job_statuses_to
from murano_widgets.dataset.collect import Collector
from murano_widgets.dataset.group_inputs import DatasetGroups, dataset_groups
from murano_widgets.dataset.io import model_provenance
from murano_widgets.dataset.lens_dataset import LensDataset, assemble_dataset
from murano_widgets.dataset.progress import Progress
from murano_widgets.dataset.shards import (
    ShardStore,
    fingerprint_of,
    record_of,
)
from murano_widgets.dataset.stream import (
    DEFAULT_SET,
    WINDOW_BATCHES,
    Batching,
    Inputs,
    Window,
    cut_batches,
    resolve_batching,
    windows,
)
from murano_widgets.dataset.table import METRIC_FIELDS, TOKENS, fields_for, keep_last
from murano_widgets.step.logit_lens import LogitLens

if TYPE_CHECKING:
    from murano_widgets.backends.base import ModelBackend
    from murano_widgets.results.lenses import LensResults

__all__ = ["lens_dataset"]

_TOKENIZE_SLICE = 256
#: How many times a remote batch is sent: a job that fails is sent once more.
REMOTE_TRIES = 2
#: Remote jobs in flight at once by default. While one job runs on the server the next one's
#: trace is pickled, uploaded and queued: on the local NDIF (one CPU model actor) 6 demo
#: batches of 32 prompts took 3.09 s one job at a time and 2.25 s two at a time.
REMOTE_JOBS = 2


def lens_dataset(
    model: ModelBackend,
    prompts: Iterable[Any],
    answers: Iterable[Any] | Mapping[str, Iterable[Any]] | None = None,
    *,
    layers: Sequence[int] | str = "all",
    batch_size: int | None = None,
    batch_tokens: int | None = None,
    progress: bool = True,
    variants: bool = False,
    lens: Any = None,
    foils: Iterable[str | None] | None = None,
    decompose: bool = False,
    heads: bool = False,
    path: str | os.PathLike | None = None,
    remote: bool = False,
    remote_jobs: int | None = None,
    groups: Mapping[str, Any] | None = None,
) -> LensDataset:
    """Runs the lens over a data set of prompts and keeps, per prompt and layer, the answer's fate.

    The inputs are read as a stream: a list, a generator, a pandas column, a ``datasets``
    column or a file of lines (a ``pathlib.Path``) are all read one window of a few batches at
    a time, each prompt checked as it arrives (a bad one is an error naming its index), so
    nothing but the per-prompt numbers grows with the number of prompts. Lists and tuples are
    checked whole before any model work.

    Args:
        model: The model, e.g. ``load_demo_model()`` or ``MuranoModel("gpt2")``.
        prompts: The prompts: any iterable of strings, or a ``pathlib.Path`` to a file with one
            prompt a line. With ``answers=None``: an iterable of ``(prompt, answer)`` pairs
            (``(prompt, answer, foil)`` triples), each answer as below (a dict
            of named sets, the same names in every pair).
        answers: One answer per prompt (a string, a list of accepted strings, or ``None`` for
            none), as any iterable (or a file of lines), or a dict of named answer sets,
            ``{"capital": [...], "language": [...]}``, each such an iterable aligned with
            ``prompts``. The inputs are zipped strictly: one that ends before the others is
            an error naming where.
        layers: ``"all"`` or a list of layer indices.
        batch_size: The most prompts a batch. Alone, every batch has exactly this many (the
            last of a window fewer).
        batch_tokens: The most positions a batch runs: its prompts times its longest prompt's
            tokens (padding included). With ``batch_size`` too, both limits hold. With neither,
            an automatic budget keeps a batch's saved block outputs near 256 MiB on the CPU,
            1 GiB on an accelerator (the demo model: 8,192 tokens; GPT-2 small: 4,096; a 7B
            model in bfloat16: 512, on a GPU 2,048).
            Prompts are sorted by token length within windows of 16 batches, so padding stays
            small whatever their order (``provenance["padded_tokens"]`` against ``["tokens"]``
            says how small).
        progress: Show a progress bar (it disappears when done): prompts and tokens run per
            second and the time left (unknown for a stream of unknown length; batches read
            back from ``path`` are not counted as speed).
        variants: Also count each answer with and without a leading space and with its first
            letter's case changed (see :class:`LogitLens`).
        lens: A translator such as a :class:`~murano_widgets.TunedLens`; ``None`` for the logit
            lens. Or several lenses side by side, by name: ``{"logit": None, "tuned": tuned}``
            (one trace a batch for all of them; see :class:`LensDataset`).
        foils: One foil per prompt (a string, or ``None`` for none), as any iterable: the data
            set keeps the **logit difference** logit(answer) − logit(foil) of the first token of
            each at every layer (``logit_diff``), and with ``decompose=True`` the contributions
            are to it. A prompt given no foil while others have one gets no logit difference
            and no contributions (NaN), as does a prompt without an answer.
        decompose: Also keep each prompt's direct logit attribution of its answer (of the first
            answer set, when they are named) at its last position, under the model's own
            readout: per component, ``C`` floats a prompt (see :class:`LensDataset`).
        heads: With ``decompose=True``: split each attention layer into its heads (and the
            output projection's bias), ``"L3.H0"``, ..., ``"L3.attn_bias"``.
        path: A folder to write the run to as it goes, one file per batch (made if missing).
            Called again with the same inputs and folder, an interrupted run resumes where it
            stopped (at most the batch that was running is lost) and gives exactly the result
            of an uninterrupted one; a finished one is read back. Other settings (model, lens,
            layers, options, batching) are refused before any model work, and other inputs at
            the first window that differs, naming what changed. ``LensDataset.load(path)``
            reads the finished folder without the model.
        remote: Run each batch as a job on NDIF (``MuranoModel(..., backend="nnsight")``):
            the reductions run inside the remote trace and only the per-prompt numbers come
            back; a job that fails is sent once more; with ``path``, resumable as a local run.
        remote_jobs: With ``remote=True``: the most jobs in flight at once (default 2). The
            batches' results are the same whatever the number; each shard is written as its
            job completes, so an interrupt loses at most the jobs in flight.
        groups: Token groups whose summed probability is kept at each prompt's last position
            and layer (:attr:`LensDataset.group_probs`): ``{name: TokenGroup or word}`` (the
            same tokens for every prompt) or ``{name: [one TokenGroup or word per prompt]}``
            (Wendler's answer word in each language), as :func:`run_logit_lens` takes them.

    Returns:
        A :class:`LensDataset` (with named lenses, one per lens inside it: ``.lens(name)``).

    Raises:
        TypeError, ValueError: For bad arguments, naming the argument (before any model work),
            and for a bad prompt, answer or foil of a stream, naming its index (when it is read).
    """
    check_model(model)
    run = _check_run(progress, variants, decompose, heads, remote, remote_jobs, path)
    inputs = Inputs(prompts, answers, foils, run.decompose)
    token_groups = dataset_groups(model.tokenizer, groups, int(model.vocab_size))
    if token_groups is not None:
        token_groups.check_total(inputs.total)
    # A data set reads each prompt where it ends: the step reduces those positions alone.
    step = LogitLens(
        model, layers, lens=lens, variants=run.variants, positions="last", remote=run.remote,
        decompose=run.decompose, heads=run.heads,
    )  # fmt: skip
    n_saved = len({*step.layers, model.n_layers - 1})
    batching = resolve_batching(model, n_saved, batch_size, batch_tokens, run.remote)
    # The first item tells pairs' answer sets; an empty stream is an error before model work.
    stream = iter(inputs)
    first = next(stream, None)
    if first is None:
        raise ValueError("prompts is empty: give at least one prompt")
    assert inputs.set_names is not None  # known from the first item
    sets, named, has_foils = list(inputs.set_names), bool(inputs.named), bool(inputs.has_foils)

    provenance = _provenance(model, step, lens, inputs, batching, run, sets, token_groups)
    store = None
    if run.folder is not None:
        options = _fingerprint_options(run, batching, sets, named, has_foils, token_groups)
        store = ShardStore(run.folder, fingerprint_of(provenance, options), provenance)
        provenance = store.provenance

    lens_names = list(step.lenses)
    labels = list(step.components.labels) if step.components is not None else None
    group_names = None if token_groups is None else token_groups.names
    collector = Collector(
        lens_names, sets, labels, has_foils, named, fields_for(METRIC_FIELDS, has_foils),
        group_names,
    )  # fmt: skip
    if inputs.total is not None:  # a stream's length is not known: its windows are bounded
        needs = _dataset_needs(step, sets, inputs, len(group_names or ()))
        preflight(f"lens_dataset on {inputs.total} prompts", needs)
    bar = Progress(inputs.total, run.progress)
    with bar, _job_statuses(bar, run.remote):
        hashes, n_windows = _run_windows(
            _chain(first, stream), model, step, batching, store, collector, bar, run.in_flight,
            token_groups,
        )  # fmt: skip
    if not inputs.checked:
        _warn_if_nothing_to_count(collector, has_foils)
    counts = {
        "n_prompts": collector.n_prompts,
        "tokens": collector.tokens,
        "padded_tokens": collector.padded,
        "n_batches": collector.n_batches,
        "n_windows": n_windows,
    }
    provenance.update(counts)
    if store is not None:
        store.finish(collector.n_prompts, n_windows, hashes, counts)
    return assemble_dataset(
        collector,
        list(step.layers),
        provenance,
        named,
        model,
        lens if not step.named else dict(step.lenses),
        step.named,
    )


@dataclass(frozen=True)
class _Run:
    """``lens_dataset``'s own options, checked before any model work."""

    progress: bool
    variants: bool
    decompose: bool
    heads: bool
    remote: bool
    #: Remote jobs in flight at once (1 for a local run).
    in_flight: int
    folder: Path | None


def _check_run(
    progress: Any,
    variants: Any,
    decompose: Any,
    heads: Any,
    remote: Any,
    remote_jobs: Any,
    path: Any,
) -> _Run:
    """``lens_dataset``'s own options checked, each error naming its argument."""
    progress = check_bool("progress", progress)
    variants = check_bool("variants", variants)
    decompose = check_bool("decompose", decompose)
    heads = check_bool("heads", heads)
    remote = check_bool("remote", remote)
    if remote_jobs is not None:
        if not remote:
            raise ValueError(
                f"remote_jobs is the number of NDIF jobs in flight, for remote=True only; got "
                f"remote_jobs={remote_jobs!r} with remote=False"
            )
        remote_jobs = check_int("remote_jobs", remote_jobs, 1, None, None)
    in_flight = (REMOTE_JOBS if remote_jobs is None else remote_jobs) if remote else 1
    # heads=True without decompose=True is refused rather than taken to mean it: heads only
    # split the decomposition, which costs a pass over every component, so it is turned on in
    # so many words, and decompose=False never means anything but "no contributions".
    if heads and not decompose:
        raise ValueError(
            "heads=True splits the contributions into heads, which needs decompose=True: "
            "pass lens_dataset(..., decompose=True, heads=True)"
        )
    folder = None if path is None else Path(os.fspath(check_path("path", path)))
    return _Run(progress, variants, decompose, heads, remote, in_flight, folder)


def _fingerprint_options(
    run: _Run,
    batching: Batching,
    sets: list[str],
    named: bool,
    has_foils: bool,
    token_groups: DatasetGroups | None,
) -> dict[str, Any]:
    """The options a run's folder is fingerprinted with besides its provenance: a folder
    written with others is another run's."""
    options = {
        "answer_sets": sets,
        "named_sets": named,
        "foils": has_foils,
        "variants": run.variants,
        "decompose": run.decompose,
        "heads": run.heads,
        "remote": run.remote,
        # The metric fields kept: a folder written when fewer were kept is another run's.
        "fields": list(fields_for(METRIC_FIELDS, has_foils)),
        **batching.as_dict(),
    }
    if token_groups is not None:  # absent without groups: older folders' fingerprints hold
        options["groups"] = token_groups.fingerprint()
    return options


def _provenance(
    model: Any,
    step: LogitLens,
    lens: Any,
    inputs: Inputs,
    batching: Batching,
    run: _Run,
    sets: list[str],
    token_groups: DatasetGroups | None,
) -> dict[str, Any]:
    """What the data set records of how it was made (its counts are added at the end)."""
    provenance = model_provenance(model, step, lens)
    provenance.update(
        batch_size=batching.batch_size,
        batch_tokens=batching.batch_tokens,
        window_batches=WINDOW_BATCHES,
        variants=run.variants,
        answer_sets=sets,
        decompose=run.decompose,
        heads=run.heads,
        source=inputs.describe(),
    )
    if token_groups is not None:
        provenance["groups"] = list(token_groups.names)
    if run.remote:
        provenance["remote"] = True
    return provenance


def _job_statuses(bar: Progress, remote: bool) -> contextlib.AbstractContextManager[Any]:
    """For a remote run, each batch's job status shown in the data set's bar, not a line each."""
    if not remote:
        return contextlib.nullcontext()
    return job_statuses_to(bar.job)


def _warn_if_nothing_to_count(collector: Collector, has_foils: bool) -> None:
    """A stream (not checked whole beforehand) where no prompt had an answer, or no prompt a
    foil while foils were given: the data set is made, with a warning."""
    # stacklevel 3: the warning points at the caller of lens_dataset.
    if not collector.any_answer:
        warnings.warn(
            "no prompt of the stream had an answer: the data set has no answer numbers",
            UserWarning,
            stacklevel=3,
        )
    if has_foils and not collector.any_foil:
        warnings.warn(
            "no prompt of the stream had a foil: every contribution is missing",
            UserWarning,
            stacklevel=3,
        )


def _dataset_needs(
    step: LogitLens, sets: list[str], inputs: Inputs, n_groups: int = 0
) -> list[Need]:
    """What a data set of ``inputs.total`` prompts holds per prompt, twice (the collected
    windows and the arrays they are joined into): per lens and layer, each answer set's
    probability and rank, the top-1 token, every metric field and each token group's
    probability; the contributions."""
    n = int(inputs.total or 0)
    per_layer = 16 * len(sets) + 8 + 8 * len(METRIC_FIELDS) + 4 * n_groups
    per_prompt = len(step.lenses) * len(step.layers) * per_layer
    needs = [
        Need(
            f"{n} prompts",
            2 * n * per_prompt,
            f"2 copies x {n} prompts x {per_prompt} bytes ({len(step.layers)} layers)",
            "Give fewer prompts or layers (layers=[...]) at a time.",
        )
    ]
    if step.components is not None:
        labels = len(step.components.labels)
        needs.append(
            Need(
                "decompose=True" + (" with heads=True" if step.heads else ""),
                2 * n * (labels + 1) * 4,
                f"2 copies x {n} prompts x {labels + 1} components x 4 bytes",
                "Leave heads=False (one entry per sublayer, not per head), or give fewer "
                "prompts at a time.",
            )
        )
    return needs


def _run_windows(
    stream: Iterable[Any],
    model: Any,
    step: LogitLens,
    batching: Any,
    store: ShardStore | None,
    collector: Collector,
    bar: Progress,
    in_flight: int = 1,
    groups: DatasetGroups | None = None,
) -> tuple[dict[str, str], int]:
    """The run itself: window by window, each batch read back from the folder when it has it,
    else run (and written there); the stream's hashes and number of windows at its end.

    With ``in_flight`` above 1 (remote jobs) up to that many batches of a window run at once,
    on worker threads that only wait for their job; each is written and collected here, in
    this thread, as it completes (the collector places prompts by index, so the order does not
    matter). An interrupt cancels the batches not yet sent."""
    hashes: dict[str, str] = {}
    n_windows = 0
    sets, lens_names = collector.sets, collector.lens_names
    pool = (
        concurrent.futures.ThreadPoolExecutor(in_flight, thread_name_prefix="murano-ndif-job")
        if in_flight > 1
        else None
    )

    def finish(window: Window, number: int, n_batches: int, positions: np.ndarray, record):
        if store is not None:
            store.write(window, number, n_batches, _with_text(record, window, positions, sets))
        collector.add(record, _indices(window, positions))
        bar.ran(len(positions), record["tokens"])

    try:
        for window in windows(stream, model, batching):
            batches = cut_batches(window.lengths, batching)
            found = store.window(window, len(batches)) if store is not None else {}
            collector.add_window(window)
            running: dict[concurrent.futures.Future, tuple[int, np.ndarray]] = {}
            for number, positions in enumerate(batches):
                if number in found:
                    path, shard = found.pop(number)
                    record = record_of(
                        shard, lens_names, sets, path, collector.fields, collector.groups
                    )
                    collector.add(record, _indices(window, positions))
                    bar.read_back(len(positions))
                    continue
                if pool is None:
                    bar.start()
                    finish(
                        window, number, len(batches), positions,
                        _run_batch(step, window, positions, collector, groups),
                    )  # fmt: skip
                    # A millisecond or two a batch. Without it the heap kept what each batch
                    # freed, in holes between the small arrays the data set keeps, and the peak
                    # crept up (demo model: from 123 to 216 MB above the start over the first
                    # 18,000 prompts, then stayed; 100,000 prompts peaked 23 % above 10,000).
                    return_freed_memory()
                    continue
                if len(running) >= in_flight:
                    done, _ = concurrent.futures.wait(
                        running, return_when=concurrent.futures.FIRST_COMPLETED
                    )
                    for future in done:
                        ran_number, ran_positions = running.pop(future)
                        finish(window, ran_number, len(batches), ran_positions, future.result())
                bar.start()
                future = pool.submit(_run_batch, step, window, positions, collector, groups)
                running[future] = (number, positions)
            for future in concurrent.futures.as_completed(list(running)):
                number, positions = running.pop(future)
                finish(window, number, len(batches), positions, future.result())
            hashes, n_windows = window.hashes, window.number + 1
            del window, found
    finally:
        if pool is not None:
            # Jobs already sent finish on the server; what they return is not waited for.
            pool.shutdown(wait=False, cancel_futures=True)
    return hashes, n_windows


def _indices(window: Window, positions: np.ndarray) -> np.ndarray:
    """The stream indices of a window's batch."""
    return np.array([window.items[p].index for p in positions], dtype=np.int64)


def _chain(first: Any, rest: Iterable[Any]) -> Iterable[Any]:
    yield first
    yield from rest


def _run_batch(
    step: LogitLens,
    window: Window,
    positions: np.ndarray,
    collector: Collector,
    groups: DatasetGroups | None = None,
) -> dict[str, Any]:
    """One batch through the step: its record (per-prompt arrays in batch order, ``index``,
    the top-1 token strings, the tokens run). A remote batch whose job fails is sent once
    more (with a warning) before the failure is raised."""
    sets, named, has_foils = collector.sets, collector.named, collector.has_foils
    items = [window.items[p] for p in positions]
    ids = [window.ids(p) for p in positions]
    rows = np.array([item.index for item in items], dtype=np.int64)
    # Prompts are batched by length, so those without an answer can make a batch of their own:
    # it runs without answers (the step refuses answers all None), and its prompts' answer
    # numbers stay missing.
    batch_answers: Any = None
    if any(entry is not None for item in items for entry in item.answers):
        batch_answers = {name: [item.answers[s] for item in items] for s, name in enumerate(sets)}
        if not named:
            batch_answers = batch_answers[DEFAULT_SET]
    # Likewise foils (which also need answers): a batch without any runs without them (its
    # prompts' contributions are then missing, as a prompt without a foil among others gets).
    batch_foils = None
    if has_foils and batch_answers is not None:
        batch_foils = [item.foil for item in items]
        if all(foil is None for foil in batch_foils):
            batch_foils = None
    prompts = [item.prompt for item in items]
    if groups is not None:
        step = _with_groups(step, groups.for_batch(rows))
    tries = REMOTE_TRIES if step.remote else 1
    for attempt in range(tries):
        try:
            out = step.run(prompts, batch_answers, prompt_ids=ids, foils=batch_foils)
            break
        except (ValueError, TypeError) as error:
            # The step names a prompt by its place in the batch: name it in the data set.
            message = _in_data_set(str(error), rows)
            if message == str(error):
                raise
            raise type(error)(message) from None
        except Exception as error:
            if attempt + 1 == tries or not _is_job_failure(error):
                raise
            warnings.warn(
                f"the remote job for prompts {rows.min()}..{rows.max()} failed ({error}); "
                "sending it once more",
                UserWarning,
                stacklevel=3,
            )
    # A step with named lenses returns them by name (LensResults), else one lens's result.
    results = list(cast("LensResults", out).values()) if step.named else [out]
    token_strings: dict[int, str] = {}
    lenses = [
        _keep_batch(result, sets, token_strings, collector.fields, collector.groups)
        for result in results
    ]
    contributions = bias = None
    if step.decompose and batch_answers is not None:
        # Under the last layer every lens reads the model's own output: the first lens's
        # contributions are every lens's.
        contributions, bias = _batch_contributions(results[0], step, len(items))
        if has_foils:
            # No foil where others have one: no contribution (the step's rule, kept whatever
            # the batch its prompt fell into).
            no_foil = np.array([item.foil is None for item in items])
            contributions[:, no_foil] = np.nan
            bias[no_foil] = np.nan
    lengths = [len(i) for i in ids]
    return {
        "index": rows,
        "has_foils": has_foils,
        "lenses": lenses,
        "contributions": contributions,
        "contribution_bias": bias,
        "component_labels": None if step.components is None else list(step.components.labels),
        "token_strings": token_strings,
        "tokens": int(sum(lengths)),
        "padded": int(max(lengths) * len(lengths)),
    }


_BATCH_INDEX = re.compile(r"\b(prompts|answers|foils)((?:\['[^']*'\])?)\[(\d+)\]")


def _in_data_set(message: str, rows: np.ndarray) -> str:
    """The step's message with each ``prompts[i]``, ``answers[i]``, ``answers['x'][i]`` or
    ``foils[i]`` (an index into the batch) as the index into the data set."""

    def replace(match: re.Match[str]) -> str:
        k = int(match[3])
        return f"{match[1]}{match[2]}[{int(rows[k])}]" if k < len(rows) else match[0]

    return _BATCH_INDEX.sub(replace, message)


def _is_job_failure(error: BaseException) -> bool:
    """Whether ``error`` is a remote job's failure (worth one more try), not a bug here."""
    name = type(error).__name__
    return name in ("NDIFError", "RemoteException", "ConnectionError", "TimeoutError") or any(
        base.__name__ in ("RequestException", "ConnectionError") for base in type(error).__mro__
    )


def _with_groups(step: LogitLens, groups: dict[str, Any]) -> LogitLens:
    """A copy of ``step`` that also sums ``groups`` (one batch's: a per-prompt group differs
    from batch to batch). A shallow copy: batches in flight at once (remote jobs) each have
    their own, and share the model and lenses."""
    return step.with_options(groups=groups)


def _keep_batch(
    result: Any,
    sets: list[str],
    token_strings: dict[int, str],
    fields: tuple[str, ...],
    groups: list[str] | None = None,
) -> dict[str, Any]:
    """What a data set keeps of one lens's result on a batch (:func:`~murano_widgets.dataset
    .table.keep_last`: its prompts' numbers at each one's last real position), and the text of
    the top-1 tokens there."""
    arrays = keep_last(result, _last_positions(result.attention_mask), sets, fields, groups)
    for token in np.unique(arrays[TOKENS]).tolist():
        if token >= 0 and token not in token_strings:
            token_strings[token] = result.token_strings.get(token, "")
    return arrays


def _batch_contributions(result: Any, step: LogitLens, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A batch's direct logit attribution of its prompts' answers, ``[C, batch]`` and
    ``[batch]``."""
    labels = result.component_labels
    values, bias = result.answer_contributions, result.answer_contribution_bias
    if labels is None or values is None or bias is None:
        raise RuntimeError(
            "the step was asked for decompose=True but its result has no answer_contributions"
        )
    expected = list(step.components.labels) if step.components is not None else None
    if list(labels) != expected:
        raise RuntimeError("the step's component_labels differ from its component layout's")
    if tuple(values.shape) != (len(labels), n) or tuple(bias.shape) != (n,):
        raise RuntimeError(
            f"the step's answer_contributions has shape {tuple(values.shape)} and "
            f"answer_contribution_bias {tuple(bias.shape)}; expected {(len(labels), n)} "
            f"and {(n,)}"
        )
    return (
        values.detach().float().cpu().numpy().copy(),
        bias.detach().float().cpu().numpy().copy(),
    )


def _with_text(
    record: dict[str, Any], window: Window, positions: np.ndarray, sets: list[str]
) -> dict[str, Any]:
    """A record with its prompts', answers' and foils' text (in batch order), for its shard."""
    items = [window.items[p] for p in positions]
    has_foils = record["has_foils"]
    return {
        **record,
        "prompts": [item.prompt for item in items],
        "answers": {name: [item.answers[s] for item in items] for s, name in enumerate(sets)},
        "foils": [item.foil for item in items] if has_foils else None,
    }


def token_lengths(model: Any, prompts: list[str]) -> np.ndarray:
    """Each prompt's token count, checked against the model's context before any model work."""
    lengths = np.empty(len(prompts), dtype=np.int64)
    # In slices: a fast tokenizer keeps a full encoding (tokens, offsets, ...) per prompt, a few
    # kB each, which over the whole data set would be the largest thing this function makes.
    for start in range(0, len(prompts), _TOKENIZE_SLICE):
        encoded = model.tokenizer(
            prompts[start : start + _TOKENIZE_SLICE],
            return_attention_mask=False,
            return_token_type_ids=False,
        )
        lengths[start : start + len(encoded["input_ids"])] = [len(i) for i in encoded["input_ids"]]
    limit = getattr(model, "context_length", None)
    if limit is not None and lengths.max() > limit:
        longest = int(lengths.argmax())
        raise ValueError(
            f"prompts[{longest}] is {int(lengths[longest])} tokens long, more than the model's "
            f"context of {limit} tokens; shorten it"
        )
    return lengths


def batch_order(lengths: Sequence[int] | np.ndarray) -> np.ndarray:
    """The prompt indices sorted by token length (ties kept in order): consecutive slices of it
    are batches of similar length, so padding stays small."""
    return np.argsort(np.asarray(lengths), kind="stable")


def _last_positions(attention_mask: torch.Tensor) -> torch.Tensor:
    """Each prompt's last real position in the padded sequence (left or right padding)."""
    seq = attention_mask.shape[1]
    return (attention_mask.bool().long() * torch.arange(1, seq + 1)).argmax(dim=1)
