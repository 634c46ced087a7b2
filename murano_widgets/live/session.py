"""``LiveSession``: what a live widget runs with, checked once, and the step for one change.

A session holds the model, the rows (layers), the lens or lenses and every option of
:func:`~murano_widgets.run.run_logit_lens` that is not a prompt's own (``top_k``, ``decompose``,
``generate``, ``remote``, the initial ``targets``, ...), validated when it is made. Its methods
take the results a widget shows and return new ones, running the model only on what changed:

- :meth:`LiveSession.add` runs the step on the new prompt alone and appends it
  (:func:`~murano_widgets.results.combine.concat_results`);
- :meth:`LiveSession.remove` selects the other prompts, with no model work
  (:func:`~murano_widgets.results.combine.select_prompts`);
- :meth:`LiveSession.retarget` (tracking and untracking) runs every prompt again: targets are
  reduced at every cell, inside the step, so a new one needs the model at every position;
- :meth:`LiveSession.patch` runs :func:`~murano_widgets.patch_lens` on one prompt.

Each result equals what one :func:`~murano_widgets.run.run_logit_lens` call on all the prompts
gives (the tests check every field). The prompts a session re-runs are read back from the
results (their text and token ids, answers, foils, generated replies and chat roles), so a
re-run never generates again nor re-applies a chat template.

Chats and generation:

- A prompt added to a widget of chats (``chat=``) is a new chat of one user message, ``text``
  (or, from Python, a whole chat: a list of ``{"role", "content"}`` messages), through the
  tokenizer's chat template with the session's ``add_generation_prompt``.
- With ``generate=N`` a new prompt is continued as the others were (greedy by default; with
  ``do_sample=True`` and a ``seed`` its reply is sampled on its own with that seed, so it may
  differ from the one a call on all the prompts at once would have drawn).
- A new prompt has no answer (nor foil): its cells of the answer sets hold no value.

The model runs under one lock per model (:func:`model_lock`), so two widgets (or a widget and
a direct call of a session) never run it at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from murano_widgets._checks import check_bool, check_index, check_model, check_str
from murano_widgets.chat import apply_chat, check_chat
from murano_widgets.comparison.patching import PatchComparison
from murano_widgets.generation import Generation, generate_tokens
from murano_widgets.lenses import Lens
from murano_widgets.live.patching import check_patch, run_patch
from murano_widgets.live.worker import model_lock
from murano_widgets.options import PromptOptions
from murano_widgets.results import LensResults, LogitLensResult, lenses_of
from murano_widgets.results.combine import concat_results, padding_of, select_prompts
from murano_widgets.run import run_logit_lens
from murano_widgets.step.inputs import encoder_for, variant_forms
from murano_widgets.step.logit_lens import LogitLens
from murano_widgets.types import check_encodable, validate_targets

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from murano_widgets.options import RunOptions

__all__ = ["LiveSession", "model_lock"]

Results = LogitLensResult | LensResults

# The arguments that belong to the prompts, not to the session.
_PER_PROMPT = ("prompts", *PromptOptions.__annotations__)


@dataclass
class _Input:
    """One prompt as the step reads it: what a re-run needs, read back from a result."""

    text: str
    ids: list[int]
    answers: dict[str, list[str] | None] | None = None
    foil: str | None = None
    generated_text: str | None = None
    generation_start: int | None = None
    roles: list[str] | None = None


class LiveSession:
    """The model and the run options of a live lens widget, checked once.

    Made by :func:`~murano_widgets.show_logit_lens` (``w.session``), or by hand for
    ``LogitLensWidget(session.run(prompts), live=session)``.

    Args:
        model: The model, e.g. ``MuranoModel("gpt2")`` or ``load_demo_model()``.
        layers: ``"all"`` or a list of layer indices.
        lens: The lens, or several by name, as for
            :func:`~murano_widgets.run.run_logit_lens`.
        generation: What the model generates after every prompt (the added ones too), a
            :class:`~murano_widgets.Generation`; or its options one by one as keywords
            (``generate=8``), as for :func:`~murano_widgets.run.run_logit_lens`.
        **options: What :class:`~murano_widgets.LogitLens` takes and the generation options
            (:class:`~murano_widgets.options.RunOptions`: ``targets``, ``top_k``,
            ``decompose``, ``remote``, ``generate``, ...); ``targets`` are the initial ones (the
            widget's ``track`` and ``untrack`` change them).

    Raises:
        TypeError, ValueError: For a bad argument, naming it, before any model work; for a
            prompt's own argument (``answers``, ``foils``, ``chat``), which go to :meth:`run`.
    """

    def __init__(
        self,
        model: Any,
        layers: Sequence[int] | str = "all",
        *,
        lens: Lens | Mapping[str, Lens | None] | None = None,
        generation: Generation | None = None,
        **options: Unpack[RunOptions],
    ) -> None:
        check_model(model)
        for name in _PER_PROMPT:
            if name in options:
                raise TypeError(
                    f"LiveSession takes no {name}=: it belongs to the prompts; give it to "
                    f"session.run(prompts, {name}=...)"
                )
        self.model = model
        checked, step_options = Generation.from_keywords(generation, options)
        self.generation = checked.options
        self.add_generation_prompt = checked.add_generation_prompt
        # Before the step, whose remote=True also checks the installed nnsight: the arguments'
        # own conflict is said first.
        if self.generation is not None and check_bool("remote", step_options.get("remote", False)):
            raise ValueError(
                "generate= runs the model locally; with remote=True only the lens runs on NDIF. "
                "Generate locally (remote=False), or run the lens on a prompt that already holds "
                "the text"
            )
        #: The step every run copies (its targets aside), checked now: layers, lenses, options.
        self.step = LogitLens(model, layers, lens=lens, **step_options)
        self._run_options: dict[str, Any] = {
            "lens": lens,
            "generation": checked,
            **step_options,
        }
        self._layers = layers

    @property
    def padding_side(self) -> str:
        """The side the tokenizer pads on now (the step reads it at every run)."""
        return padding_of(self.model.tokenizer)[0]

    @property
    def pad_id(self) -> int:
        """The id the step pads ``input_ids`` with."""
        return padding_of(self.model.tokenizer)[1]

    @property
    def lens_names(self) -> list[str]:
        """The lenses, by name, in order (one lens: its kind)."""
        return list(self.step.lenses)

    def __repr__(self) -> str:
        generate = "" if self.generation is None else f", generate={self.generation.max_new_tokens}"
        return f"LiveSession({getattr(self.model, 'name', None)!r}, {self.step!r}{generate})"

    # -----------------------------------------------------------------------------------------
    # Runs

    def run(
        self,
        prompts: str | Sequence[str] | None = None,
        *,
        answers: Any = None,
        foils: Any = None,
        chat: Any = None,
    ) -> Results:
        """The first result of a widget: :func:`~murano_widgets.run.run_logit_lens` with the
        session's options.

        Args:
            prompts, answers, foils, chat: As for :func:`~murano_widgets.run.run_logit_lens`.
        """
        with model_lock(self.model):
            return run_logit_lens(
                self.model,
                prompts,
                self._layers,
                answers=answers,
                foils=foils,
                chat=chat,
                **self._run_options,
            )

    def check_result(self, results: Results) -> Results:
        """``results`` if this session could have made them (their rows, lenses, top-k,
        attribution and generation are the session's), as the session's own kind: a
        :class:`~murano_widgets.LogitLensResult` for one lens, else a
        :class:`~murano_widgets.LensResults`.

        Raises:
            ValueError: Naming what differs.
        """
        one = _first(results)
        step = self.step
        names = lenses_of(results).names
        checks = [
            ("rows", [str(n) for n in one.addresses], [str(n) for n in step.addresses]),
            ("lenses", names, self.lens_names),
            ("n_model_layers", one.n_model_layers, int(self.model.n_layers)),
            ("top_k", None if one.topk_tokens is None else one.topk_tokens.shape[-1], step.top_k),
            ("decompose", one.component_labels is not None, step.decompose),
            ("generation", one.generated_texts is not None, self.generation is not None),
            ("prompts", one.prompts is not None, True),
        ]
        for what, theirs, mine in checks:
            if theirs != mine:
                raise ValueError(
                    f"the result does not come from this session: its {what} is {theirs!r}, the "
                    f"session's {mine!r}; make the result with session.run(prompts)"
                )
        return self._native(results)

    def add(self, results: Results, prompt: str | Sequence[dict[str, str]]) -> Results:
        """``results`` with one more prompt, its lens run alone and appended.

        Args:
            results: What the widget shows.
            prompt: The new prompt's text; with chats, the text of a user message (a chat of
                that one message) or a whole chat (a list of ``{"role", "content"}`` messages).

        Returns:
            The results of every prompt, the new one last.

        Raises:
            TypeError, ValueError: For an empty or non-string prompt (or a bad chat), before
                any model work.
        """
        results = self._native(results)
        one = _first(results)
        new = self._new_input(prompt, chat=one.token_roles is not None)
        targets = one.targets
        with model_lock(self.model):
            if targets and self._target_ids(new, targets) != one.target_token_ids:
                # Targets are tokenized as they follow the first prompt: where the new prompt
                # alone would tokenize them otherwise, it runs beside the first one.
                pair = self._run_inputs([_input_of(one, 0), new], targets, one.foils is not None)
                part = select_prompts(pair, [1], padding_side=self.padding_side)
            else:
                part = self._run_inputs([new], targets, False)
            return concat_results(
                [results, part], padding_side=self.padding_side, pad_id=self.pad_id
            )

    def remove(self, results: Results, index: int) -> Results:
        """``results`` without prompt ``index``; no model work unless the targets, tokenized
        after the new first prompt, become other tokens (then every prompt runs again).

        Raises:
            ValueError: For an index out of range, or the last prompt (a lens shows at least
                one).
        """
        results = self._native(results)
        one = _first(results)
        index = check_index("index", index, one.n_inputs, "prompts")
        if one.n_inputs == 1:
            raise ValueError(
                "index 0 is the last prompt: a lens shows at least one prompt, so it cannot be "
                "removed; add another prompt first"
            )
        kept = select_prompts(
            results, [i for i in range(one.n_inputs) if i != index], padding_side=self.padding_side
        )
        targets = one.targets
        if index == 0 and targets:
            first = _first(kept)
            if self._target_ids(_input_of(first, 0), targets) != first.target_token_ids:
                return self.retarget(kept, targets)
        return kept

    def retarget(self, results: Results, targets: Sequence[str] | None) -> Results:
        """Every prompt of ``results`` run again with ``targets`` tracked (``None`` or empty:
        none). The prompts' tokens, answers, foils, replies and roles are kept as they are.

        Raises:
            TypeError, ValueError: For bad targets (as ``LogitLens(targets=...)``).
        """
        results = self._native(results)
        one = _first(results)
        targets = validate_targets(list(targets)) if targets else None
        inputs = [_input_of(one, i) for i in range(one.n_inputs)]
        with model_lock(self.model):
            return self._run_inputs(inputs, targets, one.foils is not None)

    def patch(
        self,
        results: Results,
        *,
        prompt: int,
        layer: int,
        position: int,
        source: str | int,
        lens_name: str | None = None,
        token: int | None = None,
    ) -> PatchComparison:
        """:func:`~murano_widgets.patch_lens` on one prompt of ``results`` (see
        :mod:`murano_widgets.live.patching`): block ``layer``'s output at ``position`` (among
        the prompt's real tokens) replaced by ``source``'s (``"zero"``, ``"mean"`` over every
        prompt shown, or a prompt's index), read through the lens ``lens_name``; the change
        in probability follows ``token`` (an id; ``None``: the clean run's own prediction).

        Raises:
            TypeError, ValueError: For bad arguments, naming them, before any model work.
        """
        results = self._native(results)
        prompt, layer, position, source = check_patch(
            results, prompt=prompt, layer=layer, position=position, source=source
        )
        return run_patch(
            self,
            results,
            prompt=prompt,
            layer=layer,
            position=position,
            source=source,
            lens_name=lens_name,
            token=token,
        )

    # -----------------------------------------------------------------------------------------
    # Pieces

    def _native(self, results: Results) -> Results:
        """The kind the session's step makes: one lens's result alone, or named lenses."""
        held = lenses_of(results)
        if self.step.named and not held.named:
            raise ValueError(
                "the session has named lenses: its results are LensResults, got one LogitLensResult"
            )
        return held.first if not self.step.named and len(held) == 1 else results

    def _new_input(self, prompt: Any, chat: bool) -> _Input:
        """The new prompt as the step will read it (a chat applied, a reply generated)."""
        tokenizer = self.model.tokenizer
        roles = None
        if chat:
            if isinstance(prompt, str):
                text = _check_text(prompt)
                chats = [[{"role": "user", "content": text}]]
            else:
                chats = check_chat(prompt)
                if len(chats) != 1:
                    raise ValueError(
                        f"text must be one chat (a list of messages), got {len(chats)} chats"
                    )
            applied = apply_chat(tokenizer, chats, self.add_generation_prompt)
            text, ids, roles = applied.texts[0], applied.ids[0], applied.roles[0]
        else:
            if not isinstance(prompt, str):
                raise TypeError(
                    f"text must be a string, got {type(prompt).__name__} {prompt!r:.60}; a chat "
                    "goes to a widget made with chat=[...]"
                )
            text = _check_text(prompt)
            ids = [int(i) for i in tokenizer(text, return_token_type_ids=False)["input_ids"]]
        new = _Input(text, ids, roles=roles)
        if self.generation is not None:
            with model_lock(self.model):
                generated = generate_tokens(self.model, [ids], self.generation)
            new.text = text + generated.texts[0]
            new.ids = generated.ids[0]
            new.generated_text = generated.texts[0]
            new.generation_start = generated.starts[0]
            if roles is not None:
                new.roles = roles + ["assistant"] * (len(new.ids) - len(roles))
        return new

    def _target_ids(self, prompt: _Input, targets: list[str]) -> list[list[int]]:
        """The ids each target counts when it follows ``prompt`` (the step's own rule: the
        first token of its continuation, and with ``variants`` its single-token forms)."""
        encoder = encoder_for(self.model.tokenizer, [prompt.text], [prompt.ids])
        counted = []
        for index, text in enumerate(targets):
            ids = [encoder.continuation(0, text, f"targets[{index}]")[0]]
            if self.step.variants:
                ids += encoder.single_token_variants(0, text)
            counted.append(list(dict.fromkeys(ids)))
        return counted

    def check_one_token(self, results: Results, text: str) -> int:
        """The one token ``text`` is after the first prompt of ``results`` (as the step
        tokenizes targets), checked before any model work.

        A tracked text counts only its first token at every cell, so a text of several tokens
        would be tracked as a token the user did not type under the name they typed
        ("Tokyo" as 'T'): it is refused, naming its tokens and, where there is one, the form
        that is one token (" Tokyo", with its leading space).

        Raises:
            ValueError: For a text that is not exactly one token there.
        """
        one = _first(self._native(results))
        prompt = _input_of(one, 0)
        encoder = encoder_for(self.model.tokenizer, [prompt.text], [prompt.ids])
        ids = encoder.continuation(0, text, "text")
        if len(ids) == 1:
            return int(ids[0])
        tokens = [repr(self.model.tokenizer.decode([i])) for i in ids]
        single = []
        for form in variant_forms(text)[1:]:
            try:
                if len(encoder.continuation(0, form, "text")) == 1:
                    single.append(form)
            except ValueError:
                continue
        if single:
            space = " (with its leading space)" if single[0].startswith(" ") else ""
            hint = f" {single[0]!r}{space} is one token: track that."
        else:
            hint = " Track one of its tokens, or score the whole text as an answer (answers=...)."
        raise ValueError(
            f"{text!r} is {len(ids)} tokens here ({' + '.join(tokens)}): a tracked text must be "
            f"one token, else only {tokens[0]} would be tracked.{hint}"
        )

    def _run_inputs(self, inputs: list[_Input], targets: list[str] | None, foils: bool) -> Results:
        """The step on ``inputs`` (their token ids as they are), as ``run_logit_lens`` makes
        its result: the generated replies and chat roles recorded on every lens."""
        step = self.step
        if targets != step.targets:
            step = step.with_options(targets=targets)
        names = list(dict.fromkeys(name for x in inputs for name in (x.answers or {})))
        given = {name: [(x.answers or {}).get(name) for x in inputs] for name in names}
        # One call cannot be given answers that are all None.
        any_answer = any(entry is not None for entries in given.values() for entry in entries)
        answers = given if any_answer else None
        result = step.run(
            [x.text for x in inputs],
            answers,
            prompt_ids=[x.ids for x in inputs],
            foils=[x.foil for x in inputs] if foils and answers is not None else None,
        )
        generated = self.generation is not None
        chat = any(x.roles is not None for x in inputs)
        for one in lenses_of(result).values():
            one.generated_texts = [x.generated_text or "" for x in inputs] if generated else None
            one.generation_starts = (
                [int(x.generation_start or 0) for x in inputs] if generated else None
            )
            one.token_roles = [list(x.roles or []) for x in inputs] if chat else None
        return result.validate()


def _first(results: Results) -> LogitLensResult:
    return lenses_of(results).first


def _input_of(result: LogitLensResult, index: int) -> _Input:
    """Prompt ``index`` of ``result`` as the step read it, to run it again."""
    assert result.input_ids is not None  # the step's own results carry their token ids
    ids = result.input_ids[index][result.attention_mask[index].bool()].tolist()
    answers = None
    if result.answer_sets:
        answers = {name: scores.answers[index] for name, scores in result.answer_sets.items()}
    return _Input(
        text=(result.prompts or [])[index],
        ids=[int(i) for i in ids],
        answers=answers,
        foil=None if result.foils is None else result.foils[index],
        generated_text=None if result.generated_texts is None else result.generated_texts[index],
        generation_start=(
            None if result.generation_starts is None else result.generation_starts[index]
        ),
        roles=None if result.token_roles is None else list(result.token_roles[index]),
    )


def _check_text(text: Any) -> str:
    """A prompt typed in: a non-empty string that can be encoded."""
    if isinstance(text, str) and text and not text.strip():
        raise ValueError(
            f"text is only white space ({text!r}): a prompt needs at least one visible character"
        )
    text = check_str("text", text)
    check_encodable(text, "text")
    return text
