"""Chats: a tokenizer's chat template applied, and the role of every token it makes.

``show_logit_lens(model, chat=[{"role": "user", "content": ...}, ...])`` reads the token ids that
``tokenizer.apply_chat_template(chat, tokenize=True, return_dict=True)`` gives, exactly as they
are (never re-tokenized from text), and records each token's role:

- ``"system"``, ``"user"``, ``"assistant"`` (or any other role a message has, such as
  ``"tool"``): the token is part of that message's content;
- ``"template"``: the template's own text (role headers, turn separators, special tokens, the
  generation prompt).

How roles are found: the template is rendered to text (``tokenize=False``) twice, once as it
is and once with each message's content replaced by a marker; the text between the markers is
the template's own, so each content's place in the rendered text is known exactly (even when a
content is the word "user", which the template also writes). A template that changes the
contents (trims them, say) falls back to finding each content in order. The rendered text is
then tokenized with character offsets (what ``apply_chat_template(tokenize=True)`` itself does,
with ``add_special_tokens=False``); a token belongs to a message when its characters overlap the
message's content. A token that straddles the border (a template's space merged with the
content's first word) counts as the message's. ``return_assistant_tokens_mask`` is not used: it
needs ``{% generation %}`` marks that most chat templates lack, and it knows only the
assistant's turns.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from murano_widgets._checks import check_bool, check_text

__all__ = ["ROLES", "AppliedChat", "apply_chat", "check_chat", "check_hide_template"]

#: The roles every result lists first, in this order (template first: code 0).
ROLES = ("template", "system", "user", "assistant")


@dataclass
class AppliedChat:
    """Chats as the model reads them.

    Attributes:
        texts: Each chat rendered by the template.
        ids: Each chat's token ids, as ``apply_chat_template(tokenize=True)`` gives them.
        roles: Each token's role (see the module's docstring).
    """

    texts: list[str]
    ids: list[list[int]]
    roles: list[list[str]]


def check_chat(chat: Any) -> list[list[dict[str, str]]]:
    """``chat`` as a list of chats, each a non-empty list of ``{"role", "content"}`` messages.

    Raises:
        TypeError: If ``chat`` is not a chat (a list of message dicts) or a list of chats, or a
            message's role or content is not a string.
        ValueError: If a chat is empty or a message lacks its role or content.
    """
    if isinstance(chat, (str, Mapping)) or not isinstance(chat, Sequence):
        raise TypeError(
            'chat must be a list of messages such as [{"role": "user", "content": "Hi"}] or a '
            f"list of such lists, got {type(chat).__name__} {chat!r:.60}"
        )
    if not chat:
        raise ValueError("chat is empty: give at least one message, e.g. [{'role': 'user', ...}]")
    chats = [chat] if all(isinstance(item, Mapping) for item in chat) else list(chat)
    checked = []
    for c, messages in enumerate(chats):
        where = "chat" if len(chats) == 1 and chats[0] is chat else f"chat[{c}]"
        if isinstance(messages, (str, Mapping)) or not isinstance(messages, Sequence):
            raise TypeError(
                f"{where} must be a list of messages ({{'role': ..., 'content': ...}}), got "
                f"{type(messages).__name__} {messages!r:.60}"
            )
        if not messages:
            raise ValueError(f"{where} is an empty chat: give at least one message")
        out = []
        for m, message in enumerate(messages):
            at = f"{where}[{m}]"
            if not isinstance(message, Mapping):
                raise TypeError(
                    f"{at} must be a message dict with 'role' and 'content', got "
                    f"{type(message).__name__} {message!r:.60}"
                )
            for key in ("role", "content"):
                if key not in message:
                    raise ValueError(
                        f"{at} has no {key!r}: a message is {{'role': ..., 'content': ...}}"
                    )
            # A message (a system prompt included) is a text as any other the user gives.
            check_text(message["role"], f"{at}['role']")
            check_text(message["content"], f"{at}['content']", blank=True)
            out.append(dict(message))
        checked.append(out)
    return checked


def apply_chat(
    tokenizer: Any, chats: list[list[dict[str, str]]], add_generation_prompt: bool = True
) -> AppliedChat:
    """Applies the tokenizer's chat template to each chat and finds each token's role.

    Raises:
        ValueError: Naming ``chat``, if the tokenizer has no chat template.
    """
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            f"chat= needs a chat template, and this model's tokenizer "
            f"({type(tokenizer).__name__}) has none (tokenizer.chat_template is None). Load a "
            "chat model, whose tokenizer_config.json carries its template, or set one yourself: "
            "model.tokenizer.chat_template = \"{% for m in messages %}<|{{ m['role'] }}|>"
            "{{ m['content'] }}\\n{% endfor %}{% if add_generation_prompt %}<|assistant|>"
            '{% endif %}"; or pass plain prompts instead of chat='
        )
    texts, all_ids, all_roles = [], [], []
    for index, chat in enumerate(chats):
        try:
            text = tokenizer.apply_chat_template(
                chat, tokenize=False, add_generation_prompt=add_generation_prompt
            )
            encoded = tokenizer.apply_chat_template(
                chat, tokenize=True, return_dict=True, add_generation_prompt=add_generation_prompt
            )
        except Exception as error:  # the template's own checks (roles it refuses, order, ...)
            raise ValueError(
                f"chat[{index}]: the tokenizer's chat template refused this chat: {error}"
            ) from error
        ids = [int(i) for i in encoded["input_ids"]]
        if not ids:
            raise ValueError(f"chat[{index}]: the chat template made no tokens of it")
        offsets = _offsets(tokenizer, text, ids)
        spans = _marked_spans(tokenizer, text, chat, add_generation_prompt)
        if spans is None:
            spans = _content_spans(text, chat, index)
        texts.append(text)
        all_ids.append(ids)
        all_roles.append(_roles_of(offsets, spans))
    return AppliedChat(texts, all_ids, all_roles)


def _offsets(tokenizer: Any, text: str, ids: list[int]) -> list[tuple[int, int]]:
    """Each token's character span in the rendered text."""
    try:
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        if list(encoded["input_ids"]) == ids:
            return [(int(s), int(e)) for s, e in encoded["offset_mapping"]]
    except (NotImplementedError, TypeError, ValueError):
        pass  # a slow tokenizer has no offsets: decode prefixes instead
    spans, end = [], 0
    for count in range(1, len(ids) + 1):
        length = len(tokenizer.decode(ids[:count], clean_up_tokenization_spaces=False))
        spans.append((end, max(end, length)))
        end = max(end, length)
    return spans


