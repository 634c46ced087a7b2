"""The toy world: a deterministic generator of the demo model's training text and its tests.

Everything the demo model knows is written in this file: facts with known answers (countries
and their capitals and languages, animals and their sounds and young, opposites, plurals,
colours of things), ordered sequences (days, months, counting words, the alphabet), small
arithmetic in words, and short stories that repeat names and word lists (so that induction, the
copying of what came before, shows up in the lens). No third-party text is used.

A fact is written as a *frame* (a sentence wrapper such as ``"Everyone knows that {clause}"``)
around a *clause* (such as ``"the capital of {x} is"``) followed by the answer. Each family keeps
one frame out of its training text, so the evaluation asks every fact in a phrasing the model
never saw for that family (it saw the frame with other families only). Arithmetic also keeps
some addition pairs out entirely (their swapped order is trained), and stories keep some
opening/closing combinations out.

The generator is a pure function of its seed: ``generate_corpus(seed)`` returns the same list of
documents on every machine and Python version (it uses only ``random.Random`` with an integer
seed and fixed tables).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "EOS",
    "FACT_FAMILIES",
    "EvalPrompt",
    "corpus_hash",
    "eval_prompts",
    "generate_corpus",
]

EOS = "<|endoftext|>"
"""The special token that separates documents (and pads batches)."""

# ---------------------------------------------------------------------------------------------
# The tables of the world.

COUNTRIES = [
    # (country, capital, language)
    ("France", "Paris", "French"),
    ("Germany", "Berlin", "German"),
    ("Italy", "Rome", "Italian"),
    ("Spain", "Madrid", "Spanish"),
    ("Portugal", "Lisbon", "Portuguese"),
    ("England", "London", "English"),
    ("Ireland", "Dublin", "English"),
    ("Austria", "Vienna", "German"),
    ("Greece", "Athens", "Greek"),
    ("Poland", "Warsaw", "Polish"),
    ("Russia", "Moscow", "Russian"),
    ("Sweden", "Stockholm", "Swedish"),
    ("Norway", "Oslo", "Norwegian"),
    ("Denmark", "Copenhagen", "Danish"),
    ("Finland", "Helsinki", "Finnish"),
    ("Netherlands", "Amsterdam", "Dutch"),
    ("Hungary", "Budapest", "Hungarian"),
    ("Turkey", "Ankara", "Turkish"),
    ("Egypt", "Cairo", "Arabic"),
    ("Japan", "Tokyo", "Japanese"),
    ("China", "Beijing", "Chinese"),
    ("Korea", "Seoul", "Korean"),
    ("Thailand", "Bangkok", "Thai"),
    ("Vietnam", "Hanoi", "Vietnamese"),
    ("India", "Delhi", "Hindi"),
    ("Iran", "Tehran", "Persian"),
    ("Kenya", "Nairobi", "Swahili"),
    ("Brazil", "Brasilia", "Portuguese"),
    ("Argentina", "Buenos Aires", "Spanish"),
    ("Peru", "Lima", "Spanish"),
    ("Mexico", "Mexico City", "Spanish"),
    ("Canada", "Ottawa", "English"),
    ("Australia", "Canberra", "English"),
    ("Israel", "Jerusalem", "Hebrew"),
]

ANIMALS = [
    # (animal, sound, young, plural)
    ("dog", "woof", "puppy", "dogs"),
    ("cat", "meow", "kitten", "cats"),
    ("cow", "moo", "calf", "cows"),
    ("sheep", "baa", "lamb", "sheep"),
    ("pig", "oink", "piglet", "pigs"),
    ("horse", "neigh", "foal", "horses"),
    ("duck", "quack", "duckling", "ducks"),
    ("lion", "roar", "cub", "lions"),
    ("frog", "croak", "tadpole", "frogs"),
    ("owl", "hoot", "owlet", "owls"),
    ("goat", "bleat", "kid", "goats"),
    ("hen", "cluck", "chick", "hens"),
    ("mouse", "squeak", "pinkie", "mice"),
    ("wolf", "howl", "pup", "wolves"),
    ("bear", "growl", "cub", "bears"),
    ("goose", "honk", "gosling", "geese"),
    ("donkey", "bray", "foal", "donkeys"),
    ("snake", "hiss", "hatchling", "snakes"),
    ("bee", "buzz", "larva", "bees"),
    ("crow", "caw", "chick", "crows"),
    ("elephant", "trumpet", "calf", "elephants"),
    ("swan", "whoop", "cygnet", "swans"),
]

OPPOSITES = [
    ("hot", "cold"),
    ("big", "small"),
    ("tall", "short"),
    ("fast", "slow"),
    ("happy", "sad"),
    ("up", "down"),
    ("in", "out"),
    ("open", "closed"),
    ("light", "dark"),
    ("day", "night"),
    ("old", "young"),
    ("rich", "poor"),
    ("hard", "soft"),
    ("wet", "dry"),
    ("full", "empty"),
    ("early", "late"),
    ("left", "right"),
    ("loud", "quiet"),
    ("strong", "weak"),
    ("thick", "thin"),
    ("near", "far"),
    ("good", "bad"),
    ("clean", "dirty"),
    ("sharp", "blunt"),
    ("win", "lose"),
    ("push", "pull"),
]

PLURALS = [
    ("book", "books"),
    ("tree", "trees"),
    ("house", "houses"),
    ("car", "cars"),
    ("apple", "apples"),
    ("child", "children"),
    ("man", "men"),
    ("woman", "women"),
    ("foot", "feet"),
    ("tooth", "teeth"),
    ("box", "boxes"),
    ("bus", "buses"),
    ("baby", "babies"),
    ("city", "cities"),
    ("knife", "knives"),
    ("leaf", "leaves"),
    ("fish", "fish"),
    ("person", "people"),
    ("cup", "cups"),
    ("star", "stars"),
    ("bird", "birds"),
    ("shoe", "shoes"),
    ("dress", "dresses"),
    ("church", "churches"),
]

COLOURS = [
    ("the sky", "blue"),
    ("grass", "green"),
    ("snow", "white"),
    ("coal", "black"),
    ("a banana", "yellow"),
    ("a tomato", "red"),
    ("a lemon", "yellow"),
    ("milk", "white"),
    ("a frog", "green"),
    ("the sun", "yellow"),
    ("blood", "red"),
    ("a carrot", "orange"),
    ("a pumpkin", "orange"),
    ("chocolate", "brown"),
    ("a lime", "green"),
    ("ink", "black"),
    ("a cherry", "red"),
    ("a violet", "purple"),
    ("a plum", "purple"),
    ("the sea", "blue"),
    ("a flamingo", "pink"),
    ("an elephant", "grey"),
    ("soil", "brown"),
    ("a cloud", "white"),
]

DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
]  # fmt: skip
NUMBER_WORDS = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty",
]  # fmt: skip
ALPHABET = [chr(code) for code in range(ord("A"), ord("Z") + 1)]

NAMES = [
    "Alice", "Bob", "Mara", "Tobin", "Lena", "Omar", "Nina", "Kofi", "Rosa", "Ivan", "Yuki",
    "Pablo", "Zara", "Hugo", "Emma", "Sami", "Ada", "Leo", "Tara", "Felix", "Maya", "Otto",
    "Iris", "Jonas", "Lucy", "Ravi", "Clara", "Finn", "Nora", "Theo",
]  # fmt: skip
PLACES = ["park", "market", "beach", "library", "garden", "school", "river", "forest", "zoo"]
THINGS = ["book", "ball", "apple", "kite", "letter", "cup", "flower", "hat", "key", "map"]

# ---------------------------------------------------------------------------------------------
# Templates.

FRAMES = [
    "{Clause} {answer}.",
    "Everyone knows that {clause} {answer}.",
    "It is true that {clause} {answer}.",
    "Here is a fact: {clause} {answer}.",
    "My teacher told me that {clause} {answer}.",
    "I read that {clause} {answer}.",
]
"""Sentence wrappers around a fact's clause. Frame 0 (the bare clause) is always trained."""

