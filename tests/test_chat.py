"""Chats (``show_logit_lens(model, chat=[...])``): the template's tokens read as they are, each
token's role checked against the template's rendered text built piece by piece here, chats with
generation, the error without a chat template, bad chats."""

from __future__ import annotations

import pytest
import torch
from tiny_models import CHAT_TEMPLATE
from transformers import AutoModelForCausalLM, AutoTokenizer

from murano_widgets import MuranoModel, show_logit_lens
from murano_widgets.chat import check_chat
from murano_widgets.payload.lens import decode_sections
from murano_widgets.run import run_logit_lens

CHAT = [
    {"role": "system", "content": "You answer in one word."},
    {"role": "user", "content": "The Eiffel Tower is in the city of"},
    {"role": "assistant", "content": "Paris"},
    # The word the template writes in the header: found where the content is, not in the header.
    {"role": "user", "content": "user"},
]
OTHER = [{"role": "user", "content": "one two three"}]


def rendered_pieces(chat, add_generation_prompt=True):
    """The template's output as (role, text) pieces, written here from the template's text."""
    pieces = []
    for message in chat:
        pieces.append(("template", f"<|endoftext|>{message['role']}\n"))
        pieces.append((message["role"], message["content"]))
        pieces.append(("template", "\n"))
    if add_generation_prompt:
        pieces.append(("template", "<|endoftext|>assistant\n"))
    return pieces


def expected_tokens(tokenizer, chat, add_generation_prompt=True):
    """Token ids and roles, each piece tokenized on its own (its borders are a special token or
    a newline, where this tokenizer splits anyway)."""
    ids, roles = [], []
    for role, text in rendered_pieces(chat, add_generation_prompt):
        piece = tokenizer(text, add_special_tokens=False)["input_ids"]
        ids += piece
        roles += [role] * len(piece)
    return ids, roles


@pytest.fixture(scope="module")
def chat_model(tiny_model_dirs):
    model = MuranoModel(tiny_model_dirs["llama"], backend="nnsight")
    model.tokenizer.chat_template = CHAT_TEMPLATE
    return model


def test_roles_follow_the_rendered_template(chat_model):
    tokenizer = chat_model.tokenizer
    result = run_logit_lens(chat_model, chat=CHAT)
    ids, roles = expected_tokens(tokenizer, CHAT)
    # The whole rendered text, tokenized at once, is what the pieces make.
    whole = "".join(text for _, text in rendered_pieces(CHAT))
    assert tokenizer(whole, add_special_tokens=False)["input_ids"] == ids
    assert result.input_ids[0, result.positions(0)].tolist() == ids
    assert result.token_roles == [roles]
    assert result.prompts == [whole]
    assert {"template", "system", "user", "assistant"} == set(roles)
    assert result.generation_starts is None


def test_several_chats_and_no_generation_prompt(chat_model):
    tokenizer = chat_model.tokenizer
    result = run_logit_lens(chat_model, chat=[CHAT, OTHER], add_generation_prompt=False)
    for p, chat in enumerate([CHAT, OTHER]):
        ids, roles = expected_tokens(tokenizer, chat, add_generation_prompt=False)
        assert result.input_ids[p, result.positions(p)].tolist() == ids
        assert result.token_roles[p] == roles


def test_template_that_changes_contents_falls_back_to_finding_them(chat_model):
    tokenizer = chat_model.tokenizer
    tokenizer.chat_template = CHAT_TEMPLATE.replace("m['content']", "m['content'] | trim")
    try:
        chat = [{"role": "user", "content": "  one two  "}]
        result = run_logit_lens(chat_model, chat=chat)
    finally:
        tokenizer.chat_template = CHAT_TEMPLATE
    ids, roles = expected_tokens(tokenizer, [{"role": "user", "content": "one two"}])
    assert result.input_ids[0, result.positions(0)].tolist() == ids
    assert result.token_roles == [roles]


def test_chat_with_generation_writes_the_assistant_reply(chat_model, tiny_model_dirs):
    tokenizer = chat_model.tokenizer
    result = run_logit_lens(chat_model, chat=OTHER, generate=5)
    ids, roles = expected_tokens(tokenizer, OTHER)
    start = result.generation_starts[0]
    assert start == len(ids)
    got = result.input_ids[0, result.positions(0)].tolist()
    assert got[:start] == ids
    hf_model = AutoModelForCausalLM.from_pretrained(tiny_model_dirs["llama"]).eval()
    with torch.no_grad():
        out = hf_model.generate(
            torch.tensor([ids]), max_new_tokens=5, do_sample=False, pad_token_id=0
        )
    expected = out[0, len(ids) :].tolist()
    eos = hf_model.generation_config.eos_token_id
    if eos in expected:
        expected = expected[: expected.index(eos) + 1]
    assert got[start:] == expected
    assert result.token_roles == [roles + ["assistant"] * len(expected)]
    assert result.describe_cell(0, 0, start)["role"] == "assistant"
    assert result.describe_cell(0, 0, start)["generated"] is True
    assert result.describe_cell(0, 0, 0)["role"] == "template"


