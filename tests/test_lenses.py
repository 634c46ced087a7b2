"""The lens type: one :class:`murano_widgets.Lens` for every kind, the logit lens its identity.

A lens kind written outside the package (here: a subclass in this test file) runs in the step
against an independent computation in plain transformers, and its title reaches the result,
the payload, the static plot, the exported page and a data set's provenance without any of them
naming it.
"""

from __future__ import annotations

import pytest
import torch
from reference import ReferenceLens
from test_logit_lens import PROMPTS, run_lens

from murano_widgets import Lens, LogitLens, LogitLensWidget, TunedLens, lens_dataset
from murano_widgets.lenses import IDENTITY, as_lens, title_of


class Shift(Lens):
    """A lens of the user's: every block output but the last moved by a fixed vector (a scale
    would not do: RMSNorm undoes it)."""

    kind = "shift"
    title = "Shift lens (+v)"

    def __init__(self, width: int = 32) -> None:
        self.vector = torch.linspace(-2.0, 2.0, width)
        self.provenance = {"width": width}

    def translate(self, layer, hidden):
        return hidden + self.vector.to(hidden.dtype)


def test_a_users_lens_runs_in_the_step_on_both_paths(load_tiny, tiny_model_dirs):
    """Against plain torch: hooks on the blocks, the shift, the model's norm and lm_head; the
    last layer read as the model's own output (the one rule, in Lens.read)."""
    model = load_tiny("llama")
    reference = ReferenceLens(tiny_model_dirs["llama"])
    ids = reference.tokenizer(PROMPTS[0], return_tensors="pt")
    shift = torch.linspace(-2.0, 2.0, 32)
    captured = []
    hooks = [
        block.register_forward_hook(lambda _m, _i, out: captured.append(out))
        for block in reference.blocks
    ]
    with torch.no_grad():
        reference.model(**ids)
        for hook in hooks:
            hook.remove()
        last = len(captured) - 1
        expected = torch.stack(
            [
                reference.model.lm_head(reference.norm(h[0] + (0.0 if i == last else shift)))
                .softmax(-1)
                .max(-1)
                .values
                for i, h in enumerate(captured)
            ]
        )
    for reduce_in_trace in (False, True):
        result = run_lens(model, lens=Shift(), reduce_in_trace=reduce_in_trace)
        torch.testing.assert_close(
            result.max_probs[:, 0, result.positions(0)], expected, atol=1e-5, rtol=1e-4
        )
        assert (result.lens_kind, result.lens_title) == ("shift", "Shift lens (+v)")
        assert result.lens_provenance == {"width": 32}
    plain = run_lens(model)
    # The shift changes every layer but the last: the lens really ran.
    assert not torch.allclose(result.max_probs[:-1], plain.max_probs[:-1], equal_nan=True)
    torch.testing.assert_close(result.max_probs[-1], plain.max_probs[-1], equal_nan=True)


def test_its_title_reaches_every_view_without_naming_it(load_tiny, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    model = load_tiny("gpt2")
    result = run_lens(model, lens=Shift())
    widget = LogitLensWidget(result)
    assert widget.payload.meta["lens_title"] == "Shift lens (+v)"
    page = widget.save_html(tmp_path / "lens.html").read_text(encoding="utf-8")
    assert "<title>Shift lens (+v)" in page
    figure = result.plot(prompt=0)
    assert figure.axes[0].get_title(loc="left").startswith("Shift lens (+v): ")
    data = lens_dataset(
        model, ["one two", "Alice met"], [" three", " Bob"], lens=Shift(), progress=False
    )
    assert data.provenance["lens_kind"] == "shift"
    assert data.provenance["lens_title"] == "Shift lens (+v)"
    assert title_of(data.provenance) == "Shift lens (+v)"


def test_the_logit_lens_is_the_identity_and_titles_agree():
    assert as_lens(None) is IDENTITY and IDENTITY.kind == "logit"
    hidden = torch.randn(3, 4)
    assert IDENTITY.read(0, hidden, 6) is hidden
    assert (TunedLens.kind, TunedLens.title) == ("tuned", "Tuned lens")
    assert issubclass(TunedLens, Lens)

    class Old:  # a result from elsewhere carries a kind and no title
        lens_kind, lens_title = "tuned", None

    assert title_of(Old()) == "Tuned lens" and title_of({}) == "Logit lens"


def test_the_last_layer_is_never_translated():
    class Loud(Lens):
        def translate(self, layer, hidden):
            raise AssertionError(f"layer {layer} translated")

    hidden = torch.zeros(2)
    assert Loud().read(5, hidden, 6) is hidden
    with pytest.raises(AssertionError, match="layer 4"):
        Loud().read(4, hidden, 6)


def test_what_is_not_a_lens_is_refused_with_the_way_to_make_one(load_tiny):
    class DuckTyped:
        def translate(self, layer, hidden):
            return hidden

    model = load_tiny("gpt2")
    with pytest.raises(TypeError, match=r"subclass of murano_widgets\.Lens"):
        LogitLens(model, lens=DuckTyped())
    with pytest.raises(TypeError, match=r"TunedLens.load\('lens-folder', model\)"):
        LogitLens(model, lens="lens-folder")