FACT_FAMILIES: dict[str, tuple[list[str], list[tuple[str, str]]]] = {
    "capital": (
        ["the capital of {x} is", "the capital city of {x} is", "the government of {x} sits in"],
        [(country, capital) for country, capital, _ in COUNTRIES],
    ),
    "language": (
        ["people in {x} speak", "the language of {x} is", "in {x} most people speak"],
        [(country, language) for country, _, language in COUNTRIES],
    ),
    "sound": (
        ["the {x} says", "a {x} goes", "the sound a {x} makes is"],
        [(animal, sound) for animal, sound, _, _ in ANIMALS],
    ),
    "young": (
        ["a baby {x} is called", "the young of the {x} is called", "the {x} has a baby called"],
        [(animal, young) for animal, _, young, _ in ANIMALS],
    ),
    "opposite": (
        ["the opposite of {x} is", "the word that means the opposite of {x} is"],
        [*OPPOSITES, *((b, a) for a, b in OPPOSITES)],
    ),
    "plural": (
        ["the plural of {x} is", "one {x}, two", "one {x} and many"],
        [*PLURALS, *((animal, plural) for animal, _, _, plural in ANIMALS)],
    ),
    "colour": (
        ["the colour of {x} is", "{x} has the colour", "{x} is coloured"],
        COLOURS,
    ),
}
"""Each fact family: its clauses (``{x}`` is the subject; the answer follows) and its pairs."""

