"""Payload encoding: a ``LogitLensResult`` as compact binary sections for the front end.

The widget syncs two traits: ``_meta`` (small JSON) and ``_sections`` (name → bytes, sent as
binary buffers). Only real (non-padded) positions are sent. Positions of all prompts are laid
end to end on one axis of length ``total``; prompt ``p`` covers
``offsets[p] : offsets[p] + lengths[p]``. A cell (row ``i``, prompt ``p``, position ``j``) of an
``[L, T]`` section is at ``i * total + offsets[p] + j``. Arrays are little-endian; a value is
``raw * scale``. Token strings go once in ``meta["tokens"]``; token sections hold indices into it.

The sections are listed, with their shapes and encodings, in
:data:`murano_widgets.metrics.SECTIONS`; each carries the name of the result field it encodes.
The metrics (labels, units, colour scales, domains, and whether this result can show them) go
in ``meta["metrics"]`` from :data:`murano_widgets.metrics.METRICS`, so the front end lists
nothing of its own. The base sections cost 4 bytes a cell (6 with a token table over 65,535
strings), plus 4 bytes a layer and prompt for the final prediction at each prompt's last position
(where the trajectory chart opens); the detail sections are sent when the front end first asks
for them. A notebook saved before any page asked (one run headless) holds only the base
sections: reopened without its kernel, the page says after a few seconds (at once where it knows
there is none) that it waits for the kernel, instead of loading for ever. Every probability, the top-k's included, is a uint16 in steps of 1/65535, finer than
the 0.01 % the front end prints, so one number reads the same wherever it is shown (with top-5:
20 bytes a cell); only an exact 0 is stored as 0
(:func:`~murano_widgets.payload.codec.quantise`).

Named lenses side by side (:class:`~murano_widgets.LensResults`) go in one payload: one string
table, the per-position sections (:data:`SHARED_SECTIONS`) once, the first lens's sections under
their own names and lens ``i``'s as ``"{i}/{name}"``; ``meta["lenses"]`` lists each lens's
name, kind, title and prefix, and from the second on its metrics and top-k (the first's are the
payload's ``meta["metrics"]`` and ``meta["top_k"]``). Each further lens adds its own 4 bytes a
cell (and its detail sections); one lens costs what it did before lenses could be named.

A result of ``LogitLens(decompose=True)`` adds, per lens, the direct logit attribution's
sections (float32, with the detail sections: :mod:`murano_widgets.payload.attribution`), and
one with rows after each layer's attention adds their addresses; a result without either sends
exactly what it did before.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from murano_widgets._memory import Need, preflight
from murano_widgets.lenses import IDENTITY, title_of
from murano_widgets.metrics import (
    ATTRIBUTION_SECTIONS,
    METRICS,
    RESULT_FIELDS,
    SECTIONS,
    metric_domain,
)
from murano_widgets.payload.attribution import attribution_arrays, attribution_meta, row_addresses
from murano_widgets.payload.codec import (
    U16,
    decode_sections,
    finite_max,
    quantise,
    section_bytes,
    section_specs,
)
from murano_widgets.payload.long import (
    DETAIL_TOKENS,
    HIGH,
    TOPK_WINDOW,
    WINDOWED,
    base_token_ids,
    detail_tokens_section,
    is_long,
    narrow_token_sections,
    split_table,
)
from murano_widgets.results import LensResults, LogitLensResult, lenses_of

__all__ = [
    "BASE_SECTIONS",
    "DETAIL_SECTIONS",
    "SHARED_SECTIONS",
    "LensPayload",
    "decode_sections",
]

BASE_SECTIONS = tuple(name for name, section in SECTIONS.items() if section.base)
DETAIL_SECTIONS = tuple(name for name, section in SECTIONS.items() if not section.base)
#: Every section a payload may hold beyond the base ones: the details, and the direct logit
#: attribution's (listed in ``meta["detail_sections"]`` only when the result has them).
_LATER_SECTIONS = DETAIL_SECTIONS + tuple(ATTRIBUTION_SECTIONS) + (DETAIL_TOKENS,)
#: The sections of metrics that need what a run may not be given (``logit_diff``: foils;
#: ``group``: token groups).
_NEEDED = {metric.field for metric in METRICS.values() if metric.needs}
#: Sections of positions, the same under every lens (the tokens read, the model's own final
#: prediction, generation and chat marks): named lenses send them once.
SHARED_SECTIONS = ("input_ids", "final_tokens", "final_missing", "generated", "token_roles")
#: 3: ``meta["lenses"]`` (each lens's name, kind, title, prefix; metrics, top-k) and the other
#: lenses' sections, ``"{i}/{section}"``. A version-2 payload (one lens) still reads in the
#: front end; a version-2 front end refuses a version-3 payload rather than show one lens of
#: several as if it were all.
FORMAT_VERSION = 3


@dataclass
class LensPayload:
    """A result flattened to real positions and quantised, ready to be sent in pieces.

    Build it once per result with :meth:`from_result`; :meth:`sections` then encodes any subset.
    """

    meta: dict[str, Any]
    arrays: dict[str, np.ndarray]
    #: A long payload's strings after ``meta["tokens"]`` (:mod:`murano_widgets.payload.long`).
    later_tokens: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def from_result(
        cls, result: LogitLensResult | LensResults, model_name: str | None = None
    ) -> LensPayload:
        """Flattens and quantises ``result`` (which must carry the reduced fields).

        Named lenses (a :class:`~murano_widgets.LensResults`) share one string table and the
        per-position sections (:data:`SHARED_SECTIONS`); the first lens's own sections keep
        their names, so one lens costs what it always did, and lens ``i``'s are named
        ``"{i}/{section}"`` (``meta["lenses"][i]["prefix"]``).
        """
        members = list(lenses_of(result).items())
        first = members[0][1]
        lengths = first.lengths
        preflight("the widget's payload", [_payload_need(members, int(sum(lengths)))])
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int).tolist()
        vocab_size = int(first.vocab_size or 0) or None
        max_entropy = math.log2(vocab_size) if vocab_size else finite_max(first.entropy, 1.0)
        # One table of distinct strings for every lens; every id maps to its string's index.
        words: dict[int, str] = {}
        for _, member in members:
            words.update(_id_words(member))
        extra = [] if first.input_ids is not None else [w for row in first.input_words for w in row]
        # A long result's table holds the base sections' strings only; the top-k's others
        # follow as a detail section (murano_widgets.payload.long).
        long = is_long(len(first.addresses), int(sum(lengths)))
        if long:
            base_ids = base_token_ids([member for _, member in members])
            table, later, index_of = split_table(words, extra, base_ids, _string_table)
        else:
            table, index_of = _string_table(words, extra)
        arrays: dict[str, np.ndarray] = {}
        scales: dict[str, float] = {}
        lenses = []
        for i, (name, member) in enumerate(members):
            prefix = "" if i == 0 else f"{i}/"
            n_strings = len(table) + len(later) if long else len(table)
            own, own_scales, metrics, k = _encode(member, index_of, n_strings, max_entropy)
            for section, array in own.items():
                if i and section in SHARED_SECTIONS:
                    continue  # the same for every lens: sent once
                arrays[prefix + section] = array
                if section in own_scales:
                    scales[prefix + section] = own_scales[section]
            # The first lens's metrics and top-k are the payload's own (meta["metrics"],
            # meta["top_k"]), not repeated here: one lens's meta grows by a line, not 2 kB.
            own_meta = {"metrics": metrics, "top_k": k} if i else {}
            lenses.append(
                {
                    "name": name,
                    "kind": member.lens_kind or IDENTITY.kind,
                    "title": title_of(member),
                    "prefix": prefix,
                    **own_meta,
                }
            )
            if not i:
                first_metrics, first_k = metrics, k
        if long:
            narrow_token_sections(arrays)
            arrays[DETAIL_TOKENS] = detail_tokens_section(later)
        sent = {name.rsplit("/", 1)[-1] for name in arrays}
        meta = {
            "version": FORMAT_VERSION,
            "model_name": _display_name(model_name or first.model_name or ""),
            "layers": [int(layer) for layer in first.layers],
            "n_model_layers": first.n_model_layers,
            "lens_kind": lenses[0]["kind"],
            "lens_title": lenses[0]["title"],
            "lenses": lenses,
            "shared_sections": list(SHARED_SECTIONS),
            "prompts": list(first.prompts) if first.prompts else joined_prompts(first),
            "lengths": lengths,
            "offsets": offsets,
            "total": int(sum(lengths)),
            "tokens": table,
            "top_k": first_k,
            "max_entropy": max_entropy,
            "metrics": first_metrics,
            "answer_sets": _answer_sets_meta(first),
            "targets": list(first.targets or []),
            "roles": _role_names(first),
            "generation_starts": (
                None if first.generation_starts is None else list(first.generation_starts)
            ),
            "generated_texts": (
                None if first.generated_texts is None else list(first.generated_texts)
            ),
            # A metric's section that needs what the run was not given (its foils, its
            # token groups) is listed only where sent: a payload without is as it was.
            "base_sections": [
                name for name in BASE_SECTIONS if name not in _NEEDED or name in sent
            ],
            "sections": section_specs(arrays, scales),
        }
        # Direct logit attribution, sublayer rows and token groups: keys only a result with
        # them adds; so are the sections of a metric that needs what the run was not given.
        if first.group_names:
            meta["groups"] = list(first.group_names)
        meta["detail_sections"] = [
            name for name in DETAIL_SECTIONS if name not in _NEEDED or name in sent
        ]
        meta["detail_sections"] += [name for name in ATTRIBUTION_SECTIONS if name in sent]
        if long:  # one continuation of the table for every lens, as the table is one
            meta["detail_sections"].append(DETAIL_TOKENS)
            meta["shared_sections"].append(DETAIL_TOKENS)
            if first_k > 1:  # live, the top-k comes by blocks of positions, when shown
                meta["topk_window"] = TOPK_WINDOW
        meta.update(attribution_meta([member for _, member in members]))
        addresses = row_addresses(first)
        if addresses is not None:
            meta["addresses"] = addresses
        return cls(meta, arrays, later if long else [])

    @property
    def lens_names(self) -> list[str]:
        """The names of the lenses the payload holds, in order (one lens: its kind)."""
        return [lens["name"] for lens in self.meta["lenses"]]

    def _named(self, names: tuple[str, ...] | list[str]) -> list[str]:
        """``names`` for every lens: the first lens's as they are, the others' prefixed."""
        return [
            lens["prefix"] + name
            for lens in self.meta["lenses"]
            for name in names
            if not (lens["prefix"] and name in SHARED_SECTIONS)
        ]

    def sections(self, names: tuple[str, ...] | list[str]) -> dict[str, bytes]:
        """The named sections that exist, as little-endian bytes (of every lens)."""
        chosen = [name for name in self._named(names) if name in self.arrays]
        chosen += [name + HIGH for name in chosen if name + HIGH in self.arrays]  # long: 3 bytes
        return section_bytes({name: self.arrays[name] for name in chosen})

    def base_sections(self) -> dict[str, bytes]:
        """What the default view needs (every lens's: switching lenses waits for nothing)."""
        return self.sections(BASE_SECTIONS)

    def all_sections(self) -> dict[str, bytes]:
        """Everything the live widget syncs: the base and the detail sections (the
        attribution's among them); a long payload's top-k comes by blocks instead
        (:func:`~murano_widgets.payload.long.topk_window`)."""
        if not self.meta.get("topk_window"):
            return self.every_section()
        later = tuple(n for n in _LATER_SECTIONS if n not in (*WINDOWED, DETAIL_TOKENS))
        return self.sections(BASE_SECTIONS + later)

    def every_section(self) -> dict[str, bytes]:
        """Every section, a long payload's top-k too: what an export holds."""
        return self.sections(BASE_SECTIONS + _LATER_SECTIONS)

    def metric(self, name: str) -> dict[str, Any]:
        """The metadata of metric ``name`` (available or not; one that needs what the run was
        not given is not listed, and is unavailable with that reason)."""
        listed = next((m for m in self.meta["metrics"] if m["name"] == name), None)
        if listed is not None:
            return listed
        metric = METRICS[name]
        how = (
            "run with groups={name: TokenGroup or words}"
            if metric.needs == "groups"
            else f"run with answers=[...] and {metric.needs}=[...], one per prompt"
        )
        return {
            **metric.as_json(),
            "available": False,
            "unavailable_reason": f"needs {metric.needs}: {how}",
        }


def _payload_need(members: list[tuple[str, LogitLensResult]], positions: int) -> Need:
    """The payload's peak: every lens's fields over the real cells, as float64/int64 copies
    read out of the result (top-k ids and probabilities, each metric), before quantising."""
    cells = sum(len(member.addresses) for _, member in members) * positions
    k = int(members[0][1].topk_tokens.shape[-1]) if members[0][1].topk_tokens is not None else 1
    per_cell = 8 * (2 * k + len(RESULT_FIELDS))
    return Need(
        f"{positions} positions x {cells // max(positions, 1)} rows",
        cells * per_cell,
        f"{cells} cells x {per_cell} bytes (top_k={k} and {len(RESULT_FIELDS)} fields)",
        "Show fewer prompts or layers at a time (a result of them: result[...]).",
    )


def _encode(
    result: LogitLensResult, index_of: dict[Any, int], n_strings: int, max_entropy: float
) -> tuple[dict[str, np.ndarray], dict[str, float], list[dict[str, Any]], int]:
    """One lens's sections over real positions, quantised, their scales, its metrics (with
    their domains and availability) and its top-k."""
    mask = result.attention_mask.bool()
    batch_index, position_index = (t.numpy() for t in torch.nonzero(mask, as_tuple=True))
    lengths = result.lengths
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(int)

    def values(name: str) -> np.ndarray | None:
        """The field's real cells ``[L, T, ...]`` or positions ``[T]``, or None."""
        tensor = getattr(result, name, None)
        if tensor is None:
            return None
        array = tensor.detach().cpu().numpy()
        if array.ndim == 2:  # [n_inputs, seq]
            return array[batch_index, position_index]
        return array[:, batch_index, position_index]

    field_values = {name: values(name) for name in RESULT_FIELDS}
    for name in ("topk_tokens", "topk_probs"):
        if field_values[name] is not None:
            field_values[name] = field_values[name][..., 1:]  # rank 1 is predicted_tokens
    topk = field_values["topk_tokens"]
    k = 1 if topk is None or topk.shape[-1] == 0 else topk.shape[-1] + 1
    if k == 1:
        field_values["topk_tokens"] = field_values["topk_probs"] = None
    field_values.update(_answer_values(result, values))
    top1 = field_values["max_probs"].astype(np.float64)
    field_values["missing"] = ~np.isfinite(top1)
    final_tokens = field_values["final_tokens"]
    field_values["final_missing"] = None if final_tokens is None else final_tokens < 0
    last = offsets + np.asarray(lengths, dtype=int) - 1
    for name, field in (
        ("final_last_probs", "final_token_probs"),
        ("final_last_ranks", "final_token_ranks"),
    ):
        cells = field_values[field]
        field_values[name] = None if cells is None else cells[:, last]
    field_values.update(_generation_values(result, _role_names(result)))

    index_dtype = np.uint16 if n_strings <= U16 else np.uint32
    arrays: dict[str, np.ndarray] = {}
    scales: dict[str, float] = {}
    for name, section in SECTIONS.items():
        raw = field_values.get(name)
        if raw is None:
            continue
        if section.kind == "token":
            arrays[name] = _lookup(index_of, raw).astype(index_dtype)
        elif section.kind == "mask":
            if raw.any():  # sent only when some cell is marked
                arrays[name] = raw.astype(np.uint8)
        elif section.kind == "probability":
            # Every probability, the top-k's too, in steps of 1/65535: the tooltip prints
            # two decimals of a percent (0.01 %), and one number (a top-k entry that is also
            # the final prediction or the answer) must print the same in every place. A uint8
            # top-k (steps of 0.39 %) showed 0.023374 as "2.35%" beside its "2.34%" and
            # anything under 0.2 % as "0%". bench/payload_size.py (80 layers x 2 prompts x
            # 1,000 positions, top-5): 16.00 -> 20.00 bytes a cell with the top-k, 24.05 ->
            # 28.05 with every section; the default view stays at 4.00, and the top-k is a
            # detail section, sent on the first hover. The other way, a formatter keeping
            # to 1/255, would print the top-k in whole percents, unlike the same number in
            # the final prediction's row: one number, two texts.
            arrays[name] = quantise(raw, 1.0, np.uint16)
            scales[name] = 1 / U16
        elif section.kind == "bits":
            top = max_entropy if name == "entropy" else finite_max(raw, 1.0)
            arrays[name] = quantise(raw, top, np.uint16)
            scales[name] = top / U16
        elif section.kind == "code":
            arrays[name] = raw.astype(np.uint8)
        elif section.kind == "logit":  # signed, as computed (NaN: no value)
            arrays[name] = raw.astype(np.float32)
        elif section.kind == "rank":
            ranks = np.nan_to_num(raw.astype(np.float64), nan=0.0)
            arrays[name] = np.clip(ranks, 0, U16).astype(np.uint16)
    arrays.update(attribution_arrays(result, batch_index, position_index))
    if "input_ids" not in arrays:
        arrays["input_ids"] = np.array(
            [
                index_of[("w", result.input_words[b][s])]
                for b, s in zip(batch_index, position_index, strict=True)
            ],
            dtype=index_dtype,
        )
    metrics = []
    for metric in METRICS.values():
        if metric.needs and metric.field not in arrays:
            continue  # a run without what it needs has no such metric (not even in the menu)
        available, reason = _availability(metric, result, arrays)
        domain = metric_domain(metric, field_values.get(metric.field), max_entropy)
        metrics.append(
            {
                **metric.as_json(),
                "domain": list(domain),
                "available": available,
                "unavailable_reason": reason,
            }
        )
    return arrays, scales, metrics, k


def _availability(
    metric: Any, result: LogitLensResult, arrays: dict[str, np.ndarray]
) -> tuple[bool, str | None]:
    if metric.per_target and not result.targets:
        return False, (
            "no tokens are tracked: pass targets=[...], or track one (w.track(text), or the "
            "widget's track box)"
        )
    if metric.field in arrays:
        return True, None
    if metric.final_based:
        if result.n_model_layers is None:
            return False, (
                "needs the model's final layer: this result does not say how deep its model "
                "is (pass n_model_layers= or model=)"
            )
        return False, (
            f"needs the model's final layer ({result.n_model_layers - 1}), which this result "
            "does not hold"
        )
    if metric.field.startswith("answer"):
        return False, "no answers were given: pass answers=[...], one per prompt"
    return False, f"this result has no {metric.field}"


def _answer_values(result: LogitLensResult, values: Any) -> dict[str, np.ndarray | None]:
    """The answer and target sections' values, flattened like the other fields."""
    out: dict[str, np.ndarray | None] = {}
    for name in ("target_probs", "target_ranks", "group_probs"):
        out[name] = values(name)
    sets = list((result.answer_sets or {}).values())
    if not sets:
        return out
    out["answer_probs"] = np.stack([s.probs.numpy() for s in sets], axis=-1)
    out["answer_ranks"] = np.stack([s.ranks.numpy() for s in sets], axis=-1)
    first = sets[0]
    out["answer_token_probs"] = _values_of(first.token_probs, result)
    out["answer_token_ranks"] = _values_of(first.token_ranks, result)
    predicted = values("predicted_tokens")
    ids = first.first_token_ids
    width = max((len(i) for i in ids), default=1) or 1
    answer_ids = np.full((result.n_inputs, width), -2, dtype=np.int64)  # -2 matches no token
    for prompt, tokens in enumerate(ids):
        answer_ids[prompt, : len(tokens)] = tokens
    prompt_of = np.repeat(np.arange(result.n_inputs), result.lengths)
    out["answer_top1"] = (predicted[..., None] == answer_ids[prompt_of][None]).any(axis=-1)
    return out


def _role_names(result: LogitLensResult) -> list[str]:
    """The names ``token_roles`` codes index: the usual roles, then any other; [] without."""
    if result.token_roles is None:
        return []
    from murano_widgets.chat import role_names

    return role_names(result.token_roles)


def _generation_values(result: LogitLensResult, roles: list[str]) -> dict[str, np.ndarray | None]:
    """The ``generated`` mask and the ``token_roles`` codes over real positions, or None."""
    out: dict[str, np.ndarray | None] = {"generated": None, "token_roles": None}
    lengths = result.lengths
    if result.generation_starts is not None:
        out["generated"] = np.concatenate(
            [
                np.arange(n) >= start
                for n, start in zip(lengths, result.generation_starts, strict=True)
            ]
        )
    if result.token_roles is not None:
        if len(roles) > 255:
            raise ValueError(
                f"LogitLensResult.token_roles has {len(roles)} role names; at most 255"
            )
        code = {name: i for i, name in enumerate(roles)}
        out["token_roles"] = np.array(
            [code[role] for row in result.token_roles for role in row], dtype=np.uint8
        )
    return out


def _values_of(tensor: torch.Tensor, result: LogitLensResult) -> np.ndarray:
    """A ``[L, n_inputs, seq, ...]`` tensor's real cells, ``[L, T, ...]``."""
    batch_index, position_index = torch.nonzero(result.attention_mask.bool(), as_tuple=True)
    return tensor.detach().cpu().numpy()[:, batch_index.numpy(), position_index.numpy()]


def _answer_sets_meta(result: LogitLensResult) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "answers": [None if a is None else a[0] for a in scores.answers],
            "accepted": [None if a is None else list(a) for a in scores.answers],
            "n_tokens": [
                None if ids is None else max(len(seq) for seq in ids) for ids in scores.token_ids
            ],
        }
        for name, scores in (result.answer_sets or {}).items()
    ]


