"""``LensResults``: several named lenses on one batch, and the one place that tells one lens from
several.

Every module that takes "a result" takes either kind and reads it through :func:`lenses_of`
(always name → result: one lens is one entry) and gives back the kind it was given with
:func:`as_given`; nothing outside this package asks which kind it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import torch

from murano_widgets.lenses.base import IDENTITY
from murano_widgets.results.result import SPECS, LogitLensResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["LensResults", "as_given", "lenses_of", "one_lens"]

#: What lenses side by side on one batch hold equal (``shared`` in their layout): the rows,
#: then the tensors, the prompts and the words (the message names the most telling first).
_ORDER = ("run", "tensor", "per_prompt", "nested")
SHARED = tuple(
    name for role in _ORDER for name, spec in SPECS.items() if spec.shared and spec.role == role
)


class LensResults(Mapping[str, LogitLensResult]):
    """Several named lenses on one batch of prompts, from one trace: name → result.

    What ``LogitLens(model, lens={"logit": None, "tuned": tuned})`` writes into
    ``results["logit_lens"]`` (one lens, or ``lens=None``, writes a :class:`LogitLensResult`
    as before). Each entry is a whole :class:`LogitLensResult` of that lens, every field equal to
    running the step with that lens alone; so whatever takes a result takes one lens of these
    (``results["tuned"].plot()``, ``compare(results["logit"], results["tuned"])``,
    ``results["tuned"].describe_cell(...)``). The lenses read the same prompts, tokens, layers
    and final prediction: the properties below are theirs.

    Attributes:
        kl_between: With ``LogitLens(..., kl_between_lenses=True)``: ``{(a, b):
            [n_layers, n_inputs, seq]}`` KL(a ‖ b) in bits for every ordered pair of distinct
            names, where :data:`murano_widgets.lenses.FINAL` (``"final"``) names the model's own
            output distribution (so ``kl_between[("final", name)]`` is that lens's
            ``kl_to_final``, computed another way); ``None`` otherwise.
        named: Whether the lenses were asked for by name; ``False`` for one lens's result held
            as one entry (see :func:`lenses_of`).
    """

    def __init__(
        self,
        results: Mapping[str, LogitLensResult],
        kl_between: dict[tuple[str, str], torch.Tensor] | None = None,
        *,
        named: bool = True,
    ) -> None:
        if not isinstance(results, Mapping) or not results:
            raise ValueError("LensResults needs at least one named LogitLensResult")
        for name, result in results.items():
            if not isinstance(name, str) or not name:
                raise ValueError(f"LensResults names must be non-empty strings, got {name!r}")
            if not isinstance(result, LogitLensResult):
                raise ValueError(
                    f"LensResults[{name!r}] must be a LogitLensResult, got {type(result).__name__}"
                )
        if not named and (len(results) != 1 or kl_between is not None):
            raise ValueError("LensResults(named=False) holds one lens, with no kl_between")
        self._results = dict(results)
        self.kl_between = kl_between
        #: Whether the lenses were asked for by name (``LogitLens(lens={...})``); ``False`` for
        #: one lens's result held as one entry (:func:`lenses_of`), given back as that result.
        self.named = named

    def __getitem__(self, name: str) -> LogitLensResult:
        try:
            return self._results[name]
        except KeyError:
            raise KeyError(
                f"no lens named {name!r} in these results; the lenses are {self.names}"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._results)

    def __len__(self) -> int:
        return len(self._results)

    @property
    def names(self) -> list[str]:
        """The lenses' names, in the order given."""
        return list(self._results)

    @property
    def first(self) -> LogitLensResult:
        """The first lens's result."""
        return next(iter(self._results.values()))

    @property
    def prompts(self) -> list[str] | None:
        """The prompts, in batch order."""
        return self.first.prompts

    @property
    def layers(self) -> list[int]:
        """The model layer of each row (the same for every lens)."""
        return self.first.layers

    @property
    def n_inputs(self) -> int:
        """The number of prompts."""
        return self.first.n_inputs

    @property
    def lengths(self) -> list[int]:
        """The number of real tokens of each prompt."""
        return self.first.lengths

    @property
    def attention_mask(self) -> torch.Tensor:
        """``[n_inputs, seq]``, 1 for real tokens and 0 for padding."""
        return self.first.attention_mask

    @property
    def input_words(self) -> list[list[str]]:
        """The input tokens decoded, ``[n_inputs][seq]``."""
        return self.first.input_words

    def positions(self, prompt: int) -> torch.Tensor:
        """The padded-sequence indices of ``prompt``'s real tokens, in order."""
        return self.first.positions(prompt)

    def map(
        self,
        function: Callable[[LogitLensResult], LogitLensResult],
        kl_between: dict[tuple[str, str], torch.Tensor] | None = None,
    ) -> LensResults:
        """The same lenses, each result passed through ``function``, of the same kind
        (``named``), with ``kl_between`` (which a change of prompts must make anew)."""
        return LensResults(
            {name: function(one) for name, one in self._results.items()},
            kl_between,
            named=self.named,
        )

    def validate(self) -> LensResults:
        """Checks each result, and that they are of one batch (:meth:`check_one_batch`).

        Returns:
            The results themselves.

        Raises:
            ValueError: Naming the lens and the field that disagrees.
        """
        for result in self._results.values():
            result.validate()
        return self.check_one_batch()

    def check_one_batch(self) -> LensResults:
        """Checks that the results, each valid, are of one batch: the same layers, prompts,
        tokens, mask and final prediction, and ``kl_between`` of their shape (what
        :meth:`validate` adds to each result's own checks; the functions that made each result
        valid just now call this alone).

        Returns:
            The results themselves.

        Raises:
            ValueError: Naming the lens and the field that disagrees.
        """
        first_name, first = next(iter(self._results.items()))
        for name, result in self._results.items():
            if result is first:
                continue
            if result.layers != first.layers:
                raise ValueError(
                    f"LensResults[{name!r}] has layers {result.layers}, but "
                    f"LensResults[{first_name!r}] has {first.layers}: lenses side by side read "
                    "the same layers"
                )
            for field_name in SHARED:
                mine, theirs = getattr(result, field_name), getattr(first, field_name)
                if not _same(mine, theirs):
                    raise ValueError(
                        f"LensResults[{name!r}].{field_name} differs from "
                        f"LensResults[{first_name!r}]'s: lenses side by side read one batch "
                        "(the same prompts, tokens, rows and final prediction)"
                    )
        for pair, values in (self.kl_between or {}).items():
            expected = tuple(first.max_probs.shape)
            if tuple(values.shape) != expected:
                raise ValueError(
                    f"LensResults.kl_between[{pair!r}] has shape {tuple(values.shape)}, "
                    f"expected {expected}"
                )
        return self

    def describe_cell(
        self, prompt: int, layer_index: int, position: int, lens: str | None = None
    ) -> dict[str, Any]:
        """One cell under every lens (``{name: description}``), or under ``lens`` alone.

        Args:
            prompt, layer_index, position: As for :meth:`LogitLensResult.describe_cell`.
            lens: A lens's name, or ``None`` for all of them.

        Raises:
            KeyError: For a name that is not one of the lenses.
            ValueError: For an index out of range.
        """
        if lens is not None:
            return self[lens].describe_cell(prompt, layer_index, position)
        return {
            name: result.describe_cell(prompt, layer_index, position)
            for name, result in self._results.items()
        }

    def plot(
        self,
        prompt: int = 0,
        layers: Any = None,
        metric: str = "prob",
        *,
        lens: str | None = None,
        **options: Any,
    ) -> Figure:
        """The static heatmaps of one prompt: every lens, one above the other in one figure
        (``lens=None``), or one lens's (``results[lens].plot(...)``).

        Args:
            prompt, layers, metric: As for :func:`~murano_widgets.plot_logit_lens`.
            lens: A lens's name, or ``None`` for all of them.
            **options: Its keyword-only options (``max_token_chars``, ``marks``,
                ``hide_template``).

        Raises:
            KeyError: For a name that is not one of the lenses.
        """
        # At call time: the package's one deliberate import circle (tests/test_house.py).
        from murano_widgets.plot import plot_lenses, plot_logit_lens

        if lens is not None:
            return plot_logit_lens(
                self[lens], prompt=prompt, layers=layers, metric=metric, **options
            )
        return plot_lenses(self, prompt=prompt, layers=layers, metric=metric, **options)

    def __repr__(self) -> str:
        first = self.first
        between = "" if self.kl_between is None else ", kl_between"
        return (
            f"LensResults({self.names}, {first.n_inputs} prompts, layers "
            f"{first.layers[0]}..{first.layers[-1]}{between})"
        )


def _same(mine: Any, theirs: Any) -> bool:
    if isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor):
        return torch.equal(mine, theirs)
    return (mine is None) == (theirs is None) and mine == theirs


def lenses_of(result: Any, adapt: Callable[[Any], LogitLensResult] | None = None) -> LensResults:
    """Any result as name → result: named lenses as they are; one lens's result as one entry,
    named by its kind (``"logit"`` for a result that records none), with ``named=False``.

    Args:
        result: A :class:`LensResults`, or one lens's result.
        adapt: What makes one lens's result a :class:`LogitLensResult` (a result of another
            library, read by :func:`murano_widgets._adapters.as_lens_result`).

    Raises:
        TypeError: For something that is neither.
    """
    if isinstance(result, LensResults):
        return result
    if adapt is not None:
        result = adapt(result)
    if isinstance(result, LogitLensResult):
        return LensResults({result.lens_kind or IDENTITY.kind: result}, named=False)
    raise TypeError(
        f"result must be a LogitLensResult or a LensResults, got {type(result).__name__}"
    )


def as_given(results: LensResults) -> LogitLensResult | LensResults:
    """The kind :func:`lenses_of` was given: one lens's result alone, or the named lenses."""
    return results if results.named else results.first


def one_lens(result: Any, how: str) -> Any:
    """``result`` itself, unless it holds named lenses: a function of one lens's result refuses
    those, saying how to take one (``how``: what to call instead for all of them).

    Raises:
        TypeError: For named lenses.
    """
    if isinstance(result, LensResults) and result.named:
        raise TypeError(
            f"result holds the lenses {result.names} side by side (a LensResults): take one, "
            f"results[{result.names[0]!r}], or {how}"
        )
    return result.first if isinstance(result, LensResults) else result