def test_widget_payload_carries_roles(chat_model):
    widget = show_logit_lens(chat_model, chat=[CHAT, OTHER], prompt=1)
    meta = widget._meta
    assert meta["roles"][:4] == ["template", "system", "user", "assistant"]
    codes = decode_sections(meta, {"token_roles": widget._sections["token_roles"]})["token_roles"]
    names = [meta["roles"][c] for c in codes.tolist()]
    assert names == widget.result.token_roles[0] + widget.result.token_roles[1]
    assert "generated" not in widget._sections
    first_system = widget.result.token_roles[0].index("system")
    assert first_system > 1  # after the header's special token, role name and newline
    widget.selected = {"prompt": 0, "layer_index": 0, "position": first_system}
    assert widget.selected["role"] == "system"
    widget.selected = {"prompt": 0, "layer_index": 0, "position": 1}
    assert widget.selected["role"] == "template"


def test_other_roles_get_their_own_code(chat_model):
    chat = [{"role": "tool", "content": "42"}, {"role": "user", "content": "one"}]
    widget = show_logit_lens(chat_model, chat=chat)
    assert widget._meta["roles"] == ["template", "system", "user", "assistant", "tool"]
    assert "tool" in widget.result.token_roles[0]


def test_no_chat_template_is_a_clear_error(tiny_model_dirs):
    model = MuranoModel(tiny_model_dirs["gpt2"], backend="nnsight")
    assert model.tokenizer.chat_template is None
    with pytest.raises(ValueError, match=r"chat= needs a chat template.*chat_template = "):
        show_logit_lens(model, chat=OTHER)


@pytest.mark.parametrize(
    ("chat", "error", "message"),
    [
        ("hello", TypeError, "chat must be a list of messages"),
        ([], ValueError, "chat is empty"),
        ([{"role": "user"}], ValueError, r"chat\[0\] has no 'content'"),
        ([{"content": "hi"}], ValueError, r"chat\[0\] has no 'role'"),
        (
            [{"role": "user", "content": 3}],
            TypeError,
            r"chat\[0\]\['content'\]: expected a non-empty string, got 3 \(int\)",
        ),
        ([[{"role": "user", "content": "hi"}], []], ValueError, r"chat\[1\] is an empty chat"),
        ([[{"role": "user", "content": "hi"}], "hi"], TypeError, r"chat\[1\] must be a list"),
    ],
)
def test_bad_chats(chat, error, message):
    with pytest.raises(error, match=message):
        check_chat(chat)


def test_a_template_that_refuses_a_chat_names_it(chat_model):
    tokenizer = chat_model.tokenizer
    tokenizer.chat_template = (
        "{% for m in messages %}{% if m['role'] == 'system' %}"
        "{{ raise_exception('no system messages') }}{% endif %}{{ m['content'] }}{% endfor %}"
    )
    try:
        with pytest.raises(ValueError, match=r"chat\[1\]: .*refused this chat: no system"):
            run_logit_lens(chat_model, chat=[OTHER, CHAT])
    finally:
        tokenizer.chat_template = CHAT_TEMPLATE


def test_prompts_and_chat_together_are_refused(chat_model):
    with pytest.raises(ValueError, match="give prompts or chat, not both"):
        show_logit_lens(chat_model, "one two", chat=OTHER)
    with pytest.raises(ValueError, match="prompts is missing"):
        show_logit_lens(chat_model)


def test_tokenizer_from_the_folder_keeps_a_template(tiny_model_dirs, tmp_path):
    # A chat model's template comes with its tokenizer: saved and loaded back, chat= works.
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dirs["llama"])
    tokenizer.chat_template = CHAT_TEMPLATE
    folder = tmp_path / "chat-llama"
    AutoModelForCausalLM.from_pretrained(tiny_model_dirs["llama"]).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    model = MuranoModel(folder, backend="nnsight")
    result = run_logit_lens(model, chat=OTHER)
    assert result.token_roles == [expected_tokens(model.tokenizer, OTHER)[1]]


def test_hide_template_passes_through_to_the_widget(chat_model):
    widget = show_logit_lens(chat_model, chat=CHAT, hide_template=True)
    assert widget.hide_template is True
    assert "template" in widget.result.token_roles[0]
    assert show_logit_lens(chat_model, chat=CHAT).hide_template is False
    with pytest.raises(TypeError, match="hide_template must be True or False, got str 'no'"):
        show_logit_lens(chat_model, chat=CHAT, hide_template="no")