def _marker(index: int) -> str:
    # Private-use characters: no template writes them, and no trimming removes them.
    return f"\ue000{index}\ue001"


def _marked_spans(
    tokenizer: Any, text: str, chat: list[dict[str, str]], add_generation_prompt: bool
) -> list[tuple[int, int, str]] | None:
    """Each content's exact span, from a render with markers for contents; ``None`` when the
    template does not put the contents in verbatim."""
    marked_chat = [{**message, "content": _marker(i)} for i, message in enumerate(chat)]
    try:
        marked = tokenizer.apply_chat_template(
            marked_chat, tokenize=False, add_generation_prompt=add_generation_prompt
        )
    except Exception:  # a template that inspects the contents may refuse the markers
        return None
    spans, rebuilt, cursor = [], [], 0
    for i, message in enumerate(chat):
        at = marked.find(_marker(i), cursor)
        if at < 0 or marked.find(_marker(i), at + 1) >= 0:
            return None
        rebuilt.append(marked[cursor:at])
        start = sum(map(len, rebuilt))
        rebuilt.append(message["content"])
        if message["content"]:
            spans.append((start, start + len(message["content"]), message["role"]))
        cursor = at + len(_marker(i))
    rebuilt.append(marked[cursor:])
    return spans if "".join(rebuilt) == text else None


def _content_spans(text: str, chat: list[dict[str, str]], index: int) -> list[tuple[int, int, str]]:
    """Where each message's content lies in the rendered text, found in order."""
    spans = []
    cursor = 0
    for m, message in enumerate(chat):
        content = message["content"]
        found = -1
        for form in dict.fromkeys((content, content.strip())):
            if form:
                found = text.find(form, cursor)
                if found >= 0:
                    content = form
                    break
        if found < 0:
            if message["content"].strip():
                warnings.warn(
                    f"chat[{index}][{m}]: the template changes this message's content "
                    f"({message['content'][:40]!r}), so it cannot be found in the rendered "
                    "chat: its tokens are marked 'template'",
                    UserWarning,
                    stacklevel=4,
                )
            continue
        spans.append((found, found + len(content), message["role"]))
        cursor = found + len(content)
    return spans


def _roles_of(offsets: list[tuple[int, int]], spans: list[tuple[int, int, str]]) -> list[str]:
    roles = []
    for start, end in offsets:
        role = "template"
        for low, high, name in spans:
            if start < high and end > low:
                role = name
                break
        roles.append(role)
    return roles


def check_hide_template(value: Any, token_roles: list[list[str]] | None, error: type) -> bool:
    """``hide_template`` as a bool: ``True`` only for a result with chat-template tokens.

    Args:
        value: What was given.
        token_roles: The result's roles per token, or ``None`` (not a chat).
        error: The error to raise when there is nothing to hide (the widget's trait error, or
            ``ValueError``).

    Raises:
        TypeError: For anything but ``True`` or ``False``.
        error: For ``True`` on a result without template tokens.
    """
    if not check_bool("hide_template", value):
        return False
    if token_roles is None:
        reason = (
            "the result has no chat roles, so no chat-template tokens "
            "(they come from show_logit_lens(model, chat=...))"
        )
    elif not any(ROLES[0] in roles for roles in token_roles):
        reason = "no token of the result has the chat template's role"
    else:
        return True
    raise error(f"hide_template=True is not allowed: {reason}; got hide_template=True")


def role_names(token_roles: list[list[str]]) -> list[str]:
    """The role names of a result: :data:`ROLES`, then any other role in order of appearance."""
    extra = [r for row in token_roles for r in row if r not in ROLES]
    return [*ROLES, *dict.fromkeys(extra)]


# A copy of the widget's role colours (ROLE_COLOURS and OTHER_COLOURS in js/src/heatmap/token_marks.js;
# tests/test_plot.py reads that file and checks the two agree), so that a static figure colours
# each role as the widget does. Okabe–Ito: the roles are told apart with any colour vision.
#: The band colour of each usual role.
ROLE_COLOURS = {
    "template": "#999999",
    "system": "#e69f00",
    "user": "#0072b2",
    "assistant": "#009e73",
}
#: The colours any other role gets, in turn, in :func:`role_names` order.
OTHER_ROLE_COLOURS = ("#cc79a7", "#d55e00", "#56b4e9", "#f0e442")


def role_colours(names: Sequence[str]) -> dict[str, str]:
    """Each role's band colour, as the widget picks it (``roleStyles`` in token_marks.js).

    Args:
        names: The result's role names, from :func:`role_names` (the order sets which colour
            each unusual role gets).

    Returns:
        A colour (``"#rrggbb"``) for each name.
    """
    others = iter(OTHER_ROLE_COLOURS * (len(names) // len(OTHER_ROLE_COLOURS) + 1))
    return {name: ROLE_COLOURS.get(name) or next(others) for name in names}
