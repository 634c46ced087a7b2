"""Regenerates the README's screenshot: the widget on the demo model, in headless Chromium.

    .venv/bin/python .ci/screenshot.py   # writes notebooks/images/logit_lens_widget.png

It renders the same self-contained page that ``LogitLensWidget.save_html`` writes, hovers a
cell so the tooltip shows, and screenshots the widget element.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "notebooks" / "images" / "logit_lens_widget.png"
sys.path.insert(0, str(ROOT / "tests"))  # the shared chromium launcher


def main() -> None:
    from chromium import launch_chromium
    from playwright.sync_api import sync_playwright

    from murano_widgets import LogitLens, LogitLensWidget, PromptBatch, load_demo_model
    from murano_widgets.cli import DEMO_PROMPTS

    model = load_demo_model()
    prompts = list(DEMO_PROMPTS)  # the demo's own prompts, so the picture shows what it runs
    lens = LogitLens(model)({"prompts": PromptBatch(prompts)})["logit_lens"]
    with tempfile.TemporaryDirectory() as tmp:
        page_path = LogitLensWidget(lens).save_html(Path(tmp) / "lens.html")
        with sync_playwright() as p:
            browser = launch_chromium(p)
            page = browser.new_page(viewport={"width": 1100, "height": 640}, device_scale_factor=2)
            page.goto(page_path.as_uri())
            page.wait_for_selector(".murano-canvas")
            page.wait_for_timeout(300)
            # Keyboard focus on the heatmap, then to the last position: the tooltip of " Paris".
            page.focus(".murano-canvas")
            for _ in range(len(lens.positions(0)) - 1):
                page.keyboard.press("ArrowRight")
            page.wait_for_timeout(300)
            OUT.parent.mkdir(parents=True, exist_ok=True)
            page.locator("#murano-root").screenshot(path=str(OUT))
            browser.close()
    print(f"wrote {OUT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