def _id_words(result: LogitLensResult) -> dict[int, str]:
    """Every token id's decoded text, from the result's table or from its word lists."""
    if result.token_strings is not None:
        return dict(result.token_strings)
    words: dict[int, str] = {}
    ids = result.predicted_tokens.reshape(-1).tolist()
    flat_words = [w for layer in result.predicted_words for row in layer for w in row]
    words.update(zip(ids, flat_words, strict=True))
    if result.input_ids is not None:
        flat_inputs = [w for row in result.input_words for w in row]
        words.update(zip(result.input_ids.reshape(-1).tolist(), flat_inputs, strict=True))
    return words


def _string_table(words: dict[int, str], extra: list[str]) -> tuple[list[str], dict[Any, int]]:
    """The distinct strings, and each token id's (and each ``("w", word)``'s) index among them."""
    table: list[str] = []
    position: dict[str, int] = {}
    index_of: dict[Any, int] = {}
    pairs = [*words.items(), *((None, word) for word in extra)]
    for token_id, word in pairs:
        if word not in position:
            position[word] = len(table)
            table.append(word)
        if token_id is not None:
            index_of[token_id] = position[word]
        index_of[("w", word)] = position[word]
    return table, index_of


def _lookup(index_of: dict[Any, int], ids: np.ndarray) -> np.ndarray:
    """Maps token ids to table indices.

    An id the table lacks (-1, a cell without a value) maps to entry 0; such cells are marked by
    the ``missing`` and ``final_missing`` sections, and the front end never shows their token.
    """
    unique, inverse = np.unique(ids, return_inverse=True)
    mapped = np.array([index_of.get(int(i), 0) for i in unique], dtype=np.int64)
    return mapped[inverse].reshape(ids.shape)


def _display_name(name: str) -> str:
    """A hub id as it is; a local folder by its own name (the full path is noise)."""
    path = Path(name)
    return path.name if name and path.is_dir() else name


def joined_prompts(result: LogitLensResult) -> list[str]:
    """A prompt's text rebuilt from its input words, when the result does not carry prompts."""
    texts = []
    for p in range(result.n_inputs):
        positions = result.positions(p).tolist()
        texts.append("".join(result.input_words[p][s] for s in positions))
    return texts
