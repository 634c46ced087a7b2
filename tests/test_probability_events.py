"""Every probability the package reports is the probability of an event it names.

An answer set's probability is that of "the continuation starts with one of the accepted token
sequences"; a target's, that of "the next token is one of its ids". Over many random answer
keys (prefixes and extensions of one another, duplicates, case and space variants, shared first
tokens) every reported probability, data-set mean and interval lies in [0, 1] and equals the
union's probability computed here from plain transformers: the teacher-forced probability of
each sequence from forward hooks and a softmax, combined by inclusion-exclusion (not by the
package's rule of dropping extensions).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from reference import ReferenceLens

from murano_widgets import LogitLens, PromptBatch, Results, lens_dataset, patch_lens
from murano_widgets.step.inputs import disjoint_sequences

PROMPTS = [
    "The capital of France is",
    "Alice met Bob. Alice gave",
    "one two",
    "The Eiffel Tower is in the city of",
]
# Under the tiny byte-level tokenizer these nest: " Ro" < " Rome", " b" < " bo" < " book",
# " Paris" < " Paris." < " Paris and", " Pa" < " Par"; " P", " paris" and " Rome" share the
# first token " "; " Paris"/"Paris"/" paris" are each other's variants.
POOL = [
    " Paris",
    " Paris.",
    " Paris and",
    " Pa",
    " Par",
    " P",
    " paris",
    "Paris",
    " Rome",
    " Ro",
    " book",
    " bo",
    " b",
    " Bob",
    " Bob.",
    " th",
    " three",
    " t",
]
N_KEYS = 32
# Random targets are often several tokens long: the step warns that only the first is tracked.
pytestmark = pytest.mark.filterwarnings("ignore:targets .* are several tokens long")


def continuation(tokenizer, prompt: str, text: str) -> list[int]:
    """The tokens ``text`` adds after ``prompt`` (tokenized together; alone if it merges)."""
    own = tokenizer(prompt)["input_ids"]
    full = tokenizer(prompt + text)["input_ids"]
    if full[: len(own)] == own and len(full) > len(own):
        return full[len(own) :]
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def forms(text: str) -> set[str]:
    """``text`` with and without one leading space, its first letter's case swapped or not."""
    bare = text[1:] if text.startswith(" ") else text
    cased = {bare, bare[:1].swapcase() + bare[1:]}
    return {text} | cased | {" " + c for c in cased}


def sequences_of(tokenizer, prompt: str, accepted: list[str], variants: bool) -> set[tuple]:
    found = {tuple(continuation(tokenizer, prompt, text)) for text in accepted}
    if variants:
        for text in accepted:
            for form in forms(text):
                ids = continuation(tokenizer, prompt, form)
                if len(ids) == 1:
                    found.add(tuple(ids))
    return found


class Union:
    """P(continuation starts with one of a set of sequences), per layer, by inclusion-exclusion.

    Two events "starts with s" and "starts with t" intersect only where one sequence is a prefix
    of the other (their intersection is then "starts with the longer"), so the only non-empty
    intersections are those of chains; the sum runs over every chain, signed by its length.
    """

    def __init__(self, reference: ReferenceLens) -> None:
        self.reference = reference
        self.cache: dict[tuple, torch.Tensor] = {}

    def starts_with(self, prompt_ids: list[int], sequence: tuple) -> torch.Tensor:
        key = (tuple(prompt_ids), sequence)
        if key not in self.cache:
            probs = self.reference.probs_of_ids(prompt_ids + list(sequence)).double()
            start = len(prompt_ids) - 1
            factors = [probs[:, start + k, token] for k, token in enumerate(sequence)]
            self.cache[key] = torch.stack(factors).prod(dim=0)
        return self.cache[key]

    def __call__(self, prompt_ids: list[int], sequences: set[tuple]) -> torch.Tensor:
        ordered = sorted(sequences, key=len)
        total = torch.zeros(self.reference.model.config.num_hidden_layers, dtype=torch.float64)

        def chains(last: int, length: int) -> None:
            nonlocal total
            tail = ordered[last]
            total = total + (-1) ** (length + 1) * self.starts_with(prompt_ids, tail)
            for nxt in range(last + 1, len(ordered)):
                longer = ordered[nxt]
                if len(longer) > len(tail) and longer[: len(tail)] == tail:
                    chains(nxt, length + 1)

        for first in range(len(ordered)):
            chains(first, 1)
        return total