ARITHMETIC_CLAUSES = {
    "addition": ["{a} plus {b} is", "{a} plus {b} equals", "the sum of {a} and {b} is"],
    "subtraction": ["{a} minus {b} is", "{a} minus {b} equals", "{a} take away {b} leaves"],
}

SEQUENCES = {
    "days": (DAYS, True),
    "months": (MONTHS, True),
    "counting": (NUMBER_WORDS[1:], False),
    "alphabet": (ALPHABET, False),
}
"""Each ordered sequence: its items and whether it wraps around (Sunday, Monday)."""

SEQUENCE_PREFIXES = ["", "Count with me: ", "In order: ", "Say them all: ", "Once more: "]
SEQUENCE_SEPARATORS = [", ", " "]

STORY_OPENINGS = [
    "{A} and {B} went to the {place}.",
    "{A} met {B} at the {place}.",
    "{A} and {B} played in the {place}.",
    "One day, {A} and {B} walked to the {place}.",
]
STORY_CLOSINGS = [
    "{A} gave a {thing} to {B}.",
    "{B} gave a {thing} to {A}.",
    "Then {A} said hello to {B}.",
    "Later, {B} waved at {A}.",
    "{A} showed the {thing} to {B}.",
]
HELD_OUT_STORIES = {(0, 1), (1, 0), (2, 4), (3, 2)}
"""(opening, closing) combinations that appear only in the evaluation."""

WORD_POOL = sorted({animal for animal, *_ in ANIMALS} | set(THINGS) | {noun for noun, _ in PLURALS})
"""Words for the repeated-list documents (pure induction: copy what followed last time)."""

# The mixture of the training text: (kind, weight).
MIXTURE = [("fact", 50), ("arithmetic", 25), ("sequence", 12), ("story", 8), ("repeat", 5)]


def _held_out_frame(family_index: int) -> int:
    """The frame a family never sees in training (never frame 0, the bare clause)."""
    return 1 + family_index % (len(FRAMES) - 1)


def _frame(frame: str, clause: str, answer: str) -> str:
    text = frame.format(Clause=clause[:1].upper() + clause[1:], clause=clause, answer=answer)
    return text


def _addition_pairs() -> list[tuple[int, int]]:
    return [(a, b) for a in range(11) for b in range(11)]


def held_out_addition_pairs(seed: int = 0) -> list[tuple[int, int]]:
    """Addition pairs ``(a, b)`` never trained in this order (``(b, a)`` is trained).

    Args:
        seed: The generator's seed.

    Returns:
        Twelve pairs with ``1 <= a < b <= 10``.
    """
    rng = random.Random(f"held-out-pairs-{seed}")
    candidates = [(a, b) for a, b in _addition_pairs() if 1 <= a < b]
    return sorted(rng.sample(candidates, 12))


# ---------------------------------------------------------------------------------------------
# Training text.


def _fact_sentence(rng: random.Random) -> str:
    family_index = rng.randrange(len(FACT_FAMILIES))
    clauses, pairs = list(FACT_FAMILIES.values())[family_index]
    held_out = _held_out_frame(family_index)
    frame_index = rng.choice([i for i in range(len(FRAMES)) if i != held_out])
    x, answer = rng.choice(pairs)
    clause = rng.choice(clauses).format(x=x)
    return _frame(FRAMES[frame_index], clause, answer)


def _arithmetic_sentence(rng: random.Random, held_pairs: set[tuple[int, int]]) -> str:
    kind = rng.choice(sorted(ARITHMETIC_CLAUSES))
    family_index = len(FACT_FAMILIES) + (kind == "subtraction")
    held_out = _held_out_frame(family_index)
    while True:
        a, b = rng.choice(_addition_pairs())
        if kind == "subtraction" or (a, b) not in held_pairs:
            break
    if kind == "addition":
        left, right, answer = a, b, a + b
    else:
        left, right, answer = a + b, b, a
    clause = rng.choice(ARITHMETIC_CLAUSES[kind]).format(
        a=NUMBER_WORDS[left], b=NUMBER_WORDS[right]
    )
    frame_index = rng.choice([i for i in range(len(FRAMES)) if i != held_out])
    return _frame(FRAMES[frame_index], clause, NUMBER_WORDS[answer])


