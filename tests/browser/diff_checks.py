"""Checks the live and the exported diff views share."""

from __future__ import annotations

from harness import fmt_prob


def check_tooltip(page, cell: dict) -> str:
    """Asserts the diff tooltip shows ``cell`` (``describe_cell``): both lenses' top-k side by
    side, KL and the probability difference. Returns the tooltip's text."""
    headers = page.locator(".murano-diff-topk th").all_text_contents()
    assert headers[0].startswith("a: ") and "logit" in headers[0]
    assert headers[1].startswith("b: ") and "tuned" in headers[1]
    rows = page.locator(".murano-diff-topk tr").all()[1:]
    assert len(rows) == len(cell["a"]["top_k"]) == len(cell["b"]["top_k"])
    for k, tr in enumerate(rows):
        texts = tr.locator("td").all_text_contents()
        token_a, prob_a = cell["a"]["top_k"][k]
        token_b, prob_b = cell["b"]["top_k"][k]
        assert texts[0] == token_a.replace(" ", "␣") and texts[2] == token_b.replace(" ", "␣")
        assert texts[1] == fmt_prob(prob_a) and texts[3] == fmt_prob(prob_b)
    tooltip = page.locator(".murano-diff-tooltip").text_content()
    assert "KL(a ‖ b)" in tooltip and "Δ p(" in tooltip
    return tooltip
