"""Token groups and the logit difference inside the chunk loop.

Both are a few numbers per row read from what the reductions already hold: a group's
probability is a gather of its tokens' probabilities and a sum (the softmax is computed for the
row anyway), the logit difference a gather of two logits before the softmax. Each prompt has its
own table (a group given as one word per prompt has other tokens in each prompt), so a row
reads its prompt's: :class:`PromptRows` carries the tables and each reduced row's prompt, cut
and tiled with the rows as :class:`~murano_widgets.step.reductions.Tracked` is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from murano_widgets.groups import TokenGroup

__all__ = ["GroupPlan", "PromptRows", "group_probs", "logit_difference", "plan_groups"]


@dataclass
class PromptRows:
    """A per-prompt table of token ids, read by each reduced row through its prompt.

    Attributes:
        table: ``[n_prompts, ...]`` token ids, -1 where there is none.
        prompt: ``[rows]`` each row's prompt (an index into ``table``).
    """

    table: torch.Tensor
    prompt: torch.Tensor

    def rows(self, start: int, stop: int) -> PromptRows:
        return PromptRows(self.table, self.prompt[start:stop])

    def to(self, device: torch.device | str) -> PromptRows:
        return PromptRows(self.table.to(device), self.prompt.to(device))

    def tiled(self, times: int) -> PromptRows:
        """The same ids for ``times`` layers' rows stacked, layer after layer."""
        return self if times == 1 else PromptRows(self.table, self.prompt.repeat(times))

    def ids(self) -> torch.Tensor:
        """``[rows, ...]`` each row's ids."""
        return self.table.index_select(0, self.prompt)


def group_probs(probs: torch.Tensor, groups: PromptRows) -> torch.Tensor:
    """``[rows, n_groups]`` each group's probability: the sum of its tokens' probabilities.

    Args:
        probs: ``[rows, vocab]`` a row's next-token probabilities.
        groups: Per prompt, ``[n_groups, width]`` ids (each id once in a group, -1 padding).
    """
    ids = groups.ids()  # [rows, n_groups, width]
    rows, n_groups, width = ids.shape
    picked = probs.gather(-1, ids.clamp_min(0).view(rows, n_groups * width)).view(ids.shape)
    # A sum of probabilities of distinct tokens lies in [0, 1] but for rounding.
    return picked.masked_fill(ids < 0, 0.0).sum(dim=-1).clamp_(0.0, 1.0)


def logit_difference(z: torch.Tensor, pairs: PromptRows) -> torch.Tensor:
    """``[rows]`` the logit of each row's answer token minus that of its foil (NaN where its
    prompt has no pair), from ``[rows, vocab]`` logits as the lens gives them."""
    ids = pairs.ids()  # [rows, 2]
    values = z.gather(-1, ids.clamp_min(0))
    return (values[:, 0] - values[:, 1]).masked_fill((ids < 0).any(dim=1), float("nan"))


@dataclass
class GroupPlan:
    """The groups of one step call.

    Attributes:
        names: The groups' names, in order.
        token_ids: Per prompt, each group's token ids.
        table: ``[n_prompts, n_groups, width]`` the same, -1 padding.
    """

    names: list[str]
    token_ids: list[list[list[int]]]
    table: torch.Tensor


def check_groups(groups: Any) -> dict[str, Any] | None:
    """``groups`` as given to the step, checked for its form (not its words: those need the
    tokenizer and the number of prompts, see :func:`plan_groups`).

    Raises:
        ValueError: For anything but a non-empty dict of names to a :class:`TokenGroup`, a
            word, or a list of them (one per prompt).
    """
    if groups is None:
        return None
    if not isinstance(groups, Mapping) or not groups:
        raise ValueError(
            "groups must be a non-empty dict of name -> TokenGroup (every prompt), a word, or "
            f"a list of words or TokenGroups (one per prompt); got {groups!r:.80}"
        )
    checked: dict[str, Any] = {}
    for name, value in groups.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"groups' names must be non-empty strings, got {name!r}")
        if isinstance(value, (list, tuple)):
            value = list(value)
            for index, item in enumerate(value):
                if not isinstance(item, (str, TokenGroup)):
                    raise ValueError(
                        f"groups[{name!r}][{index}] must be a word or a TokenGroup, got "
                        f"{type(item).__name__} {item!r:.60}"
                    )
        elif not isinstance(value, (str, TokenGroup)):
            raise ValueError(
                f"groups[{name!r}] must be a TokenGroup, a word or a list of them (one per "
                f"prompt), got {type(value).__name__} {value!r:.60}"
            )
        checked[name] = value
    return checked


def plan_groups(
    tokenizer: Any, groups: dict[str, Any], n_prompts: int, vocab_size: int
) -> GroupPlan:
    """Each prompt's token ids for each group.

    Raises:
        ValueError: For a list whose length is not the number of prompts, a word no token
            starts, or an id outside the vocabulary.
    """
    per_prompt: list[list[list[int]]] = [[] for _ in range(n_prompts)]
    words: dict[str, TokenGroup] = {}  # a word's group built once

    def group_of(value: Any, where: str) -> list[int]:
        if isinstance(value, str):
            if value not in words:
                words[value] = TokenGroup.of(tokenizer, value, where)
            value = words[value]
        ids = list(value.ids)
        if max(ids) >= vocab_size:
            raise ValueError(
                f"{where} holds token id {max(ids)}, outside the model's vocabulary "
                f"(0 to {vocab_size - 1})"
            )
        return ids

    for name, value in groups.items():
        if isinstance(value, list):
            if len(value) != n_prompts:
                raise ValueError(
                    f"groups[{name!r}] is a list of {len(value)} entries, one per prompt: "
                    f"there are {n_prompts} prompts"
                )
            for prompt, item in enumerate(value):
                per_prompt[prompt].append(group_of(item, f"groups[{name!r}][{prompt}]"))
        else:
            ids = group_of(value, f"groups[{name!r}]")
            for prompt in range(n_prompts):
                per_prompt[prompt].append(ids)
    width = max(len(ids) for prompt in per_prompt for ids in prompt)
    table = torch.full((n_prompts, len(groups), width), -1, dtype=torch.long)
    for prompt, each in enumerate(per_prompt):
        for g, ids in enumerate(each):
            table[prompt, g, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return GroupPlan(list(groups), per_prompt, table)
