"""Token groups: a concept tracked as a set of tokens rather than one token.

A word reaches a model's next-token distribution through several tokens: " flower", "flower",
"fl", " fl", ... A :class:`TokenGroup` is such a set; the step sums the probabilities of its
tokens at every cell (``run_logit_lens(model, prompts, groups={...})``), which is the
probability that the next token is one of them (a token counted once, so never above 1).

:meth:`TokenGroup.word` builds the set Wendler et al. ("Do Llamas work in English?", 2024)
track for a word, as their reference code (``epfl-dlab/llm-latent-language``: ``token_prefixes``,
``add_spaces``, ``unicode_prefix_tokid``) builds it: every vocabulary token that is a prefix of
the word, with and without the leading space, and the token of the word's first UTF-8 byte where
it starts with a multibyte character (a CJK or Cyrillic word). The vocabulary's own spelling of
a token is read from the tokenizer: a byte-level BPE's (GPT-2's ``Ġ`` for a space, every byte a
character), a SentencePiece's (``▁`` for a space, ``<0xE6>`` for a byte of its byte fallback) or
a vocabulary of plain text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["TokenGroup", "vocabulary_style"]

# The space marks of the two common vocabularies' spellings.
_BYTE_LEVEL_SPACE = "Ġ"
_SENTENCEPIECE_SPACE = "▁"


@dataclass(frozen=True)
class TokenGroup:
    """A set of vocabulary tokens whose probabilities are summed into one.

    Attributes:
        ids: The tokens' ids, each once, in the order they were found.
        name: What the group stands for (the word, or the tokens' text), for its repr and a
            legend.
    """

    ids: tuple[int, ...]
    name: str = ""

    def __post_init__(self) -> None:
        ids = tuple(dict.fromkeys(int(i) for i in self.ids))
        if not ids:
            raise ValueError(f"TokenGroup {self.name!r} holds no token: a group needs at least one")
        if any(i < 0 for i in ids):
            raise ValueError(f"TokenGroup {self.name!r}: token ids must be >= 0, got {list(ids)}")
        object.__setattr__(self, "ids", ids)

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        shown = ", ".join(str(i) for i in self.ids[:8])
        more = f", ... {len(self.ids) - 8} more" if len(self.ids) > 8 else ""
        return f"TokenGroup({self.name!r}, {len(self.ids)} tokens: [{shown}{more}])"

    @classmethod
    def word(cls, tokenizer: Any, word: str, *, spaces: bool = True) -> TokenGroup:
        """Wendler et al.'s set for ``word``: every vocabulary token that is a prefix of it,
        with and without the leading space, and the token of its first UTF-8 byte where it
        starts with a multibyte character.

        Args:
            tokenizer: A Hugging Face tokenizer (its ``get_vocab()`` is read).
            word: The word, without a leading space (one is added for the spaced forms).
            spaces: Also count the prefixes with a leading space (Wendler's ``add_spaces``).

        Raises:
            ValueError: If ``word`` is not a non-empty string, or no token of the vocabulary
                is a prefix of it.
        """
        if not isinstance(word, str) or not word.strip():
            raise ValueError(f"TokenGroup.word: word must be a non-empty string, got {word!r}")
        vocab = _vocab(tokenizer)
        spell = _speller(vocabulary_style(vocab))
        bare = word[1:] if word.startswith(" ") else word
        found = []
        # A prefix of the spaced form holds at least one letter: the space alone is no part of
        # the word (Wendler's add_spaces puts the mark before prefixes of one letter or more).
        for form, start in [(" " + bare, 2), (bare, 1)][0 if spaces else 1 :]:
            for end in range(start, len(form) + 1):
                found.append(vocab.get(spell(form[:end])))
        first = bare[:1].encode("utf-8")
        if len(first) > 1:  # a multibyte first character: its leading byte's token
            found += [
                vocab.get(byte) for byte in _byte_spellings(first[0], vocabulary_style(vocab))
            ]
        ids = [i for i in found if i is not None]
        if not ids:
            raise ValueError(f"TokenGroup.word: no token of the vocabulary is a prefix of {word!r}")
        return cls(tuple(ids), bare)

    @classmethod
    def tokens(cls, tokenizer: Any, tokens: Iterable[str | int], name: str = "") -> TokenGroup:
        """A group of given tokens: each a token's text (``" Paris"``: it must encode to
        exactly one token) or its id.

        Raises:
            ValueError: For a text that is not one token, or an id outside the vocabulary.
        """
        if isinstance(tokens, (str, int)):
            raise ValueError(
                f"TokenGroup.tokens: tokens must be a list of token texts or ids, got {tokens!r}"
            )
        size = len(tokenizer)
        ids = []
        for item in tokens:
            if isinstance(item, bool) or not isinstance(item, (str, int)):
                raise ValueError(
                    f"TokenGroup.tokens: each token must be a text or an id, got {item!r}"
                )
            if isinstance(item, int):
                if not 0 <= item < size:
                    raise ValueError(
                        f"TokenGroup.tokens: token id {item} is outside the vocabulary "
                        f"(0 to {size - 1})"
                    )
                ids.append(item)
                continue
            encoded = tokenizer.encode(item, add_special_tokens=False)
            if len(encoded) != 1:
                raise ValueError(
                    f"TokenGroup.tokens: {item!r} is {len(encoded)} tokens, not one "
                    f"({encoded}); use TokenGroup.word for a word's set"
                )
            ids.append(encoded[0])
        if not name:
            name = "|".join(str(t) for t in tokens)
        return cls(tuple(ids), name)

    @classmethod
    def of(cls, tokenizer: Any, value: Any, where: str) -> TokenGroup:
        """``value`` as a group: a :class:`TokenGroup` as it is, a string as its word's group.

        Raises:
            ValueError: For anything else, naming ``where``.
        """
        if isinstance(value, TokenGroup):
            return value
        if isinstance(value, str):
            return cls.word(tokenizer, value)
        raise ValueError(
            f"{where} must be a TokenGroup or a word (a string), got {type(value).__name__} "
            f"{value!r:.60}"
        )


def _vocab(tokenizer: Any) -> dict[str, int]:
    get = getattr(tokenizer, "get_vocab", None)
    if get is None:
        raise ValueError(
            f"TokenGroup.word needs a tokenizer with get_vocab(), got {type(tokenizer).__name__}"
        )
    return dict(get())


def vocabulary_style(vocab: dict[str, int]) -> str:
    """How a vocabulary spells its tokens: ``"byte_level"`` (GPT-2's: ``Ġ`` for a space, each
    byte one character), ``"sentencepiece"`` (``▁`` for a space, ``<0xNN>`` byte fallback) or
    ``"plain"`` (text as it is). Read from which space mark its tokens start with most."""
    byte_level = sum(1 for token in vocab if token.startswith(_BYTE_LEVEL_SPACE))
    sentencepiece = sum(1 for token in vocab if token.startswith(_SENTENCEPIECE_SPACE))
    if byte_level == sentencepiece == 0:
        return "plain"
    return "byte_level" if byte_level >= sentencepiece else "sentencepiece"


def _speller(style: str) -> Any:
    """Text to the vocabulary's spelling of it."""
    if style == "byte_level":
        table = byte_characters()
        return lambda text: "".join(table[b] for b in text.encode("utf-8"))
    if style == "sentencepiece":
        return lambda text: text.replace(" ", _SENTENCEPIECE_SPACE)
    return lambda text: text


def _byte_spellings(byte: int, style: str) -> Sequence[str]:
    """The vocabulary's spellings of a lone byte (as the first token of a word, bare and after
    a space where the vocabulary has such a token)."""
    if style == "byte_level":
        char = byte_characters()[byte]
        return [char, _BYTE_LEVEL_SPACE + char]
    return [f"<0x{byte:02X}>"]


def byte_characters() -> list[str]:
    """GPT-2's byte-level alphabet: the character a byte-level BPE vocabulary spells each byte
    with (printable bytes as themselves, the others shifted past 255; a space is ``Ġ``)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    table = {}
    shifted = 0
    for byte in range(256):
        if byte in printable:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + shifted)
            shifted += 1
    return [table[byte] for byte in range(256)]
