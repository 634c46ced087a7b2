"""The lens over what the model writes: generate with nnsight, then read prompt and reply.

``show_logit_lens(model, prompt, generate=N)`` (and :func:`murano_widgets.run.run_logit_lens`,
its result without the widget) tokenizes each prompt (or applies a chat template, see :mod:`murano_widgets.chat`),
lets the model continue it by up to ``N`` tokens through nnsight's ``generate``, then runs the
:class:`~murano_widgets.step.logit_lens.LogitLens` step once over the prompt's and the generated
tokens, reading the token ids exactly as they were produced (never re-tokenized from text).

Two passes, not the lens inside generation; ``bench/generation.py`` measures both side by side.
The lens inside generation (every layer's block output saved at every step) costs nothing
measurable on top of generation, while the second pass costs one forward pass over prompt +
reply: on a GPT-2-small-shaped model, 4 prompts of 32 tokens and 16 new ones, generation took
2.34 s (transformers' own ``generate``: 2.38 s), saving inside it -0.13 s (noise), the second
pass 0.53 s, and the whole two-pass lens 5.40 s (most of it the unembedding of 12 layers). So
the lens inside generation is cheaper, by about one forward pass (a tenth of the whole here).
Two passes are kept because the second pass is the :class:`~murano_widgets.LogitLens` step
itself: answers, targets and the tuned lens work as for any prompt, and the numbers are
exactly those of the lens over the same token ids (the reference the tests check). Generation
runs locally: ``remote=True`` with ``generate`` is refused.
Reading the saved steps would need the step to take block outputs it did not trace itself.

Choices:
- Greedy by default (``do_sample=False``); sampling draws from the model's distribution with
  ``temperature`` and ``top_p`` and, with ``seed``, the same tokens on every run. The seed is
  used in a forked random state: the caller's torch random state is left as it was. Other
  generation settings are the model's ``generation_config``'s (transformers' default ``top_k``
  of 50 among them).
- Generation stops at the model's end-of-sequence token: it is kept as the reply's last token
  (the lens shows where the model decided to stop), and nothing after it is read.
- Prompts of equal token length are generated in one batch; prompts of other lengths in batches
  of their own, so no prompt is ever padded and each continues exactly as it would alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import torch

from murano_widgets._checks import check_bool, check_float

__all__ = [
    "GENERATION_KEYWORDS",
    "Generated",
    "Generation",
    "GenerationOptions",
    "check_generation",
    "generate_tokens",
    "nnsight_generate",
]


@dataclass(frozen=True)
class GenerationOptions:
    """How to generate: checked by :func:`check_generation`.

    Attributes:
        max_new_tokens: At most this many tokens per prompt (fewer when the model ends its
            reply with its end-of-sequence token).
        do_sample: Sample (``True``) or take the most likely token (``False``, greedy).
        temperature: Sampling temperature, or ``None`` for the model's default.
        top_p: Nucleus sampling's probability mass, or ``None`` for the model's default.
        seed: The seed of the sampling's random state, or ``None`` for torch's current one.
    """

    max_new_tokens: int
    do_sample: bool = False
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None

    def generate_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of transformers' ``generate`` these options stand for."""
        kwargs: dict[str, Any] = {
            "max_new_tokens": self.max_new_tokens,
            "do_sample": self.do_sample,
        }
        if self.do_sample:
            if self.temperature is not None:
                kwargs["temperature"] = self.temperature
            if self.top_p is not None:
                kwargs["top_p"] = self.top_p
        return kwargs


@dataclass
class Generated:
    """Prompts with their generated continuations, as token ids.

    Attributes:
        ids: Each prompt's token ids followed by its generated ones.
        starts: Where each generation starts: the index, among the prompt's tokens, of the
            first generated token (the prompt's own length).
        texts: The generated text of each prompt (special tokens such as the end of sequence
            left out).
    """

    ids: list[list[int]]
    starts: list[int]
    texts: list[str]


