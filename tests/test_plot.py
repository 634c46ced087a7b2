"""The static heatmap: what is drawn matches the result, padding is left out, a PNG is written."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.image import AxesImage

from murano_widgets import LogitLens, PromptBatch, plot_logit_lens
from murano_widgets.tokens import display_token

PROMPTS = ["The Eiffel Tower is in\nthe city", "one two"]


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
