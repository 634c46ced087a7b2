"""Every text a user gives gets the same checks and the same kind of error, naming the argument
and the index: prompts, answers (and each accepted string), foils, targets, chat messages and
system prompts, in the step, a data set's stream and a chat."""

from __future__ import annotations

import pytest

from murano_widgets import PromptBatch
from murano_widgets._checks import TextError, check_text
from murano_widgets.chat import check_chat
from murano_widgets.dataset.stream import check_foil, check_prompt
from murano_widgets.types import validate_answers, validate_foils, validate_targets

BAD = [
    (3, "got 3 (int)"),
    (b"bytes", "got b'bytes' (bytes)"),
    ([" a"], "got [' a'] (list)"),
    ("", "got '' (the empty string)"),
    ("x\ud800y", "lone surrogate U+D800 at character 1"),
]


def calls():
    """Each place a user's text is read, given a bad text: (the call, where it is named)."""
    return [
        (lambda bad: PromptBatch(["ok", bad]), "prompts[1]"),
        (lambda bad: check_prompt(bad, "prompts[7]"), "prompts[7]"),
        (lambda bad: validate_answers([" a", bad], 2), "answers[1]"),
        (lambda bad: validate_answers([" a", [" b", bad]], 2), "answers[1][1]"),
        (lambda bad: validate_answers({"s": [[bad], None]}, 2), "answers['s'][0][0]"),
        (lambda bad: validate_foils([None, bad], 2), "foils[1]"),
        (lambda bad: check_foil(bad, "foils[4]"), "foils[4]"),
        (lambda bad: validate_targets([" a", bad]), "targets[1]"),
        (
            lambda bad: check_chat([{"role": "system", "content": bad}]),
            "chat[0]['content']",
        ),
        (
            lambda bad: check_chat(
                [[{"role": "user", "content": "hi"}], [{"role": bad, "content": "hi"}]]
            ),
            "chat[1][0]['role']",
        ),
    ]


@pytest.mark.parametrize(("bad", "said"), BAD)
def test_every_text_argument_names_where_and_what(bad, said):
    for call, where in calls():
        if isinstance(bad, list) and where in ("answers[1]", "answers['s'][0][0]"):
            continue  # a list is an answer's accepted strings: its entries are checked
        with pytest.raises(TextError) as raised:
            call(bad)
        message = str(raised.value)
        assert message.startswith(f"{where}: expected "), message
        assert said in message, message
        # One kind of error, which code catching either built-in kind still catches.
        assert isinstance(raised.value, TypeError) and isinstance(raised.value, ValueError)


def test_white_space_is_a_text_except_for_a_prompt():
    assert validate_answers([" "], 1) == {"answer": [[" "]]}
    assert validate_targets([" "]) == [" "]
    assert check_chat([{"role": "user", "content": " "}])[0][0]["content"] == " "
    with pytest.raises(TextError, match=r"prompts\[0\]: .*only white space.*visible character"):
        PromptBatch(["  \n"])


def test_check_text_allows_none_only_where_asked():
    assert check_text(None, "foils[0]", optional=True) is None
    with pytest.raises(TextError, match=r"^x: expected a non-empty string, got None \(NoneType\)"):
        check_text(None, "x")
