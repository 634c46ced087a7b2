"""A data set's inputs as a stream: prompts, answers and foils from any iterable, checked item by
item, tokenized a slice at a time, grouped by length within a window, cut into batches by a
token budget.

Nothing here holds more than one window of inputs: a window is a few batches' worth of prompts
(``WINDOW_BATCHES`` batches), read from the stream, tokenized once, sorted by token length and
cut into batches, so that padding stays small without sorting the whole data set (which a stream
of unknown length cannot be). The windows and batches depend only on the inputs and the batching
options, so a run that is interrupted and called again cuts exactly the same batches: that is
what makes a folder of shards resumable (see :mod:`murano_widgets.dataset.shards`).

Every input is checked as it arrives, with the message the list checks give, naming the item by
its index in the whole stream (and by its line, for a file of lines): ``prompts[12345] is empty
or only white space``. A stream's inputs are zipped strictly: one that ends before another is an
error naming where.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from murano_widgets._checks import check_int, check_text
from murano_widgets.types import (
    PROMPT_NEEDS,
    check_answer,
    validate_answers,
    validate_foils,
    validate_prompts,
)

__all__ = [
    "Batching",
    "Inputs",
    "Item",
    "Window",
    "cut_batches",
    "resolve_batching",
    "text_lines",
    "windows",
]

#: Batches per window: prompts are sorted by length within a window of this many batches.
#: Measured on the demo model's prompts (4 to 18 tokens), padding is then 1-3 % of the
#: positions run, against 0.3 % for a sort over the whole data set (see bench/lens_dataset.py).
WINDOW_BATCHES = 16
#: Prompts tokenized per tokenizer call (a fast tokenizer's batch call, without holding more).
TOKENIZE_SLICE = 256
#: The automatic token budget keeps a batch's saved block outputs (every layer's residual
#: stream, ``n_layers · tokens · d_model`` values of the model's dtype) near this many bytes
#: (four times as many on an accelerator, whose memory is its own).
STATE_BYTES = 256 * 2**20
#: ... within these bounds, in tokens (padding included) per batch. The step holds more than the
#: saved states while a batch runs (the forward pass's activations: about 13 kB a token on the
#: demo model, whose saved states are 3.5 kB), so a small model's batches stop at 8,192 tokens:
#: their fixed cost is then a few per cent of their time, and a data set of 10,000 prompts
#: already fills them, so that its peak memory is a data set of 100,000's (measured: 16,384
#: tokens a batch gave 10,000 prompts smaller batches and a peak 20 % below 100,000's).
MIN_AUTO_TOKENS, MAX_AUTO_TOKENS = 256, 8192
DEFAULT_SET = "answer"
"""The name a plain list of answers gets (the step's name for it)."""

# A file of lines: the line's own ending goes, nothing else of it.
_LINE_END = re.compile(r"\r?\n\Z")


def text_lines(path: str | os.PathLike[str], *, encoding: str = "utf-8") -> Iterator[str]:
    """The lines of a text file, one at a time, without their line endings (``\\n`` or
    ``\\r\\n``): a file of prompts (or answers, or foils) for :func:`lens_dataset`, read
    lazily so that a file of a million prompts is never in memory at once.

    ``lens_dataset(model, Path("prompts.txt"), Path("answers.txt"))`` reads files this way
    itself; a bad line (empty, or not valid text) is then named by its index and line number.

    Raises:
        FileNotFoundError: If the file does not exist (when the first line is read).
        ValueError: If a line is not valid text in ``encoding``, naming the file and the line.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"the file of lines {str(path)!r} does not exist")
    with open(path, "rb") as file:
        for number, raw in enumerate(file, start=1):
            try:
                line = raw.decode(encoding)
            except UnicodeDecodeError as error:
                raise ValueError(
                    f"line {number} of {str(path)!r} is not {encoding} text (byte "
                    f"0x{raw[error.start]:02x} at column {error.start + 1})"
                ) from None
            if number == 1 and line.startswith("\ufeff"):
                line = line[1:]  # a byte-order mark some editors write
            yield _LINE_END.sub("", line)


@dataclass(slots=True)
class Item:
    """One prompt of the stream, checked: its index, text, answers (per set) and foil."""

    index: int
    prompt: str
    answers: tuple[list[str] | None, ...]
    foil: str | None = None


@dataclass
class _Source:
    """One input (``prompts``, ``answers``, ``answers['x']``, ``foils``): what to iterate, the
    argument's name, and the file it reads, if any (for messages)."""

    name: str
    values: Iterable[Any]
    file: Path | None = None

    def where(self, index: int) -> str:
        line = f" (line {index + 1} of {str(self.file)!r})" if self.file is not None else ""
        return f"{self.name}[{index}]{line}"


class Inputs:
    """The inputs of one :func:`lens_dataset` call, as a stream of checked :class:`Item`.

    Args:
        prompts: The prompts: a list, a tuple, a generator, a pandas Series, a ``datasets``
            column, a ``pathlib.Path`` of a file of lines, any iterable of strings. Or, with
            ``answers=None``, an iterable of ``(prompt, answer)`` pairs (``(prompt, answer,
            foil)``), where an answer may be a dict of named sets.
        answers: One answer per prompt (a string, a list of accepted strings, or ``None``) as
            any such iterable, or a dict of named sets, each such an iterable; or ``None`` when
            ``prompts`` yields pairs.
        foils: One foil per prompt (a string or ``None``) as any such iterable, or ``None``.
        decompose: Whether the run decomposes (foils give the logit difference with or
            without it).

    Lists and tuples are checked whole here, before any model work, as they always were; other
    iterables are checked item by item as they are read.

    Raises:
        TypeError, ValueError: For inputs that are not iterables of the right kind, lists of
            different lengths, or (for lists) a bad entry, naming it.
    """

    def __init__(self, prompts: Any, answers: Any, foils: Any, decompose: bool) -> None:
        self.pairs = answers is None
        self.decompose = decompose
        self.total: int | None = None
        self.checked = False
        self._answer_cache: dict[tuple[str, ...], list[str]] = {}
        self.prompts = _source("prompts", prompts)
        if self.pairs:
            if foils is not None:
                raise ValueError(
                    "foils come in the pairs when prompts yields (prompt, answer) pairs: give "
                    "(prompt, answer, foil) triples, or give answers and foils as arguments"
                )
            self.answers: dict[str, _Source] | None = None
            self.foils: _Source | None = None
            self.named: bool | None = None  # known from the first pair
            self.set_names: list[str] | None = None
            self.has_foils: bool | None = None
            self.total = _length(self.prompts)
            return
        if isinstance(answers, Mapping):
            if not answers:
                raise ValueError("answers is an empty dict: give at least one named answer set")
            for name in answers:
                if not isinstance(name, str) or not name.strip():
                    raise ValueError(
                        f"answers names must be non-empty strings, got {name!r} "
                        f"(in {list(answers)!r})"
                    )
            self.named = True
            self.answers = {
                name: _source(f"answers[{name!r}]", values, "answers")
                for name, values in answers.items()
            }
        else:
            self.named = False
            self.answers = {DEFAULT_SET: _source("answers", answers, "answers")}
        self.set_names = list(self.answers)
        self.foils = None if foils is None else _source("foils", foils, "foils")
        self.has_foils = self.foils is not None
        sources = [self.prompts, *self.answers.values(), *([self.foils] if self.foils else [])]
        lengths = [_length(source) for source in sources]
        self.total = lengths[0]
        if all(isinstance(source.values, (list, tuple)) for source in sources):
            self._check_lists()
        elif self.total is not None:
            # Sized inputs of other kinds (a pandas Series, a datasets column) are streamed, but
            # their lengths are compared now, before any model work.
            for source, length in zip(sources[1:], lengths[1:], strict=True):
                if length is not None and length != self.total:
                    raise ValueError(
                        f"{source.name} has {length} entries for {self.total} prompts: give "
                        "one per prompt (None where a prompt has none)"
                    )

    def _check_lists(self) -> None:
        """Lists and tuples, checked whole before any model work (the messages of the step)."""
        assert self.answers is not None
        prompts = validate_prompts(self.prompts.values)
        given = {name: source.values for name, source in self.answers.items()}
        sets = validate_answers(
            given if self.named else given[DEFAULT_SET], len(prompts), argument="answers"
        )
        self.prompts.values = prompts
        for name, source in self.answers.items():
            source.values = [self._shared(entry) for entry in sets[name]]
        if self.foils is not None:
            self.foils.values = validate_foils(self.foils.values, len(prompts))
            if all(foil is None for foil in self.foils.values):
                raise ValueError("foils has no foil for any prompt (all None); leave foils=None")
        self.total = len(prompts)
        self.checked = True

    def describe(self) -> str:
        """What the prompts come from, for the provenance: ``"list"``, ``"generator"``, the
        file's name, ..."""
        if self.prompts.file is not None:
            return f"file {self.prompts.file.name}"
        return type(self.prompts.values).__name__

    # -- the stream --------------------------------------------------------------------------

    def __iter__(self) -> Iterator[Item]:
        if self.pairs:
            yield from self._pairs()
            return
        assert self.answers is not None
        sources = [self.prompts, *self.answers.values(), *([self.foils] if self.foils else [])]
        iterators = [iter(source.values) for source in sources]
        index = 0
        while True:
            values = []
            for iterator in iterators:
                try:
                    values.append(next(iterator))
                except StopIteration:
                    values.append(_END)
            ended = [source for source, value in zip(sources, values, strict=True) if value is _END]
            if len(ended) == len(sources):
                return
            if ended:
                going = [s for s in sources if s not in ended]
                raise ValueError(
                    f"{ended[0].name} ended after {index} entries, but {going[0].name} goes on "
                    f"({going[0].where(index)} has no partner in {ended[0].name}): the inputs "
                    "are zipped strictly, one entry each per prompt"
                )
            prompt, *rest = values
            n_sets = len(self.answers)
            yield self._item(index, prompt, rest[:n_sets], rest[n_sets] if self.foils else None)
            index += 1

    def _pairs(self) -> Iterator[Item]:
        for index, pair in enumerate(self.prompts.values):
            where = self.prompts.where(index)
            if isinstance(pair, str) or not isinstance(pair, (tuple, list)):
                raise TypeError(
                    f"{where} must be a (prompt, answer) pair, got {type(pair).__name__} "
                    f"{pair!r:.60}: with answers=None the prompts come in pairs; give answers "
                    "as the third argument, lens_dataset(model, prompts, answers)"
                )
            if len(pair) not in (2, 3):
                raise ValueError(
                    f"{where} has {len(pair)} entries; expected (prompt, answer) or "
                    "(prompt, answer, foil)"
                )
            prompt, answer = pair[0], pair[1]
            foil = pair[2] if len(pair) == 3 else None
            if self.named is None:
                self.named = isinstance(answer, Mapping)
                if self.named:
                    if not answer:
                        raise ValueError(f"{where}'s answer is an empty dict of answer sets")
                    self.set_names = list(answer)
                    for name in self.set_names:
                        if not isinstance(name, str) or not name.strip():
                            raise ValueError(
                                f"answers names must be non-empty strings, got {name!r} "
                                f"(in {where})"
                            )
                else:
                    self.set_names = [DEFAULT_SET]
                self.has_foils = len(pair) == 3
            if (len(pair) == 3) != self.has_foils:
                raise ValueError(
                    f"{where} has {len(pair)} entries, the first pair had "
                    f"{3 if self.has_foils else 2}: give every prompt a foil (None for none), "
                    "or none"
                )
            assert self.set_names is not None
            if self.named:
                if not isinstance(answer, Mapping) or list(answer) != self.set_names:
                    got = list(answer) if isinstance(answer, Mapping) else type(answer).__name__
                    raise ValueError(
                        f"{where}'s answer must be a dict of the answer sets {self.set_names} "
                        f"(as the first pair's), got {got}"
                    )
                answers = [answer[name] for name in self.set_names]
            else:
                if isinstance(answer, Mapping):
                    raise ValueError(
                        f"{where}'s answer is a dict of answer sets, the first pair's was not"
                    )
                answers = [answer]
            yield self._item(index, prompt, answers, foil)

    def _item(self, index: int, prompt: Any, answers: list[Any], foil: Any) -> Item:
        """One prompt's entries checked (unless the lists were checked whole)."""
        if self.checked:
            return Item(index, prompt, tuple(answers), foil)
        check_prompt(prompt, self.prompts.where(index))
        assert self.set_names is not None
        checked = []
        for name, entry in zip(self.set_names, answers, strict=True):
            if self.answers is not None:
                where = self.answers[name].where(index)
            elif self.named:
                where = f"{self.prompts.where(index)}'s answer {name!r}"
            else:
                where = f"{self.prompts.where(index)}'s answer"
            checked.append(self._shared(check_answer(entry, where)))
        if foil is not None:
            where = self.foils.where(index) if self.foils else f"{self.prompts.where(index)}'s foil"
            check_foil(foil, where)
        return Item(index, prompt, tuple(checked), foil)

    def _shared(self, forms: list[str] | None) -> list[str] | None:
        """One list object for equal answers (a million prompts with a few hundred distinct
        answers keep a few hundred lists, not a million)."""
        if forms is None:
            return None
        key = tuple(forms)
        found = self._answer_cache.get(key)
        if found is None:
            if len(self._answer_cache) >= 1 << 16:
                self._answer_cache.clear()  # mostly distinct answers: sharing saves nothing
            found = self._answer_cache[key] = list(forms)
        return found


_END = object()


def _source(name: str, values: Any, kind: str = "prompts") -> _Source:
    """One input as something to iterate, refusing what cannot be one (with a hint).

    ``kind`` is ``"prompts"``, ``"answers"`` or ``"foils"``: what each entry must be, for the
    messages (those of the list checks)."""
    wanted = {
        "prompts": "a list of strings",
        "answers": "a list with one answer per prompt (a string, a list of accepted strings, "
        "or None)",
        "foils": "a list with one string (or None) per prompt",
    }[kind]
    if isinstance(values, os.PathLike):
        return _Source(name, text_lines(values), Path(values))
    if isinstance(values, str):
        if kind == "prompts":
            raise TypeError(
                f"{name} must be a list of strings, got a single string {values[:40]!r}; "
                f"wrap it in a list: [{values[:40]!r}] (a file of prompts: pathlib.Path(...))"
            )
        raise TypeError(
            f"{name} must be {wanted}, got str {values[:40]!r}; for one prompt write "
            f"[{values[:40]!r}]"
        )
    if isinstance(values, (bytes, bytearray)):
        raise TypeError(f"{name} must be {wanted}, got {type(values).__name__}")
    if hasattr(values, "columns") and hasattr(values, "iloc"):
        raise TypeError(
            f"{name} is a pandas DataFrame (iterating it gives its column names): pass one "
            f"column, e.g. df[{kind.rstrip('s')!r}]"
        )
    if isinstance(values, Mapping) or not hasattr(values, "__iter__"):
        hint = (
            "; a datasets.Dataset or dict of columns: pass one column, e.g. ds['prompt']"
            if kind == "prompts"
            and (isinstance(values, Mapping) or hasattr(values, "column_names"))
            else ""
        )
        raise TypeError(f"{name} must be {wanted}, got {type(values).__name__}{hint}")
    if isinstance(values, (set, frozenset)):
        raise TypeError(
            f"{name} must be {wanted} in the order of the prompts, got a "
            f"{type(values).__name__}; use a list (e.g. sorted(...))"
        )
    if hasattr(values, "read") and hasattr(values, "readline"):
        raise TypeError(
            f"{name} is an open file: its lines end with a newline, which the model would "
            "read; pass the file's path as a pathlib.Path (or text_lines(path))"
        )
    return _Source(name, values)


def _length(source: _Source) -> int | None:
    """The number of entries, where the input knows it without being read (a list, a Series)."""
    if source.file is not None or isinstance(source.values, Iterator):
        return None
    try:
        return len(source.values)  # type: ignore[arg-type]
    except TypeError:
        return None


def check_prompt(prompt: Any, where: str) -> None:
    """One prompt: :func:`~murano_widgets._checks.check_text`, as :func:`validate_prompts`."""
    check_text(prompt, where, role=PROMPT_NEEDS)


def check_foil(foil: Any, where: str) -> None:
    """One foil (a non-empty string): :func:`~murano_widgets._checks.check_text`."""
    check_text(foil, where, blank=True, optional=True)


# ---------------------------------------------------------------------------------------------
# Batching


@dataclass(frozen=True)
class Batching:
    """How a stream is cut: at most ``batch_tokens`` positions (prompts × the longest prompt's
    tokens) and at most ``batch_size`` prompts a batch (either may be ``None``: no limit), the
    prompts sorted by length within windows of ``WINDOW_BATCHES`` batches."""

    batch_size: int | None
    batch_tokens: int | None
    auto: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size,
            "batch_tokens": self.batch_tokens,
            "window_batches": WINDOW_BATCHES,
        }