# Strings whose continuations nest (each one's tokens extend the one before).
FAMILIES = [
    [" Paris", " Paris.", " Paris and"],
    [" Pa", " Par"],
    [" Ro", " Rome"],
    [" b", " bo", " book"],
    [" Bob", " Bob."],
    [" th", " three"],
]


def random_keys(rng: random.Random, n: int) -> list[list[str]]:
    """Answer keys of one to four accepted strings, drawn with repeats (duplicates) from POOL,
    most of them with two or more from one family of nesting strings."""
    keys = []
    for _ in range(n):
        key = [rng.choice(POOL) for _ in range(rng.randint(0, 2))]
        if rng.random() < 0.7 or not key:
            key += rng.choices(rng.choice(FAMILIES), k=rng.randint(1, 3))
        rng.shuffle(key)
        keys.append(key)
    return keys


def in_unit_interval(values) -> bool:
    values = np.asarray(values, dtype=np.float64)
    values = values[~np.isnan(values)]
    return bool(((values >= 0) & (values <= 1)).all())


@pytest.fixture(scope="module")
def gpt2(load_tiny, tiny_model_dirs):
    reference = ReferenceLens(tiny_model_dirs["gpt2"])
    return load_tiny("gpt2"), reference, Union(reference)


def test_disjoint_sequences_drops_extensions_and_duplicates():
    given = [[5, 6], [5], [5, 6, 7], [8, 9], [5], [8, 1], [8, 9]]
    assert disjoint_sequences(given) == [[5], [8, 9], [8, 1]]
    assert disjoint_sequences([[1, 2], [1, 3]]) == [[1, 2], [1, 3]]  # shared first token


def test_random_answer_keys_report_the_union_of_their_continuations(gpt2):
    model, reference, union = gpt2
    rng = random.Random(46)
    tokenizer = reference.tokenizer
    checked = overlapping = 0
    for _ in range(0, N_KEYS, len(PROMPTS)):
        keys = random_keys(rng, len(PROMPTS))
        variants = rng.random() < 0.5
        targets = list(dict.fromkeys(rng.choice(POOL) for _ in range(3)))
        lens = LogitLens(model, targets=targets, variants=variants)(
            Results(prompts=PromptBatch(list(PROMPTS), answers=keys))
        )["logit_lens"]
        scores = lens.answer_sets["answer"]
        for tensor in (scores.probs, scores.token_probs, lens.target_probs, lens.max_probs):
            assert in_unit_interval(tensor), (keys, variants)
        for p, (prompt, key) in enumerate(zip(PROMPTS, keys, strict=True)):
            prompt_ids = tokenizer(prompt)["input_ids"]
            sequences = sequences_of(tokenizer, prompt, key, variants)
            overlapping += any(a != b and b[: len(a)] == a for a in sequences for b in sequences)
            real = lens.attention_mask[p].bool()  # the tiny tokenizer pads on the left
            expected = union(prompt_ids, sequences)
            torch.testing.assert_close(
                scores.probs[:, p].double(), expected, atol=1e-9, rtol=2e-5, msg=f"{key!r}"
            )
            # The first-token event at the last real position: each distinct first id once.
            last = reference.probs_of_ids(prompt_ids)[:, -1].double()
            firsts = sorted({s[0] for s in sequences})
            torch.testing.assert_close(
                scores.token_probs[:, p, real][:, -1].double(),
                last[:, firsts].sum(-1),
                atol=1e-9,
                rtol=2e-5,
            )
            # Targets (first token, and single-token variants) as they follow the first prompt.
            probs = reference.probs_of_ids(prompt_ids).double()
            for t, text in enumerate(targets):
                ids = {continuation(tokenizer, PROMPTS[0], text)[0]}
                if variants:
                    ids |= {
                        i[0]
                        for form in forms(text)
                        if len(i := continuation(tokenizer, PROMPTS[0], form)) == 1
                    }
                torch.testing.assert_close(
                    lens.target_probs[:, p, real, t].double(),
                    probs[..., sorted(ids)].sum(-1),
                    atol=1e-9,
                    rtol=2e-5,
                )
            checked += 1
    assert checked == N_KEYS
    assert overlapping >= N_KEYS // 3  # the keys do exercise prefixes