def _sequence_items(items: Sequence[str], wraps: bool, start: int, length: int) -> list[str]:
    if wraps:
        return [items[(start + i) % len(items)] for i in range(length)]
    return list(items[start : start + length])


def _sequence_text(rng: random.Random) -> str:
    names = sorted(SEQUENCES)
    index = rng.randrange(len(names))
    items, wraps = SEQUENCES[names[index]]
    held_out = 1 + index % (len(SEQUENCE_PREFIXES) - 1)
    prefix = SEQUENCE_PREFIXES[
        rng.choice([i for i in range(len(SEQUENCE_PREFIXES)) if i != held_out])
    ]
    length = rng.randint(3, 8)
    start = rng.randrange(len(items) if wraps else len(items) - length + 1)
    separator = rng.choice(SEQUENCE_SEPARATORS)
    return prefix + separator.join(_sequence_items(items, wraps, start, length)) + "."


def _story_text(rng: random.Random) -> str:
    while True:
        opening, closing = rng.randrange(len(STORY_OPENINGS)), rng.randrange(len(STORY_CLOSINGS))
        if (opening, closing) not in HELD_OUT_STORIES:
            break
    first, second = rng.sample(NAMES, 2)
    fields = {"A": first, "B": second, "place": rng.choice(PLACES), "thing": rng.choice(THINGS)}
    return STORY_OPENINGS[opening].format(**fields) + " " + STORY_CLOSINGS[closing].format(**fields)


def _repeat_text(rng: random.Random) -> str:
    words = " ".join(rng.sample(WORD_POOL, rng.randint(3, 6)))
    return f"Remember these words: {words}. Again: {words}."


def generate_corpus(seed: int = 0, n_documents: int = 100_000) -> list[str]:
    """The training text: ``n_documents`` short documents of one to four sentences each.

    Args:
        seed: The seed of the generator; the same seed gives the same documents.
        n_documents: How many documents to write.

    Returns:
        The documents, without separators (the trainer joins them with ``EOS``).
    """
    rng = random.Random(seed)
    held_pairs = set(held_out_addition_pairs(seed))
    kinds, weights = zip(*MIXTURE, strict=True)
    documents = []
    for _ in range(n_documents):
        sentences = []
        for _ in range(rng.randint(1, 4)):
            kind = rng.choices(kinds, weights)[0]
            if kind == "fact":
                sentences.append(_fact_sentence(rng))
            elif kind == "arithmetic":
                sentences.append(_arithmetic_sentence(rng, held_pairs))
            elif kind == "sequence":
                sentences.append(_sequence_text(rng))
            elif kind == "story":
                sentences.append(_story_text(rng))
            else:
                sentences.append(_repeat_text(rng))
        documents.append(" ".join(sentences))
    return documents


def corpus_hash(documents: Sequence[str]) -> str:
    """The sha256 of the documents joined with ``EOS``, as hex."""
    digest = hashlib.sha256()
    for document in documents:
        digest.update(document.encode("utf-8"))
        digest.update(EOS.encode("utf-8"))
    return digest.hexdigest()


def vocabulary_text() -> list[str]:
    """Every word of the world at least once, for the tokenizer's trainer."""
    words: set[str] = set(FRAMES[1:]) | set(SEQUENCE_PREFIXES) | set(WORD_POOL)
    for clauses, pairs in FACT_FAMILIES.values():
        words |= set(clauses)
        for x, answer in pairs:
            words |= {x, answer}
    for clauses in ARITHMETIC_CLAUSES.values():
        words |= set(clauses)
    words |= set(NUMBER_WORDS) | set(DAYS) | set(MONTHS) | set(ALPHABET) | set(NAMES)
    words |= set(STORY_OPENINGS) | set(STORY_CLOSINGS) | set(PLACES) | set(THINGS)
    return sorted(words)


# ---------------------------------------------------------------------------------------------
# Evaluation prompts.


@dataclass(frozen=True)
class EvalPrompt:
    """A held-out prompt and the word that should come next.

    Attributes:
        family: The family it tests, e.g. ``"capital"`` or ``"addition"``.
        prompt: The text given to the model, e.g. ``"Everyone knows that the capital of France
            is"``.
        answer: The expected continuation with its leading space, e.g. ``" Paris"``. A model
            passes when its top-1 next token is the answer's first token.
        split: What is held out: ``"template"`` (a phrasing never trained for this family),
            ``"pair"`` (an arithmetic pair never trained in this order), ``"story"`` (an
            unseen story shape), ``"list"`` (a fresh word list) or ``"demo"`` (the package's
            demo prompts, which are in the training text).
    """

    family: str
    prompt: str
    answer: str
    split: str