def check_generation(
    generate: Any,
    do_sample: Any = False,
    temperature: Any = None,
    top_p: Any = None,
    seed: Any = None,
) -> GenerationOptions | None:
    """Checks the generation arguments (before any model work).

    Returns:
        The options, or ``None`` when ``generate`` is ``None`` (no generation).

    Raises:
        ValueError: For a ``generate`` that is not an int of at least 1, a ``temperature`` not
            above 0, a ``top_p`` outside (0, 1], a negative or non-integer ``seed``, or a
            sampling argument (``do_sample``, ``temperature``, ``top_p``, ``seed``) given
            without what it applies to.
        TypeError: For a ``do_sample`` that is not a bool.
    """
    do_sample = check_bool("do_sample", do_sample)
    if generate is None:
        given = [
            name
            for name, value, default in (
                ("do_sample", do_sample, False),
                ("temperature", temperature, None),
                ("top_p", top_p, None),
                ("seed", seed, None),
            )
            if value is not default
        ]
        if given:
            raise ValueError(
                f"{', '.join(given)} only apply to generation: pass generate=N (the number of "
                "tokens to generate) as well, or leave them out"
            )
        return None
    if isinstance(generate, (bool, np.bool_)) or not isinstance(generate, (int, np.integer)):
        raise ValueError(
            "generate must be None or an int of at least 1 (how many tokens to generate), "
            f"got {type(generate).__name__} {generate!r}"
        )
    if generate < 1:
        raise ValueError(
            f"generate must be an int of at least 1 (how many tokens to generate), got {generate}"
        )
    if not do_sample:
        given = [
            name
            for name, value in (("temperature", temperature), ("top_p", top_p), ("seed", seed))
            if value is not None
        ]
        if given:
            raise ValueError(
                f"{', '.join(given)} only apply to sampling, and generation is greedy by "
                "default: pass do_sample=True to sample, or leave them out"
            )
    if temperature is not None:
        temperature = check_float("temperature", temperature, 0, None, low_open=True)
    if top_p is not None:
        top_p = check_float("top_p", top_p, 0, 1, low_open=True)
    if seed is not None:
        if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
            raise ValueError(
                f"seed must be None or an int from 0 to 2**63 - 1, got {type(seed).__name__} "
                f"{seed!r}"
            )
        if not 0 <= seed < 2**63:
            raise ValueError(f"seed must be an int from 0 to 2**63 - 1, got {seed}")
        seed = int(seed)
    return GenerationOptions(int(generate), do_sample, temperature, top_p, seed)


@dataclass(frozen=True)
class Generation:
    """What the model generates after each prompt (or chat) before the lens reads it: the
    generation options as one record, checked when it is made.

    ``run_logit_lens(model, prompts, generation=Generation(generate=8, do_sample=True))``; the
    same options as keywords (``run_logit_lens(model, prompts, generate=8)``, as
    :func:`~murano_widgets.show_logit_lens` and :class:`~murano_widgets.LiveSession` take them
    too) are read into this record by :meth:`from_keywords`, the one place that maps them.

    Attributes:
        generate: Generate up to this many tokens after each prompt (or chat); ``None`` for no
            generation.
        do_sample: Sample rather than take the most likely token (greedy, the default).
        temperature: Sampling temperature (only with ``do_sample=True``).
        top_p: Nucleus sampling's probability mass (only with ``do_sample=True``).
        seed: Makes sampling reproducible (only with ``do_sample=True``).
        add_generation_prompt: With chats: end each with the template's opening of an
            assistant turn (what a chat model reads before it replies).

    Raises:
        ValueError, TypeError: For a bad option, naming it (see :func:`check_generation`).
    """

    generate: int | None = None
    do_sample: bool = False
    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    add_generation_prompt: bool = True
    #: How to generate (``None``: no generation), as :func:`generate_tokens` takes it.
    options: GenerationOptions | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        options = check_generation(
            self.generate, self.do_sample, self.temperature, self.top_p, self.seed
        )
        # Frozen: the checked values are set once, here.
        object.__setattr__(self, "options", options)
        object.__setattr__(
            self,
            "add_generation_prompt",
            check_bool("add_generation_prompt", self.add_generation_prompt),
        )
        if options is not None:
            for name in ("generate", "temperature", "top_p", "seed"):
                value = getattr(options, "max_new_tokens" if name == "generate" else name)
                object.__setattr__(self, name, value)

    @classmethod
    def from_keywords(
        cls, generation: Generation | None, options: Mapping[str, Any]
    ) -> tuple[Generation, dict[str, Any]]:
        """The record from ``generation`` or from the options' generation keywords
        (:data:`GENERATION_KEYWORDS`), and the other options.

        Raises:
            TypeError: For a ``generation`` that is not a :class:`Generation`, or given with
                generation keywords as well.
            ValueError: For a bad generation option, naming it.
        """
        keywords = {key: options[key] for key in GENERATION_KEYWORDS if key in options}
        rest = {key: value for key, value in options.items() if key not in keywords}
        if generation is None:
            return cls(**keywords), rest
        if not isinstance(generation, Generation):
            raise TypeError(
                "generation must be a murano_widgets.Generation, e.g. "
                f"Generation(generate=8); got {type(generation).__name__} {generation!r:.60}"
            )
        if keywords:
            raise TypeError(f"give generation=Generation(...) or {', '.join(keywords)}=, not both")
        return generation, rest

    def as_keywords(self) -> dict[str, Any]:
        """The options as the keywords :meth:`from_keywords` reads."""
        return {name: getattr(self, name) for name in GENERATION_KEYWORDS}


#: The generation options' keywords, as the entry points take them one by one.
GENERATION_KEYWORDS = tuple(item.name for item in fields(Generation) if item.init)


