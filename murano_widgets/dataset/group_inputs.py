"""Token groups over a data set (``lens_dataset(model, prompts, groups=...)``): each group
resolved to its tokens once, before any model work, and handed to each batch's step.

A group is given as for :func:`~murano_widgets.run_logit_lens`: a
:class:`~murano_widgets.TokenGroup` or a word (the same tokens for every prompt), or a list of
them, one per prompt (Wendler's "the answer word in English", which differs from prompt to
prompt). A list is indexed by the prompt's place in the data set, so it may go with a stream of
prompts of any kind; it must then be as long as the prompts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from murano_widgets.groups import TokenGroup
from murano_widgets.step.groups import check_groups

__all__ = ["DatasetGroups", "dataset_groups"]


class DatasetGroups:
    """A data set's token groups, resolved to token ids.

    Attributes:
        names: The groups' names, in the order given.
        shared: ``{name: TokenGroup}`` the groups with the same tokens for every prompt.
        per_prompt: ``{name: [TokenGroup per prompt]}`` those given one per prompt.
    """

    def __init__(
        self, shared: dict[str, TokenGroup], per_prompt: dict[str, list[TokenGroup]], names: list
    ) -> None:
        self.names = list(names)
        self.shared = shared
        self.per_prompt = per_prompt

    def for_batch(self, rows: np.ndarray) -> dict[str, Any]:
        """The groups of the prompts at data-set indices ``rows``, as the step takes them.

        Raises:
            ValueError: For a prompt past the end of a per-prompt list (a stream longer than
                the list).
        """
        out: dict[str, Any] = {}
        for name in self.names:
            if name in self.shared:
                out[name] = self.shared[name]
                continue
            values = self.per_prompt[name]
            beyond = [int(i) for i in rows if i >= len(values)]
            if beyond:
                raise ValueError(
                    f"groups[{name!r}] has {len(values)} entries, one per prompt, but there is "
                    f"a prompts[{beyond[0]}]: give one group per prompt"
                )
            out[name] = [values[int(i)] for i in rows]
        return out

    def fingerprint(self) -> dict[str, Any]:
        """What decides the groups' numbers: their names and a hash of their token ids (a run's
        folder refuses other groups)."""
        ids = {
            name: list(self.shared[name].ids)
            if name in self.shared
            else [list(group.ids) for group in self.per_prompt[name]]
            for name in self.names
        }
        digest = hashlib.sha256(json.dumps(ids, sort_keys=True).encode()).hexdigest()
        return {"names": self.names, "token_ids_sha256": digest}

    def check_total(self, total: int | None) -> None:
        """A per-prompt list must be as long as the prompts (when their number is known).

        Raises:
            ValueError: Naming the group, its length and the number of prompts.
        """
        if total is None:
            return
        for name, values in self.per_prompt.items():
            if len(values) != total:
                raise ValueError(
                    f"groups[{name!r}] is a list of {len(values)} entries, one per prompt: "
                    f"there are {total} prompts"
                )


def dataset_groups(
    tokenizer: Any, groups: Mapping[str, Any] | None, vocab_size: int
) -> DatasetGroups | None:
    """``groups`` as given to :func:`~murano_widgets.lens_dataset`, checked and resolved to
    token ids (each distinct word's group built once).

    Raises:
        ValueError: For groups of the wrong form (see :func:`~murano_widgets.step.groups
            .check_groups`), a word no token of the vocabulary starts, or a token id outside
            the vocabulary.
    """
    checked = check_groups(groups)
    if checked is None:
        return None
    words: dict[str, TokenGroup] = {}

    def resolve(value: Any, where: str) -> TokenGroup:
        if isinstance(value, str):
            if value not in words:
                words[value] = TokenGroup.of(tokenizer, value, where)
            return words[value]
        group = TokenGroup.of(tokenizer, value, where)
        if max(group.ids) >= vocab_size:
            raise ValueError(
                f"{where} holds token id {max(group.ids)}, outside the model's vocabulary "
                f"(0 to {vocab_size - 1})"
            )
        return group

    shared: dict[str, TokenGroup] = {}
    per_prompt: dict[str, list[TokenGroup]] = {}
    for name, value in checked.items():
        if isinstance(value, list):
            per_prompt[name] = [
                resolve(item, f"groups[{name!r}][{k}]") for k, item in enumerate(value)
            ]
        else:
            shared[name] = resolve(value, f"groups[{name!r}]")
    return DatasetGroups(shared, per_prompt, list(checked))