def _strip_answer(frame: str, clause: str) -> str:
    """The frame filled with the clause, cut just before the answer."""
    marker = "\x00"
    text = _frame(frame, clause, marker)
    return text[: text.index(marker)].rstrip()


def eval_prompts(seed: int = 0) -> list[EvalPrompt]:
    """Held-out prompts with their expected next word, for every family.

    Args:
        seed: The seed the corpus was generated with (it picks the held-out arithmetic pairs
            and the sampled story, sequence and list prompts).

    Returns:
        The prompts, grouped by family in a fixed order.
    """
    rng = random.Random(f"eval-{seed}")
    prompts: list[EvalPrompt] = []
    for family_index, (family, (clauses, pairs)) in enumerate(FACT_FAMILIES.items()):
        frame = FRAMES[_held_out_frame(family_index)]
        for clause in clauses:
            for x, answer in pairs:
                prompts.append(
                    EvalPrompt(
                        family, _strip_answer(frame, clause.format(x=x)), " " + answer, "template"
                    )
                )
    prompts += _arithmetic_prompts(rng, seed)
    prompts += _sequence_prompts(rng)
    prompts += _story_prompts(rng)
    for _ in range(50):
        words = rng.sample(WORD_POOL, rng.randint(3, 6))
        cut = rng.randint(1, len(words) - 1)
        text = f"Remember these words: {' '.join(words)}. Again: {' '.join(words[:cut])}"
        prompts.append(EvalPrompt("repeat", text, " " + words[cut], "list"))
    prompts.append(EvalPrompt("demo", "The capital of France is", " Paris", "demo"))
    prompts.append(EvalPrompt("demo", "Monday, Tuesday,", " Wednesday", "demo"))
    return prompts


def _arithmetic_prompts(rng: random.Random, seed: int) -> list[EvalPrompt]:
    prompts = []
    for offset, kind in enumerate(sorted(ARITHMETIC_CLAUSES)):
        frame = FRAMES[_held_out_frame(len(FACT_FAMILIES) + offset)]
        for clause in ARITHMETIC_CLAUSES[kind]:
            for a, b in rng.sample(_addition_pairs(), 20):
                left, right, answer = (a, b, a + b) if kind == "addition" else (a + b, b, a)
                text = clause.format(a=NUMBER_WORDS[left], b=NUMBER_WORDS[right])
                prompts.append(
                    EvalPrompt(
                        kind, _strip_answer(frame, text), " " + NUMBER_WORDS[answer], "template"
                    )
                )
    for a, b in held_out_addition_pairs(seed):
        for clause in ARITHMETIC_CLAUSES["addition"]:
            text = clause.format(a=NUMBER_WORDS[a], b=NUMBER_WORDS[b])
            prompts.append(
                EvalPrompt(
                    "addition", _strip_answer(FRAMES[0], text), " " + NUMBER_WORDS[a + b], "pair"
                )
            )
    return prompts


def _sequence_prompts(rng: random.Random) -> list[EvalPrompt]:
    prompts = []
    for index, name in enumerate(sorted(SEQUENCES)):
        items, wraps = SEQUENCES[name]
        prefix = SEQUENCE_PREFIXES[1 + index % (len(SEQUENCE_PREFIXES) - 1)]
        for _ in range(20):
            length = rng.randint(2, 4)
            start = rng.randrange(len(items) if wraps else len(items) - length)
            shown = _sequence_items(items, wraps, start, length + 1)
            separator = rng.choice(SEQUENCE_SEPARATORS)
            text = prefix + separator.join(shown[:-1]) + separator.rstrip()
            prompts.append(EvalPrompt(name, text, " " + shown[-1], "template"))
    return prompts


def _story_prompts(rng: random.Random) -> list[EvalPrompt]:
    prompts = []
    for opening, closing in sorted(HELD_OUT_STORIES):
        for _ in range(10):
            first, second = rng.sample(NAMES, 2)
            fields = {
                "A": first,
                "B": second,
                "place": rng.choice(PLACES),
                "thing": rng.choice(THINGS),
            }
            story = STORY_OPENINGS[opening].format(**fields) + " "
            story += STORY_CLOSINGS[closing].format(**fields)
            answer = " " + (second if story.rstrip(".").endswith(second) else first)
            prompts.append(EvalPrompt("story", story.rstrip(".")[: -len(answer)], answer, "story"))
    return prompts