def test_an_answer_and_its_longer_form_are_counted_once(gpt2):
    model, reference, union = gpt2
    prompt, key = PROMPTS[0], [" Paris", " Paris.", " Paris and"]
    lens = LogitLens(model)(Results(prompts=PromptBatch([prompt], answers=[key])))["logit_lens"]
    prompt_ids = reference.tokenizer(prompt)["input_ids"]
    only = {tuple(continuation(reference.tokenizer, prompt, " Paris"))}
    assert lens.answer_sets["answer"].token_ids == [[list(s) for s in only]]
    # The union is the shortest form's event, computed from the three sequences' own chains.
    expected = union(prompt_ids, sequences_of(reference.tokenizer, prompt, key, False))
    torch.testing.assert_close(expected, union(prompt_ids, only), atol=1e-12, rtol=1e-9)
    torch.testing.assert_close(lens.answer_probs[:, 0].double(), expected, atol=1e-9, rtol=2e-5)


def test_data_set_means_and_intervals_are_probabilities_of_the_union(gpt2):
    model, reference, union = gpt2
    rng = random.Random(7)
    prompts = PROMPTS * 2
    # Every family of nesting strings, with a random string more.
    keys = [FAMILIES[i % len(FAMILIES)] + [rng.choice(POOL)] for i in range(len(prompts))]
    data = lens_dataset(model, prompts, keys, variants=True, progress=False, batch_size=3)
    tokenizer = reference.tokenizer
    expected = np.stack(
        [
            union(tokenizer(p)["input_ids"], sequences_of(tokenizer, p, k, True)).numpy()
            for p, k in zip(prompts, keys, strict=True)
        ],
        axis=1,
    )  # [layers, prompts]
    np.testing.assert_allclose(data.answer_probs["answer"], expected, atol=1e-9, rtol=2e-5)
    summary = data.summary(n_boot=200)
    for column in ("answer_prob_mean", "answer_prob_ci_low", "answer_prob_ci_high"):
        assert in_unit_interval(summary[column]), column
    np.testing.assert_allclose(
        summary["answer_prob_mean"], expected.mean(axis=1), atol=1e-9, rtol=2e-5
    )
    assert (summary["answer_prob_ci_low"] <= summary["answer_prob_mean"] + 1e-9).all()
    assert (summary["answer_prob_ci_high"] >= summary["answer_prob_mean"] - 1e-9).all()


def test_patching_reports_the_union_before_and_after(gpt2):
    model, reference, union = gpt2
    prompt, key = PROMPTS[0], [" Pa", " Par", " Paris", " Paris.", " P"]
    prompt_ids = reference.tokenizer(prompt)["input_ids"]
    sequences = sequences_of(reference.tokenizer, prompt, key, False)
    patched = patch_lens(model, prompt, layer=1, position=-1, source="zero", answers=[key])
    torch.testing.assert_close(
        patched.answer_probs_clean.double(), union(prompt_ids, sequences), atol=1e-9, rtol=2e-5
    )
    # The patched run by hand: block 1's output zeroed at the prompt's last position.
    position = len(prompt_ids) - 1

    def zero(_module, _inputs, output):
        (output[0] if isinstance(output, tuple) else output)[:, position] = 0

    hook = reference.blocks[1].register_forward_hook(zero)
    try:
        after = Union(reference)(prompt_ids, sequences)
    finally:
        hook.remove()
    torch.testing.assert_close(patched.answer_probs_patched.double(), after, atol=1e-9, rtol=2e-5)
    assert in_unit_interval(patched.answer_probs_clean)
    assert in_unit_interval(patched.answer_probs_patched)
