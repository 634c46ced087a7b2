"""The Patchscope lens: the model reads its own hidden state.

A Patchscope (Ghandeharioun et al. 2024, "Patchscopes: A Unifying Framework for Inspecting
Hidden Representations of Language Models") decodes the state ``h`` at layer ``l`` and position
``p`` of a source prompt by letting the model read it: ``h`` replaces block ``l``'s output at the
placeholder of a target prompt, the model runs on from there, and its next-token distribution
at the placeholder is the readout. The identity prompt ``"cat -> cat\\n1135 -> 1135\\nhello ->
hello\\n?"`` asks the model to repeat what it was given, so a state that still holds its token
reads as that token, without the final norm and unembedding having to make sense of an early
layer's basis.

:class:`PatchscopeLens` is a kind of :class:`~murano_widgets.Lens`: it overrides
:meth:`~murano_widgets.Lens.logits` (the step's chunk loop asks every lens for a layer's logits
on a chunk of positions) to run the target prompt, so every field of a result (top-k, entropy,
KL to the model's own output in bits, ranks, targets, answers) comes out as for any lens, and it
stands beside the other lenses (``lens={"logit": None, "patchscope": PatchscopeLens()}``).

The cost: the target prompt's tokens before the placeholder are the same in every row and no
patch reaches them (attention is causal), so they run once per call and their keys and values
are kept; a cell is then one pass of the placeholder (and any tokens after it) through every
block, attending to that cache. Cells go in batches (the target prompt's rest repeated, each row
patched through a forward hook on the patched block) cut to the step's memory budget; a hook on
the last block takes the placeholder's state and stops the pass, and the model's own final
norm, unembedding and logit transform make the logits. A placeholder at the target prompt's
first token, or a model without a key/value cache, runs the whole prompt per row.

Inside the step's trace (``remote=True``: on NDIF's server; or ``reduce_in_trace=True``) the
same passes run where the model is (:meth:`PatchscopeLens.read_in_trace`), as plain module
calls with the trace stood down for them. A long local run shows its cells done out of all
(:mod:`murano_widgets.lenses.patchscope_progress`).
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import torch

from murano_widgets._checks import check_int
from murano_widgets.lenses.base import Lens
from murano_widgets.lenses.patchscope_progress import CellProgress
from murano_widgets.types import validate_prompts

__all__ = ["IDENTITY_PROMPT", "PatchscopeLens"]

IDENTITY_PROMPT = "cat -> cat\n1135 -> 1135\nhello -> hello\n?"
"""The identity target prompt of the Patchscopes paper: its last token, ``?``, the placeholder."""


class _Stopped(Exception):
    """Raised by the hook on the last block once the placeholder's state is taken: the final
    norm and ``lm_head`` over every position of the batch would be work for nothing."""


class PatchscopeLens(Lens):
    """A Patchscope: each cell's state patched into a target prompt, read by the model itself.

    The cell at layer ``l``, position ``p``: its block output replaces block ``target_layer``'s
    output (block ``l``'s by default) at the placeholder's position of ``target_prompt``; the
    model's next-token distribution there is the cell's. The last layer is read as it is (the
    model's own output, as for every lens: patching it at the same layer gives the same).

    Example:
        >>> from murano_widgets import PatchscopeLens, run_logit_lens
        >>> ps = PatchscopeLens()  # the identity prompt, its last token the placeholder
        >>> r = run_logit_lens(model, prompts, lens={"logit": None, "patchscope": ps})  # doctest: +SKIP

    Args:
        target_prompt: The prompt the state is patched into (tokenized as a prompt is, special
            tokens included).
        placeholder: Which of its tokens is replaced: ``None`` for its last token; a string,
            whose last occurrence's last token is replaced; or a token index (negative ones
            count from the end, as in Python).
        target_layer: The block whose output is replaced, the same for every row (negative
            counts from the end); ``None`` patches each cell at the layer it was read from.
        progress: A bar of the cells read (``cells done / total``) during a step's run:
            ``None`` shows it once the run has taken two seconds (a long run;
            ``LONG_RUN_SECONDS`` of ``murano_widgets.lenses.patchscope_progress``), ``True``
            from the start, ``False`` never. Runs inside a trace (on NDIF) show the job's
            status instead.

    Raises:
        TypeError: For an argument of the wrong type.
        ValueError: For an empty (or all white space) target prompt, or a placeholder string
            that is empty or not in it. The placeholder's token and ``target_layer`` are
            checked against a model by :meth:`check` (every entry point calls it before any
            model work).
    """

    kind: ClassVar[str] = "patchscope"
    title: ClassVar[str] = "Patchscope"

    def __init__(
        self,
        target_prompt: str = IDENTITY_PROMPT,
        placeholder: str | int | None = None,
        target_layer: int | None = None,
        progress: bool | None = None,
    ) -> None:
        if progress is not None and not isinstance(progress, bool):
            raise TypeError(
                "progress must be None (a bar once a run takes a while), True or False; got "
                f"{type(progress).__name__} {progress!r:.60}"
            )
        if not isinstance(target_prompt, str):
            raise TypeError(
                f"target_prompt must be a string, got {type(target_prompt).__name__} "
                f"{target_prompt!r:.60}"
            )
        if not target_prompt.strip():
            raise ValueError(
                f"target_prompt is empty or only white space ({target_prompt!r}): give the "
                f"prompt the state is patched into, e.g. the identity prompt {IDENTITY_PROMPT!r}"
            )
        if isinstance(placeholder, str):
            if not placeholder:
                raise ValueError(
                    "placeholder is an empty string: give the text in target_prompt whose "
                    "token is replaced (its last occurrence), a token index, or None for the "
                    "last token"
                )
            if placeholder not in target_prompt:
                raise ValueError(
                    f"placeholder {placeholder!r:.40} is not in target_prompt "
                    f"{target_prompt!r:.80}: give text that occurs in it, a token index, or "
                    "None for the last token"
                )
        elif placeholder is not None and not _is_int(placeholder):
            raise TypeError(
                "placeholder must be None (the target prompt's last token), a string in the "
                f"target prompt or a token index; got {type(placeholder).__name__} "
                f"{placeholder!r:.60}"
            )
        if target_layer is not None and not _is_int(target_layer):
            raise TypeError(
                "target_layer must be None (each cell at its own layer) or a block index; got "
                f"{type(target_layer).__name__} {target_layer!r:.60}"
            )
        self.target_prompt = target_prompt
        #: ``None``, the placeholder text, or a token index.
        self.placeholder: str | int | None = (
            placeholder if placeholder is None or isinstance(placeholder, str) else int(placeholder)
        )
        self.target_layer = None if target_layer is None else int(target_layer)
        self.progress = progress
        self._cells: CellProgress | None = None
        self.provenance = {
            "target_prompt": target_prompt,
            "placeholder": self.placeholder,
            "target_layer": self.target_layer,
        }

    def __getstate__(self) -> dict[str, Any]:
        # A remote trace sends the lens by value: a run's progress bar stays here.
        state = self.__dict__.copy()
        state["_cells"] = None
        return state

    def __repr__(self) -> str:
        return (
            f"PatchscopeLens(target_prompt={self.target_prompt!r:.60}, "
            f"placeholder={self.placeholder!r}, target_layer={self.target_layer!r})"
        )

    def start_run(self, rows: int, layers: Sequence[Any], n_layers: int) -> None:
        """The step's notice that its reduction starts: ``rows`` positions at each of
        ``layers``; every layer but those read as the model's own output costs a patched pass
        per position (the progress bar's total)."""
        target = self._target_layer(n_layers)
        last = n_layers - 1
        patched = sum(
            1 for layer in layers if layer != last and (layer if target is None else target) != last
        )
        self._cells = CellProgress(rows * patched, self.progress, "PatchscopeLens")

    # -- checks, before any model work ---------------------------------------------------------

    def check(self, model: Any) -> None:
        """Checks that the lens can run on ``model``: it has plain decoder blocks to hook, the
        placeholder is one of the target prompt's tokens and ``target_layer`` is one of its
        blocks.

        Raises:
            TypeError: If ``model`` has no plain Hugging Face model and decoder blocks (a
                :class:`~murano_widgets.MuranoModel` has them).
            ValueError: For a placeholder index out of range, a placeholder string that covers
                no token, a target prompt longer than the model's context, or a
                ``target_layer`` out of range.
        """
        if not hasattr(type(model), "_blocks") or not hasattr(type(model), "_hf_model"):
            raise TypeError(
                "PatchscopeLens runs the model's decoder blocks with forward hooks: the model "
                "must be a murano_widgets.MuranoModel (or have its _hf_model and _blocks); got "
                f"{type(model).__name__}"
            )
        self._target_layer(int(model.n_layers))
        ids, _ = self.target_tokens(model.tokenizer)
        context = getattr(model, "context_length", None)
        if context is not None and len(ids) > context:
            raise ValueError(
                f"target_prompt is {len(ids)} tokens long, more than the model's context of "
                f"{context} tokens; shorten it"
            )

    def check_step(self, step: Any) -> None:
        """Refuses the step options a Patchscope cannot run with, and readies the ones it can.

        With ``remote=True`` (NDIF) or ``reduce_in_trace=True`` the patched passes run inside
        the step's trace, where the model runs (:meth:`read_in_trace`): the target prompt's
        tokens are found here, on the client, which has the tokenizer (the server does not).

        Raises:
            ValueError: For ``decompose=True`` (direct logit attribution needs a lens that is
                a function of the state before the final norm; a Patchscope runs later blocks)
                and ``sites`` with ``"resid_mid"``.
        """
        if getattr(step, "decompose", False):
            raise ValueError(
                "PatchscopeLens is not supported with decompose=True: direct logit attribution "
                "splits a lens's logit linearly over the state's components, and a Patchscope's "
                "logits come out of the model's later blocks"
            )
        if "resid_mid" in getattr(step, "sites", ()):
            raise ValueError(
                "PatchscopeLens reads block outputs only: sites=('resid_mid', ...) is not "
                "supported with it; use sites=('resid_post',)"
            )
        if getattr(step, "remote", False) or getattr(step, "reduce_in_trace", False):
            # Travels with the step (the lens is part of it) to where the trace runs.
            self._in_trace = (
                self.target_tokens(step.model.tokenizer),
                getattr(step, "max_chunk_bytes", None),
            )

    def _target_layer(self, n_layers: int) -> int | None:
        """``target_layer`` as a block index of a model of ``n_layers`` (or ``None``)."""
        if self.target_layer is None:
            return None
        if not -n_layers <= self.target_layer < n_layers:
            raise ValueError(
                f"target_layer is {self.target_layer}, out of range for a model with "
                f"{n_layers} layers (allowed: None, or {-n_layers} to {n_layers - 1})"
            )
        return self.target_layer % n_layers

    def target_tokens(self, tokenizer: Any) -> tuple[list[int], int]:
        """The target prompt's token ids (as a prompt is tokenized, special tokens included)
        and the placeholder's index among them.

        Raises:
            ValueError: If the target prompt has no tokens, a placeholder index is out of
                range, or a placeholder string covers no token.
        """
        encoded = tokenizer(self.target_prompt, return_token_type_ids=False)
        ids = [int(i) for i in encoded["input_ids"]]
        if not ids:
            raise ValueError(f"target_prompt {self.target_prompt!r:.60} tokenizes to no tokens")
        place = self.placeholder
        if place is None:
            return ids, len(ids) - 1
        if isinstance(place, int):
            if not -len(ids) <= place < len(ids):
                raise ValueError(
                    f"placeholder is the token index {place}, out of range for target_prompt's "
                    f"{len(ids)} tokens (allowed: {-len(ids)} to {len(ids) - 1})"
                )
            return ids, place % len(ids)
        end = self.target_prompt.rfind(place) + len(place)
        if getattr(tokenizer, "is_fast", False):
            spans = tokenizer(
                self.target_prompt, return_offsets_mapping=True, return_token_type_ids=False
            )["offset_mapping"]
            start = end - len(place)
            covering = [i for i, (a, b) in enumerate(spans) if b > a and a < end and b > start]
            if covering:
                return ids, covering[-1]
            raise ValueError(
                f"placeholder {place!r:.40} covers no token of target_prompt "
                f"{self.target_prompt!r:.80}"
            )
        # A slow tokenizer has no offsets: the placeholder's last token ends the text up to it.
        return ids, len(tokenizer(self.target_prompt[:end])["input_ids"]) - 1

    # -- the readout ---------------------------------------------------------------------------

    def translate(self, layer: int, hidden: Any) -> Any:
        raise ValueError(
            "a PatchscopeLens has no translation of a state for the final norm: it reads a "
            "state by running the model (PatchscopeLens.logits, and read_in_trace inside a "
            "trace). It runs wherever lenses do except direct logit attribution"
        )

    def logits(
        self,
        model: Any,
        layer: int,
        hidden: Any,
        n_layers: int,
        out: Any = None,
        max_bytes: int | None = None,
    ) -> Any:
        """Each row of ``hidden`` (block ``layer``'s output at some cell) patched into the target
        prompt, and the model's logits at the placeholder: ``[rows, vocab]``.

        The target prompt's tokens before the placeholder run once (their key/value cache is
        copied into each batch); rows go through the rest in batches of as many as
        ``max_bytes`` allows (at least one), one forward pass of the plain Hugging Face model
        each, with forward hooks on two decoder blocks: the target block's replaces its output
        at the placeholder, the last block's takes its output there and stops the pass; the
        model's own final norm, unembedding and logit transform (``model.unembed``) make the
        logits.
        """
        last = n_layers - 1
        target = self._target_layer(n_layers)
        target = layer if target is None else target
        if layer == last or target == last:
            # The last layer is the model's own output; a state patched into the last block's
            # output is read by nothing but the final norm and the unembedding.
            return model.unembed(hidden, out=out)
        with torch.inference_mode():
            read = _read_patched(
                model, self.target_tokens(model.tokenizer), target, hidden, last, max_bytes,
                self._cells,
            )  # fmt: skip
        return model.unembed(read, out=out)

    def read_in_trace(self, model: Any, layer: int, hidden: Any, n_layers: int) -> Any:
        """Inside the step's trace (``remote=True``: on NDIF's server): the last block's
        output at the placeholder for each row of ``hidden``, which the step projects on the
        vocabulary as for any lens (the model's final norm, unembedding and logit transform).

        The patched passes are ordinary calls of the model's modules where the trace runs,
        with the trace stood down for them (as nnsight does for a module called ad hoc), so
        they are not taken for the traced forward pass; batched and chunked as
        :meth:`logits` does.
        """
        last = n_layers - 1
        target = self._target_layer(n_layers)
        target = layer if target is None else target
        if layer == last or target == last:
            return hidden
        tokens, max_bytes = self._in_trace
        # no_grad, not inference_mode: the trace's own code may go on with the result in a
        # thread where inference_mode is not in force (an inference tensor then cannot meet
        # weights that require grad).
        with _OutsideTrace(model), torch.no_grad():
            return _read_patched(model, tokens, target, hidden, last, max_bytes)

    def describe(
        self, model: Any, prompt: str, layer: int, position: int = -1, max_new_tokens: int = 8
    ) -> str:
        """A cell described in a few words, SelfIE-style: block ``layer``'s output at
        ``position`` of ``prompt`` patched into the target prompt (at the placeholder, block
        ``target_layer``'s output, or ``layer``'s), then ``max_new_tokens`` tokens generated
        greedily after the target prompt (fewer if the model ends its text).

        Args:
            model: The model (a :class:`~murano_widgets.MuranoModel`).
            prompt: The source prompt (tokenized as the step tokenizes a prompt).
            layer: The block whose output is read (negative counts from the end).
            position: The token of ``prompt`` (negative counts from the end).
            max_new_tokens: How many tokens to generate, at least 1.

        Returns:
            The generated text.

        Raises:
            TypeError, ValueError: Before any model work, for a model the lens does not fit
                (:meth:`check`), an empty prompt, or a layer, position or ``max_new_tokens``
                out of range.
        """
        self.check(model)
        prompt = validate_prompts([prompt], "prompt")[0]
        n_layers = int(model.n_layers)
        check_int("layer", layer, -n_layers, n_layers - 1, "the model's last layer")
        check_int("max_new_tokens", max_new_tokens, 1, None, None)
        source = [int(i) for i in model.tokenizer(prompt, return_token_type_ids=False)["input_ids"]]
        check_int("position", position, -len(source), len(source) - 1, "the prompt's last token")
        layer, position = layer % n_layers, position % len(source)
        target_layer = self._target_layer(n_layers)
        target = layer if target_layer is None else target_layer
        ids, placeholder = self.target_tokens(model.tokenizer)
        hf_model, blocks = model._hf_model, model._blocks
        eos = getattr(model.tokenizer, "eos_token_id", None)
        with torch.inference_mode():
            inputs = {"input_ids": torch.tensor([source], device=model.device)}
            state = model.block_outputs(inputs, [layer])[layer][0, position]

            def patch(_module: Any, _args: Any, output: Any) -> Any:
                hidden = output[0] if isinstance(output, tuple) else output
                hidden = hidden.clone()
                hidden[0, placeholder] = state.to(hidden.device, hidden.dtype)
                return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

            handle = blocks[target].register_forward_hook(patch)
            try:
                output = hf_model(
                    input_ids=torch.tensor([ids], device=model.device), use_cache=True
                )
            finally:
                handle.remove()
            new: list[int] = []
            while True:
                token = int(output.logits[0, -1].argmax())
                new.append(token)
                if len(new) == max_new_tokens or token == eos:
                    break
                output = hf_model(
                    input_ids=torch.tensor([[token]], device=model.device),
                    past_key_values=output.past_key_values,
                    use_cache=True,
                )
        return str(model.tokenizer.decode(new))


def _read_patched(
    model: Any,
    tokens: tuple[list[int], int],
    target: int,
    hidden: torch.Tensor,
    last: int,
    max_bytes: int | None,
    cells: CellProgress | None = None,
) -> torch.Tensor:
    """Each row of ``hidden`` patched into the target prompt (``tokens``: its ids and the
    placeholder's index) at block ``target``'s output: block ``last``'s output at the
    placeholder, ``[rows, d_model]``, in batches of as many rows as ``max_bytes`` allows."""
    ids, position = tokens
    rows = int(hidden.shape[0])
    # The target prompt's tokens before the placeholder are the same in every row and no
    # patch reaches them (attention is causal): run them once, keep their keys and values,
    # and run only the placeholder and what follows it per row.
    prefix = None
    if position > 0 and {"past_key_values", "use_cache"} <= model.forward_kwargs:
        prefix = _prefix_cache(model, ids[:position])
        ids, position = ids[position:], 0
    per_row = _row_bytes(
        model.config, len(ids), len(ids) + (0 if prefix is None else len(prefix)), hidden
    )
    batch = rows if max_bytes is None else max(1, min(rows, int(max_bytes) // per_row))
    read = hidden.new_empty(hidden.shape)
    for start in range(0, rows, batch):
        stop = min(rows, start + batch)
        read[start:stop] = run_patched(
            model, ids, position, target, hidden[start:stop], last, prefix
        )
        if cells is not None:
            cells.update(stop - start)
    return read


class _OutsideTrace:
    """Stands the enclosing nnsight trace down while the model's modules are called ad hoc:
    what nnsight 0.8 does for an envoy called inside a trace, here for the plain modules
    that the patched passes hook (else the trace would take them for the traced pass)."""

    def __init__(self, model: Any) -> None:
        root = model._root if hasattr(type(model), "_root") else None
        self.interleaver = getattr(root, "interleaver", None) if root is not None else None
        # nnsight 0.8 keeps a plain attribute; 0.7 a private one behind a property.
        self.name = (
            "_interleaving"
            if isinstance(getattr(type(self.interleaver), "interleaving", None), property)
            else "interleaving"
        )
        self.was: Any = None

    def __enter__(self) -> None:
        if self.interleaver is not None:
            self.was = getattr(self.interleaver, self.name, False)
            setattr(self.interleaver, self.name, False)

    def __exit__(self, *exc: Any) -> None:
        if self.interleaver is not None:
            setattr(self.interleaver, self.name, self.was)


class _Prefix:
    """The target prompt's tokens before the placeholder, run once: their key/value cache."""

    def __init__(self, cache: Any, length: int) -> None:
        self.cache = cache
        self.length = length

    def __len__(self) -> int:
        return self.length

    def for_rows(self, rows: int) -> Any:
        """A fresh copy of the cache for a batch of ``rows`` (a pass appends to its cache)."""
        cache = copy.deepcopy(self.cache)
        cache.batch_repeat_interleave(rows)
        return cache


def _prefix_cache(model: Any, ids: list[int]) -> _Prefix:
    kwargs = {"logits_to_keep": 1} if "logits_to_keep" in model.forward_kwargs else {}
    input_ids = torch.tensor([ids], device=model.device)
    output = model._hf_model(input_ids=input_ids, use_cache=True, **kwargs)
    return _Prefix(output.past_key_values, len(ids))


def run_patched(
    model: Any,
    ids: list[int],
    position: int,
    block: int,
    states: torch.Tensor,
    read_at: int,
    prefix: _Prefix | None = None,
) -> torch.Tensor:
    """One forward pass of the target prompt ``ids`` repeated once per row of ``states``, row
    ``i``'s block ``block`` output at ``position`` replaced by ``states[i]``: block ``read_at``'s
    output at ``position`` (``[rows, d_model]``), the pass stopped there. With ``prefix``,
    ``ids`` continue the tokens whose key/value cache it holds.

    Plain torch forward hooks on the model's decoder blocks (removed afterwards), outside any
    nnsight trace.
    """
    hf_model, blocks = model._hf_model, model._blocks
    taken: list[torch.Tensor] = []

    def patch(_module: Any, _args: Any, output: Any) -> Any:
        hidden = output[0] if isinstance(output, tuple) else output
        hidden = hidden.clone()
        hidden[:, position] = states.to(hidden.device, hidden.dtype)
        return (hidden, *output[1:]) if isinstance(output, tuple) else hidden

    def take(_module: Any, _args: Any, output: Any) -> None:
        hidden = output[0] if isinstance(output, tuple) else output
        taken.append(hidden[:, position])
        raise _Stopped

    hooks: list[tuple[int, Callable[..., Any]]] = [(block, patch), (read_at, take)]
    if block == read_at:  # pragma: no cover - the callers read the last block, patch before it
        raise ValueError("the patched block must come before the block read")
    rows = len(states)
    kwargs: dict[str, Any] = {}
    if prefix is not None:
        kwargs = {"past_key_values": prefix.for_rows(rows), "use_cache": True}
    elif "use_cache" in model.forward_kwargs:
        kwargs = {"use_cache": False}
    input_ids = torch.tensor([ids], device=model.device).repeat(rows, 1)
    handles = [blocks[index].register_forward_hook(hook) for index, hook in hooks]
    try:
        hf_model(input_ids=input_ids, **kwargs)
    except _Stopped:
        pass
    finally:
        for handle in handles:
            handle.remove()
    if not taken:
        raise RuntimeError("PatchscopeLens: the model's forward pass never reached its last block")
    return taken[0].to(states.device, states.dtype)


def _row_bytes(config: Any, length: int, context: int, hidden: torch.Tensor) -> int:
    """About the peak memory one row of a target-prompt pass takes: a block's activations
    (the residual stream and its copies, the MLP's hidden layer, one attention matrix per
    head) over the ``length`` tokens run, attending to ``context`` tokens, and every layer's
    keys and values over those."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    width = int(hidden.shape[-1])
    ff = getattr(text, "intermediate_size", None) or getattr(text, "n_inner", None) or 4 * width
    heads = getattr(text, "num_attention_heads", None) or 1
    layers = getattr(text, "num_hidden_layers", None) or 1
    activations = length * (2 * int(ff) + 8 * width + int(heads) * context)
    return max(1, hidden.element_size() * (activations + 2 * int(layers) * context * width))


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
