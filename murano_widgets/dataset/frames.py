"""A data set's tidy tables (:meth:`LensDataset.to_pandas`,
:meth:`LensDataset.contributions_to_pandas`): the text as categoricals, each distinct string once,
so that a million prompts by a dozen layers is a few hundred MB and seconds to make; token ids
decoded through the data set's table, vectorised."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np

from murano_widgets.dataset.stats import commitment_layers, component_parts
from murano_widgets.dataset.table import GROUPS, TOKENS, is_integer

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["component_columns", "contributions_frame", "text_columns", "tidy_frame"]


def text_columns(dataset: Any) -> dict[str, Any]:
    """The text of the tidy tables, factorized once: each prompt's code among the distinct
    prompts and each answer set's codes among every set's distinct answers (shared by
    every lens, so that the lenses' frames concatenate as categoricals)."""
    import pandas as pd

    prompt_codes, prompts = pd.factorize(np.asarray(dataset.prompts, dtype=object))
    names = list(dataset.answers)
    labels = np.asarray(
        [label for name in names for label in dataset.answer_labels(name)], dtype=object
    )
    answer_codes, answers = pd.factorize(labels, use_na_sentinel=True)
    n = len(dataset.prompts)
    return {
        "prompt": (prompt_codes, prompts),
        "answer": {
            name: (answer_codes[k * n : (k + 1) * n], answers) for k, name in enumerate(names)
        },
    }


def tidy_frame(dataset: Any, arrays: dict[str, Any], shared: dict[str, Any]) -> pd.DataFrame:
    """One lens's tidy frame (see :meth:`LensDataset.to_pandas`) from its ``arrays``, its text from
    ``shared``."""
    import pandas as pd

    n_layers, n = arrays[TOKENS].shape
    prompt_index = np.repeat(np.arange(n), n_layers)
    layer = np.tile(np.asarray(dataset.layers), n)

    def by_prompt(values: np.ndarray) -> np.ndarray:
        """``[n_layers, n_prompts]`` as one row per prompt and layer, prompt by prompt."""
        return values.T.reshape(-1)

    def categorical(codes: np.ndarray, categories: Any) -> pd.Categorical:
        return pd.Categorical.from_codes(codes, categories=categories, validate=False)

    prompt_codes, prompts = shared["prompt"]
    prompt_column = categorical(prompt_codes[prompt_index], prompts)
    top1_words = _decode(by_prompt(arrays[TOKENS]), dataset.token_strings)
    # Each metric field, named as the result names it: floats, or nullable integers (ranks).
    metric_columns: dict[str, Any] = {}
    for field in dataset.fields:
        values = by_prompt(arrays[field])
        metric_columns[field] = (
            pd.arrays.IntegerArray(*with_missing(values))
            if is_integer(field)
            else values.astype(np.float64)
        )
    # Each token group's probability, ``group_<name>`` (a data set made with groups).
    for name, values in (arrays.get(GROUPS) or {}).items():
        metric_columns[f"group_{name}"] = by_prompt(values).astype(np.float64)
    committed = commitment_layers
    frames = []
    for name in dataset.answers:
        ranks = by_prompt(arrays["answer_ranks"][name])
        missing = ranks < 0
        answer_codes, answers = shared["answer"][name]
        columns: dict[str, Any] = {
            "prompt_index": prompt_index,
            "prompt": prompt_column,
            "answer": categorical(answer_codes[prompt_index], answers),
        }
        if dataset.named_sets:
            columns["answer_set"] = name
        columns |= {
            "layer": layer,
            "answer_prob": by_prompt(arrays["answer_probs"][name]).astype(np.float64),
            "answer_rank": pd.arrays.IntegerArray(ranks.astype(np.int64), missing),
            "answer_is_top1": pd.arrays.BooleanArray(ranks == 0, missing),
            **metric_columns,
            "top1_token": top1_words,
            "commitment_layer": pd.arrays.IntegerArray(
                *with_missing(
                    np.repeat(committed(arrays["answer_ranks"][name].T, dataset.layers), n_layers)
                )
            ),
        }
        frames.append(pd.DataFrame(columns, copy=False))
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def component_columns(component_labels: list[str], repeat: int = 1) -> dict[str, Any]:
    """Each component's (then the bias's) label, layer, kind and head, as columns, the
    whole list ``repeat`` times over (once per prompt)."""
    import pandas as pd

    labels = [*component_labels, "bias"]
    parts = [*map(component_parts, labels[:-1]), (None, "bias", None)]
    layer = np.array([-1 if p[0] is None else p[0] for p in parts], dtype=np.int64)
    head = np.array([-1 if p[2] is None else p[2] for p in parts], dtype=np.int64)
    kinds = list(dict.fromkeys(p[1] for p in parts))
    kind_codes = np.array([kinds.index(p[1]) for p in parts])
    codes = np.tile(np.arange(len(labels)), repeat)
    return {
        "component": pd.Categorical.from_codes(codes, categories=labels, validate=False),
        "layer": pd.arrays.IntegerArray(*with_missing(np.tile(layer, repeat))),
        "kind": pd.Categorical.from_codes(kind_codes[codes], categories=kinds, validate=False),
        "head": pd.arrays.IntegerArray(*with_missing(np.tile(head, repeat))),
    }


def contributions_frame(dataset: Any) -> pd.DataFrame:
    """:meth:`LensDataset.contributions_to_pandas` of ``dataset`` (which has contributions)."""
    import pandas as pd

    values = np.concatenate(
        [dataset.contributions, dataset.contribution_bias[None, :]],
        axis=0,
    )
    n_parts, n = values.shape
    prompt_index = np.repeat(np.arange(n), n_parts)
    # The text as categoricals (each distinct string once: see to_pandas), and the
    # component columns likewise: a million prompts by 13 components is 14 million rows.
    shared = text_columns(dataset)

    def categorical(codes: np.ndarray, categories: Any) -> pd.Categorical:
        return pd.Categorical.from_codes(codes, categories=categories, validate=False)

    answer_codes, answers = shared["answer"][next(iter(dataset.answers))]
    columns: dict[str, Any] = {
        "prompt_index": prompt_index,
        "prompt": categorical(shared["prompt"][0][prompt_index], shared["prompt"][1]),
        "answer": categorical(answer_codes[prompt_index], answers),
    }
    if dataset.foils is not None:
        foil_codes, foils = pd.factorize(np.asarray(dataset.foils, dtype=object))
        columns["foil"] = categorical(foil_codes[prompt_index], foils)
    columns |= component_columns(dataset.component_labels, repeat=n)
    # One row per prompt and component, prompt by prompt: [C + 1, n] read column-wise.
    columns["contribution"] = values.T.reshape(-1).astype(np.float64)
    frame = pd.DataFrame(columns)
    frame.attrs["provenance"] = json.loads(json.dumps(dataset.provenance))
    frame.attrs.update(target=dataset.contribution_target, answer_set=next(iter(dataset.answers)))
    return frame


def with_missing(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integers with -1 for "no value", as a nullable integer array's values and mask."""
    values = np.asarray(values, dtype=np.int64)
    return values, values < 0


def _table_positions(ids: np.ndarray, table: dict[int, str]) -> np.ndarray:
    """Each token id's position in ``["", *table.values()]``: 0 for -1 or an id not in the
    table, vectorised."""
    if not table:
        return np.zeros(len(ids), dtype=np.int64)
    keys = np.fromiter(table, dtype=np.int64, count=len(table))
    order = np.argsort(keys)
    found = np.minimum(np.searchsorted(keys[order], ids), len(keys) - 1)
    hit = keys[order][found] == ids
    return np.where(hit, order[found] + 1, 0)


def _decode(ids: np.ndarray, table: dict[int, str]) -> np.ndarray:
    """Token ids to their strings through ``table`` ("" for -1 or an id not in it), vectorised."""
    words = np.array(["", *table.values()], dtype=object)
    return words[_table_positions(ids, table)]