def resolve_batching(
    model: Any, n_saved_layers: int, batch_size: Any, batch_tokens: Any, remote: bool = False
) -> Batching:
    """The batching of a run, from ``batch_size`` and ``batch_tokens``.

    Precedence: ``batch_tokens`` sets a budget of positions per batch (the prompts times the
    longest one's tokens, padding included) and ``batch_size`` caps the prompts per batch; give
    ``batch_size`` alone for batches of exactly that many prompts (the old behaviour), neither
    for the automatic budget (:func:`auto_batch_tokens`).

    Raises:
        ValueError: For a ``batch_size`` or ``batch_tokens`` that is not a positive int.
    """
    if batch_size is not None:
        batch_size = check_int("batch_size", batch_size, 1, None, None)
    if batch_tokens is not None:
        batch_tokens = check_int("batch_tokens", batch_tokens, 1, None, None)
    if batch_tokens is None and batch_size is None:
        return Batching(None, auto_batch_tokens(model, n_saved_layers, remote), auto=True)
    return Batching(batch_size, batch_tokens)


def auto_batch_tokens(model: Any, n_saved_layers: int, remote: bool = False) -> int:
    """The default token budget: a batch's saved block outputs (``n_saved_layers · tokens ·
    d_model`` values of the model's dtype) near ``STATE_BYTES``, within
    ``[MIN_AUTO_TOKENS, MAX_AUTO_TOKENS]``, rounded down to a power of two.

    On the CPU the demo model (6 layers, d_model 128) gets the maximum, 8,192; GPT-2 small
    (12 layers, 768, float32) 4,096; a 7B model (32 layers, 4,096, bfloat16) 512, and 2,048 on
    an accelerator: large batches where a token is cheap, so few runs of the step (and few
    small parallel regions on a busy machine), and bounded memory where it is not. A remote
    run (NDIF's accelerators; every job costs a round trip) takes the accelerator's budget.
    """
    config = getattr(model, "config", None)
    width = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None) or 1024
    dtype = getattr(model, "dtype", None)
    itemsize = getattr(dtype, "itemsize", 4) or 4
    device = getattr(getattr(model, "device", None), "type", "cpu")
    budget = STATE_BYTES * (1 if device == "cpu" and not remote else 4)
    per_token = max(1, n_saved_layers) * int(width) * int(itemsize)
    tokens = max(MIN_AUTO_TOKENS, min(MAX_AUTO_TOKENS, budget // per_token))
    return 1 << (tokens.bit_length() - 1)


def cut_batches(lengths: Sequence[int], batching: Batching) -> list[np.ndarray]:
    """A window's batches: positions into ``lengths``, sorted by length (ties in order), cut
    where the next prompt would take the batch past its budget, or would pad it more than a
    batch costs.

    A batch's cost is its prompts times its longest prompt's tokens (the padded rectangle the
    model runs), plus a fixed cost of its own (a trace, the reductions' setup). With prompts
    sorted, the longest is the one just added: adding a prompt longer than the batch's longest
    pads every prompt already in it by the difference. A batch is closed before its padding
    would exceed that fixed cost, taken as ``batch_tokens // 64`` positions (at least 32). So a
    small data set whose lengths spread widely is cut by length, not run as one wide batch, and
    a large one fills batches up to the budget. A prompt longer than the whole budget makes a
    batch of its own. With ``batch_size`` alone, every batch has exactly that many prompts.
    """
    order = np.argsort(np.asarray(lengths, dtype=np.int64), kind="stable")
    size, budget = batching.batch_size, batching.batch_tokens
    fixed = None if budget is None else max(32, budget // 64)
    batches: list[np.ndarray] = []
    start = 0
    n = len(order)
    while start < n:
        stop = start + 1
        total = int(lengths[order[start]])  # the batch's real tokens
        while stop < n:
            count = stop - start + 1
            length = int(lengths[order[stop]])
            if size is not None and count > size:
                break
            if budget is not None:
                if count * length > budget:
                    break
                if fixed is not None and count * length - (total + length) > fixed:
                    break
            total += length
            stop += 1
        batches.append(order[start:stop])
        start = stop
    return batches


# ---------------------------------------------------------------------------------------------
# Windows


@dataclass
class Window:
    """A few batches' worth of the stream, tokenized: what one round of the run reads.

    Attributes:
        number: The window's position in the stream (0, 1, ...).
        start: The stream index of its first prompt (its prompts are ``start, start + 1, ...``).
        items: Its prompts, checked.
        tokens: Every prompt's token ids, one after another (int32: 4 bytes a token, not the
            36 of a list of Python ints).
        offsets: Where each prompt's ids start in ``tokens`` (and, last, where they end).
        hashes: The running sha256 of the stream's prompts, answers and foils through this
            window's last prompt (what a resumed run checks its shards against).
    """

    number: int
    start: int
    items: list[Item]
    tokens: np.ndarray
    offsets: np.ndarray
    hashes: dict[str, str] = field(default_factory=dict)

    @property
    def stop(self) -> int:
        return self.start + len(self.items)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def ids(self, position: int) -> list[int]:
        """The token ids of the window's prompt at ``position``."""
        return self.tokens[self.offsets[position] : self.offsets[position + 1]].tolist()


class _Hashes:
    """Running sha256 digests of the stream, one per kind of input, so that a change is named
    by what changed (the prompts, the answers or the foils)."""

    def __init__(self) -> None:
        self.digests = {kind: hashlib.sha256() for kind in ("prompts", "answers", "foils")}

    def add(self, item: Item) -> None:
        for kind, value in (
            ("prompts", item.prompt),
            ("answers", list(item.answers)),
            ("foils", item.foil),
        ):
            data = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
            self.digests[kind].update(len(data).to_bytes(8, "little") + data)

    def now(self) -> dict[str, str]:
        return {kind: digest.copy().hexdigest() for kind, digest in self.digests.items()}


def windows(inputs: Iterable[Item], model: Any, batching: Batching) -> Iterator[Window]:
    """The stream as windows of ``WINDOW_BATCHES`` batches' worth of prompts, tokenized.

    A window closes once its prompts' tokens reach ``WINDOW_BATCHES · batch_tokens`` (or its
    prompts ``WINDOW_BATCHES · batch_size`` with ``batch_size`` alone). Prompts are tokenized
    ``TOKENIZE_SLICE`` at a time (one call of a fast tokenizer), each checked against the
    model's context.

    Raises:
        ValueError: For a prompt longer than the model's context, naming its index.
    """
    tokenizer = model.tokenizer
    limit = getattr(model, "context_length", None)
    if batching.batch_tokens is not None:
        token_cap, count_cap = WINDOW_BATCHES * batching.batch_tokens, None
        if batching.batch_size is not None:
            count_cap = WINDOW_BATCHES * batching.batch_size
    else:
        assert batching.batch_size is not None
        token_cap, count_cap = None, WINDOW_BATCHES * batching.batch_size
    hashes = _Hashes()
    number = start = 0
    items: list[Item] = []
    flat = array("i")  # the window's token ids, 4 bytes each
    lengths: list[int] = []
    tokens = 0

    def close() -> Window:
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        ids = np.frombuffer(flat, dtype=np.int32).copy() if flat else np.zeros(0, np.int32)
        return Window(number, start, items, ids, offsets, hashes.now())

    stream = iter(inputs)
    ended = False
    while not ended:
        pending = []
        for item in stream:
            pending.append(item)
            if len(pending) == TOKENIZE_SLICE:
                break
        else:
            ended = True
        if not pending:
            break
        encoded = tokenizer(
            [item.prompt for item in pending],
            return_attention_mask=False,
            return_token_type_ids=False,
        )["input_ids"]
        for item, item_ids in zip(pending, encoded, strict=True):
            if limit is not None and len(item_ids) > limit:
                raise ValueError(
                    f"prompts[{item.index}] is {len(item_ids)} tokens long, more than the "
                    f"model's context of {limit} tokens; shorten it"
                )
            hashes.add(item)
            items.append(item)
            flat.extend(item_ids)
            lengths.append(len(item_ids))
            tokens += len(item_ids)
            if (token_cap is not None and tokens >= token_cap) or (
                count_cap is not None and len(items) >= count_cap
            ):
                yield close()
                number, start = number + 1, start + len(items)
                items, flat, lengths, tokens = [], array("i"), [], 0
        del pending, encoded
    if items:
        yield close()