def nnsight_generate(lm: Any, inputs: dict[str, torch.Tensor], **generate_kwargs: Any) -> Any:
    """Runs nnsight's ``generate`` on an nnsight model and returns the token ids it produced.

    Works with nnsight 0.7 (``LanguageModel``, nnterp's ``StandardizedTransformer``) and 0.8
    (``TransformersModel``): both open a tracing context with ``lm.generate(...)`` whose
    tracer's ``result`` is the finished output (prompt and new tokens, ``[batch, prompt +
    new]``); 0.8 deprecates the older ``lm.generator.output``.
    Backends call it from their ``generate`` method.
    """
    import nnsight

    with (
        _quiet_transformers(),
        torch.inference_mode(),
        lm.generate(dict(inputs), **generate_kwargs) as tracer,
    ):
        # The finished ids: `tracer.result` in both (0.8 deprecates `lm.generator.output`).
        output = nnsight.save(tracer.result)
    output = getattr(output, "value", output)
    # transformers may return a ModelOutput (return_dict_in_generate): its sequences.
    return getattr(output, "sequences", output)


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Hides transformers' warnings during generation: nnsight sets a compile config that
    transformers then says it cannot use, a line that would print into the notebook cell."""
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)


def generate_tokens(
    model: Any, prompt_ids: Sequence[Sequence[int]], options: GenerationOptions
) -> Generated:
    """Continues each prompt by up to ``options.max_new_tokens`` tokens with ``model.generate``.

    Args:
        model: A model with a ``generate(inputs, **generate_kwargs)`` method returning the token
            ids (a :class:`~murano_widgets.MuranoModel` of either backend).
        prompt_ids: Each prompt's token ids.
        options: How to generate.

    Raises:
        TypeError: If the model cannot generate.
        ValueError: If a prompt with its new tokens would not fit a model with a table of
            absolute positions (checked before generating).
    """
    if not callable(getattr(model, "generate", None)):
        raise TypeError(
            f"generate=N needs a model that can generate, such as MuranoModel(...); "
            f"{type(model).__name__} has no generate method"
        )
    limit = getattr(model, "context_length", None)
    longest = max(len(ids) for ids in prompt_ids)
    if limit is not None and longest + options.max_new_tokens > limit:
        raise ValueError(
            f"generate={options.max_new_tokens} after a prompt of {longest} tokens makes "
            f"{longest + options.max_new_tokens} tokens, more than the model's context of "
            f"{limit} tokens; generate at most {max(0, limit - longest)} tokens"
        )
    tokenizer = model.tokenizer
    stops = _stop_ids(model)
    kwargs = options.generate_kwargs()
    if tokenizer.pad_token_id is not None:
        kwargs["pad_token_id"] = tokenizer.pad_token_id
    device = getattr(model, "device", torch.device("cpu"))
    # Equal lengths share a batch: no padding, so each prompt continues as it would alone.
    groups: dict[int, list[int]] = {}
    for index, ids in enumerate(prompt_ids):
        groups.setdefault(len(ids), []).append(index)
    new_ids: list[list[int]] = [[] for _ in prompt_ids]
    with _seeded(options.seed, device):
        for length, members in groups.items():
            input_ids = torch.tensor([list(prompt_ids[i]) for i in members], dtype=torch.long)
            inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}
            inputs = {key: value.to(device) for key, value in inputs.items()}
            output = torch.as_tensor(model.generate(inputs, **kwargs)).cpu()
            for row, index in enumerate(members):
                new_ids[index] = _until_stop(output[row, length:].tolist(), stops)
    texts = [tokenizer.decode(ids, skip_special_tokens=True) for ids in new_ids]
    return Generated(
        ids=[list(p) + n for p, n in zip(prompt_ids, new_ids, strict=True)],
        starts=[len(p) for p in prompt_ids],
        texts=texts,
    )


def _stop_ids(model: Any) -> set[int]:
    """The end-of-sequence ids generation stops at (the generation config's, or the tokenizer's)."""
    stops: set[int] = set()
    hf_model = _hf_model(model)
    config = getattr(hf_model, "generation_config", None)
    eos = getattr(config, "eos_token_id", None)
    if eos is None:
        eos = getattr(model.tokenizer, "eos_token_id", None)
    if isinstance(eos, int):
        stops.add(eos)
    elif isinstance(eos, (list, tuple)):
        stops.update(int(i) for i in eos)
    return stops


def _hf_model(model: Any) -> Any:
    for path in ("nnterp._model", "lm._module", "hf"):
        value = model
        for part in path.split("."):
            value = getattr(value, part, None)
        if value is not None:
            return value
    return None


def _until_stop(ids: list[int], stops: set[int]) -> list[int]:
    """The generated ids up to and including the first end-of-sequence token."""
    for index, token in enumerate(ids):
        if token in stops:
            return ids[: index + 1]
    return ids


@contextlib.contextmanager
def _seeded(seed: int | None, device: torch.device) -> Iterator[None]:
    """Seeds torch's random state for the block, then restores the caller's."""
    if seed is None:
        yield
        return
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield
