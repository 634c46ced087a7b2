"""The static heatmap: what is drawn matches the result, padding is left out, a PNG is written;
generated tokens and chat roles are marked as the widget marks them, in the widget's colours."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.colors import to_hex
from matplotlib.image import AxesImage
from tiny_models import CHAT_TEMPLATE

from murano_widgets import LogitLens, MuranoModel, PromptBatch, plot_logit_lens
from murano_widgets.run import run_logit_lens
from murano_widgets.tokens import display_token

PROMPTS = ["The Eiffel Tower is in\nthe city", "one two"]
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "_artifacts"
CHATS = [
    [
        {"role": "system", "content": "Answer in one word."},
        {"role": "critic", "content": "Be brief."},
        {"role": "user", "content": "The Eiffel Tower is in the city of"},
    ],
    # "critic" and "tool" are no usual roles: they take the widget's other colours in turn, in
    # the order they first appear in the whole result (so "tool" keeps its colour in any prompt).
    [{"role": "tool", "content": "42"}, {"role": "user", "content": "one two"}],
]


def short(text: str, limit: int = 8) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@pytest.fixture(scope="module")
def lens(load_tiny):
    return LogitLens(load_tiny("gpt2"))({"prompts": PromptBatch(PROMPTS)})["logit_lens"]


@pytest.mark.parametrize(
    ("metric", "field"),
    [("prob", "max_probs"), ("kl", "kl_to_final"), ("final_rank", "final_token_ranks")],
)
def test_drawn_values_and_labels_match_the_result(lens, metric, field):
    prompt = 1  # the shorter prompt: left padding must not be drawn
    fig = plot_logit_lens(lens, prompt=prompt, metric=metric)
    ax = fig.axes[0]
    image = next(a for a in ax.get_children() if isinstance(a, AxesImage))
    positions = lens.positions(prompt).tolist()
    assert len(positions) < lens.attention_mask.shape[1]
    expected = getattr(lens, field)[:, prompt, positions].double().numpy()
    if metric == "final_rank":
        expected = expected + 1  # drawn on a log scale from 1
    np.testing.assert_allclose(np.asarray(image.get_array()), expected)
    assert image.get_array().shape == (len(lens.layers), len(positions))
    # Cell texts are the top-1 tokens, made visible, in row-major order from the lowest layer.
    texts = [t.get_text() for t in ax.texts]
    words = [
        display_token(lens.predicted_words[r][prompt][s])
        for r in range(len(lens.layers))
        for s in positions
    ]
    assert texts == [short(w) for w in words]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == [short(display_token(lens.input_words[prompt][s])) for s in positions]
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(layer) for layer in lens.layers]
    assert len(fig.axes) == 2  # the heatmap and its colour bar


def test_visible_marks_and_png(lens, tmp_path):
    fig = lens.plot(prompt=0, layers=[0, 2])
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert any(label.startswith("␣") for label in labels)
    assert any("↵" in label for label in labels)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "2"]
    out = tmp_path / "lens.png"
    fig.savefig(out, dpi=60)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 5000


def test_bad_arguments(lens):
    with pytest.raises(ValueError, match="metric must be one of"):
        plot_logit_lens(lens, metric="loss")
    with pytest.raises(ValueError, match="prompt must be an int from 0 to 1"):
        plot_logit_lens(lens, prompt=2)
    with pytest.raises(ValueError, match="layers holds 7"):
        plot_logit_lens(lens, layers=[7])


def js_colour_tables():
    """The widget's colours, read as text from its sources: the role colours, the other roles'
    colours in turn, and the generation rule's and tint's light-theme values."""
    marks = (ROOT / "js" / "src" / "heatmap" / "token_marks.js").read_text()
    roles_js = re.search(r"ROLE_COLOURS = Object\.freeze\(\{(.*?)\}\)", marks, re.S).group(1)
    roles = dict(re.findall(r'(\w+): "(#[0-9a-fA-F]{6})"', roles_js))
    others_js = re.search(r"OTHER_COLOURS = Object\.freeze\(\[(.*?)\]\)", marks, re.S).group(1)
    others = re.findall(r'"(#[0-9a-fA-F]{6})"', others_js)
    # The light theme's values in the one palette (the static figure is drawn on white).
    theme = (ROOT / "js" / "src" / "shared" / "theme.css").read_text()
    rule = re.search(r"--murano-generated: var\(--murano-light, (#[0-9a-fA-F]{6})\)", theme).group(
        1
    )
    tint = re.search(r"--murano-generated-bg: var\(--murano-light, rgba\(([^)]*)\)\)", theme).group(
        1
    )
    red, green, blue, alpha = (float(x) for x in tint.split(","))
    assert len(roles) == 4 and len(others) >= 2
    return roles, others, rule, (red / 255, green / 255, blue / 255, alpha)


def widget_role_colours(result):
    """What the widget paints each role: its own colour, else the other colours in turn, in the
    order the payload lists the roles (the usual four, then others as they first appear)."""
    roles, others, _, _ = js_colour_tables()
    usual = ["template", "system", "user", "assistant"]
    extra = list(dict.fromkeys(r for row in result.token_roles for r in row if r not in usual))
    return {**roles, **{name: others[i % len(others)] for i, name in enumerate(extra)}}


def marks_of(fig):
    """The heatmap's axes, generation rules, role-band segments and legend."""
    ax = fig.axes[0]
    rules = [line for line in ax.lines if line.get_gid() == "generation-boundary"]
    band = [a for a in ax.get_children() if a.get_gid() == "role-band"]
    return ax, rules, band, ax.get_legend()


def save_artifact(fig, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(ARTIFACTS / name, dpi=100)


@pytest.fixture(scope="module")
def generated(load_tiny):
    # Prompts of different lengths: left padding, and a different boundary for each.
    return run_logit_lens(load_tiny("gpt2"), ["The Eiffel Tower is in", "one two"], generate=4)


@pytest.fixture(scope="module")
def chat_result(tiny_model_dirs):
    # A model of this module's own: the template is set on it, not on the shared one.
    model = MuranoModel(tiny_model_dirs["llama"], backend="nnsight")
    model.tokenizer.chat_template = CHAT_TEMPLATE
    return run_logit_lens(model, chat=CHATS, generate=3)


def test_the_python_colours_are_the_widgets():
    from murano_widgets.chat import OTHER_ROLE_COLOURS, ROLE_COLOURS
    from murano_widgets.plot import GENERATED_COLOUR, GENERATED_TINT

    roles, others, rule, tint = js_colour_tables()
    assert roles == ROLE_COLOURS
    assert list(OTHER_ROLE_COLOURS) == others
    assert rule == GENERATED_COLOUR
    np.testing.assert_allclose(GENERATED_TINT, tint)


@pytest.mark.parametrize("prompt", [0, 1])
def test_generated_tokens_get_a_rule_and_italic_labels(generated, prompt):
    _, _, rule_colour, tint = js_colour_tables()
    fig = plot_logit_lens(generated, prompt=prompt)
    fig.canvas.draw()  # the labels as drawn, not only as set
    ax, rules, band, legend = marks_of(fig)
    n = len(generated.positions(prompt))
    start = generated.generation_starts[prompt]
    assert 0 < start < n  # the test needs a prompt and something generated
    # The rule sits on the border between the last prompt column and the first generated one.
    left, right, _, _ = next(a for a in ax.get_children() if isinstance(a, AxesImage)).get_extent()
    border = left + start * (right - left) / n
    assert len(rules) == 1
    assert rules[0].get_xdata() == pytest.approx([border, border])
    assert to_hex(rules[0].get_color()) == rule_colour
    labels = ax.get_xticklabels()
    assert len(labels) == n
    assert [label.get_fontstyle() == "italic" for label in labels] == [j >= start for j in range(n)]
    tints = [label.get_bbox_patch() for label in labels]
    assert [b is not None for b in tints] == [j >= start for j in range(n)]
    for patch in tints[start:]:
        np.testing.assert_allclose(patch.get_facecolor(), tint)
    assert band == [] and legend is None  # no chat: no roles
    if prompt == 0:
        save_artifact(fig, "plot_generated.png")
    plt.close(fig)

    fig = generated.plot(prompt=prompt, marks=False)  # the method passes the options on
    fig.canvas.draw()
    ax, rules, band, legend = marks_of(fig)
    assert rules == [] and band == [] and legend is None
    labels = ax.get_xticklabels()
    assert {label.get_fontstyle() for label in labels} == {"normal"}
    assert all(label.get_bbox_patch() is None for label in labels)
    plt.close(fig)


@pytest.mark.parametrize("prompt", [0, 1])
def test_chat_roles_get_a_band_and_a_legend(chat_result, prompt):
    colours = widget_role_colours(chat_result)
    roles = chat_result.token_roles[prompt]
    fig = plot_logit_lens(chat_result, prompt=prompt)
    fig.canvas.draw()
    ax, rules, band, legend = marks_of(fig)
    n = len(chat_result.positions(prompt))
    assert len(roles) == n
    # One segment per shown token, in column order, in its role's colour.
    assert len(band) == n
    assert [p.get_x() + p.get_width() / 2 for p in band] == pytest.approx(list(range(n)))
    assert [to_hex(p.get_facecolor()) for p in band] == [colours[r] for r in roles]
    other = {"critic": 0, "tool": 1}
    for role, turn in other.items():
        if role in roles:
            expected = js_colour_tables()[1][turn]
            assert to_hex(band[roles.index(role)].get_facecolor()) == expected
    # The legend: the roles present, in the widget's order and colours.
    order = [*colours]
    present = sorted(set(roles), key=order.index)
    assert {"template", "user", "assistant"} <= set(present)
    names = ["chat template" if r == "template" else r for r in present]
    assert [t.get_text() for t in legend.get_texts()] == names
    assert [to_hex(h.get_facecolor()) for h in legend.legend_handles] == [
        colours[r] for r in present
    ]
    # Generation in a chat is marked too.
    assert len(rules) == 1 and roles[chat_result.generation_starts[prompt]] == "assistant"
    # Laid out cleanly: the band is under the heatmap, the labels under the band, the legend
    # between the heatmap and the title.
    renderer = fig.canvas.get_renderer()
    heatmap = ax.get_window_extent(renderer)
    band_top = max(p.get_window_extent(renderer).y1 for p in band)
    band_bottom = min(p.get_window_extent(renderer).y0 for p in band)
    assert band_top < heatmap.y0
    assert max(label.get_window_extent(renderer).y1 for label in ax.get_xticklabels()) < (
        band_bottom
    )
    box = legend.get_window_extent(renderer)
    assert box.y0 >= heatmap.y1 and box.y1 <= ax.title.get_window_extent(renderer).y0
    save_artifact(fig, f"plot_chat_{prompt}.png")
    plt.close(fig)

    fig = plot_logit_lens(chat_result, prompt=prompt, marks=False)
    _, rules, band, legend = marks_of(fig)
    assert rules == [] and band == [] and legend is None
    plt.close(fig)


def test_a_plain_result_has_no_marks_and_is_drawn_as_without_them(lens):
    assert lens.generation_starts is None and lens.token_roles is None
    pixels = []
    for marks in (True, False):
        fig = plot_logit_lens(lens, prompt=0, marks=marks)
        fig.canvas.draw()
        ax, rules, band, legend = marks_of(fig)
        assert rules == [] and band == [] and legend is None
        assert {label.get_fontstyle() for label in ax.get_xticklabels()} == {"normal"}
        pixels.append(np.asarray(fig.canvas.buffer_rgba()).copy())
        if marks:
            save_artifact(fig, "plot_plain.png")
        plt.close(fig)
    np.testing.assert_array_equal(pixels[0], pixels[1])


@pytest.mark.parametrize(
    ("marks", "given"), [(1, "int 1"), ("yes", "str 'yes'"), (None, "NoneType None")]
)
def test_bad_marks(chat_result, marks, given):
    figures = plt.get_fignums()
    fig, ax = plt.subplots()
    children = len(ax.get_children())
    with pytest.raises(TypeError, match=f"marks must be True or False, got {given}"):
        plot_logit_lens(chat_result, marks=marks)
    with pytest.raises(TypeError, match="marks must be True or False"):
        plot_logit_lens(chat_result, ax=ax, marks=marks)
    # Raised before anything was drawn: no new figure, nothing added to the given axes.
    assert plt.get_fignums() == [*figures, fig.number]
    assert len(ax.get_children()) == children
    plt.close(fig)


@pytest.mark.parametrize("prompt", [0, 1])
def test_hide_template_leaves_the_template_tokens_out(chat_result, prompt):
    colours = widget_role_colours(chat_result)
    roles = chat_result.token_roles[prompt]
    positions = chat_result.positions(prompt).tolist()
    kept = [k for k, role in enumerate(roles) if role != "template"]
    assert 0 < len(kept) < len(roles)
    fig = plot_logit_lens(chat_result, prompt=prompt, hide_template=True)
    fig.canvas.draw()
    ax, rules, band, legend = marks_of(fig)
    # The non-template tokens alone, in order: labels, cells and band.
    expected = [short(display_token(chat_result.input_words[prompt][positions[k]])) for k in kept]
    assert [label.get_text() for label in ax.get_xticklabels()] == expected
    image = ax.get_images()[0].get_array()
    assert image.shape[1] == len(kept)
    np.testing.assert_allclose(
        image[-1].filled(np.nan),
        chat_result.max_probs[-1, prompt, [positions[k] for k in kept]].numpy(),
        equal_nan=True,
    )
    assert [to_hex(p.get_facecolor()) for p in band] == [colours[roles[k]] for k in kept]
    assert "chat template" not in [t.get_text() for t in legend.get_texts()]
    # The generation rule sits before the first generated token among the shown ones.
    start = kept.index(chat_result.generation_starts[prompt])
    assert len(rules) == 1 and rules[0].get_xdata() == pytest.approx([start - 0.5] * 2)
    italic = [label.get_fontstyle() == "italic" for label in ax.get_xticklabels()]
    assert italic == [j >= start for j in range(len(kept))]
    plt.close(fig)


def test_hide_template_needs_template_tokens(lens, chat_result):
    with pytest.raises(ValueError, match=r"hide_template=True is not allowed: .*no chat roles"):
        plot_logit_lens(lens, hide_template=True)
    with pytest.raises(TypeError, match="hide_template must be True or False, got int 1"):
        plot_logit_lens(chat_result, hide_template=1)
    plt.close("all")


def test_rows_after_attention_are_named_as_the_widget_names_them(load_tiny):
    """sites=("resid_mid", "resid_post"): each layer has two rows; the ticks say which is which,
    and a layer asked for shows both."""
    step = LogitLens(load_tiny("gpt2"), sites=("resid_mid", "resid_post"))
    result = step({"prompts": PromptBatch(PROMPTS)})["logit_lens"]
    n = result.n_model_layers
    ax = result.plot(prompt=0).axes[0]
    names = [name for layer in range(n) for name in (f"{layer} attn", str(layer))]
    assert [t.get_text() for t in ax.get_yticklabels()] == names
    ax = result.plot(prompt=0, layers=[1]).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1 attn", "1"]


@pytest.mark.filterwarnings("ignore:targets .* are several tokens long")
def test_a_tracked_tokens_probability_is_drawn_for_the_target_asked(load_tiny, lens):
    tracked = run_logit_lens(load_tiny("gpt2"), PROMPTS, targets=[" city", " two"])
    prompt = 1
    positions = tracked.positions(prompt).tolist()
    for target, t in ((None, 0), (" two", 1)):
        fig = plot_logit_lens(tracked, prompt=prompt, metric="target", target=target)
        image = next(a for a in fig.axes[0].get_children() if isinstance(a, AxesImage))
        expected = tracked.target_probs[:, prompt, positions, t].double().numpy()
        np.testing.assert_allclose(np.asarray(image.get_array()), expected)
        token = display_token(tracked.targets[t])
        assert fig.axes[1].get_ylabel() == f"Probability of “{token}”"
        plt.close(fig)
    with pytest.raises(ValueError, match=r"target must be one of the result's targets \[' city'"):
        plot_logit_lens(tracked, metric="target", target=" Paris")
    with pytest.raises(ValueError, match="target is for a metric of each tracked token"):
        plot_logit_lens(tracked, metric="prob", target=" two")
    with pytest.raises(ValueError, match="this result tracks none: run with targets="):
        plot_logit_lens(lens, metric="target")
