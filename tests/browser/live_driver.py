"""Driving a live lens widget in a real notebook page, as a person does: shared by the
JupyterLab / Notebook 7 tests (``test_live_jupyterlab.py``) and the front-end benchmark
(``bench/live_frontend.py``).

Times are taken in the page: from the Enter key's ``keydown`` to the end of the first heatmap
draw that shows the new prompt (the view's draw listeners), so what is measured is what a person
waits for: the message's way to the kernel, the step, the new payload's way back, its decoding
and the drawing.
"""

from __future__ import annotations

# The heatmap's test hook: the first lens widget's root in the notebook in view (a patch's diff
# inside it has a root of its own, which comes after it).
HOOK = "document.querySelector('.murano-root').parentElement.__muranoDebug"


def hooked(source: str) -> str:
    """Page code with ``$HOOK`` standing for the heatmap's test hook."""
    return source.replace("$HOOK", HOOK)


# Installed before Enter: records the keydown's time, then the time of the first draw whose
# shown prompt is ``target`` and whose data has ``target + 1`` prompts.
WATCH_NEW_PROMPT = hooked("""([target]) => {
  const hook = $HOOK;
  const box = document.querySelector('.murano-live-prompt');
  window.__live = {t0: null, t1: null};
  box.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && window.__live.t0 === null) window.__live.t0 = performance.now();
  }, {capture: true, once: true});
  const watch = () => hook.nextDraw().then(() => {
    if (hook.state.prompt === target && hook.cellDetails(0, 0)) window.__live.t1 = performance.now();
    else watch();
  });
  watch();
}""")


def wait_for_live_controls(page, timeout: float = 120_000) -> None:
    """The widget drew and its kernel answered ``hello``: the prompt box is there and enabled."""
    page.wait_for_selector(".murano-canvas", timeout=timeout)
    page.wait_for_function(
        hooked(
            "() => { const d = $HOOK; return d && d.frames > 0 && d.live && d.live.state.kernel === 'ready'; }"
        ),
        timeout=timeout,
    )
    page.wait_for_selector(".murano-live-prompt:not([disabled])", state="visible")


def add_prompt(page, text: str, new_index: int, timeout: float = 60_000) -> float:
    """Types ``text`` into the prompt box and presses Enter; waits for the new prompt (index
    ``new_index``) drawn. Returns the milliseconds from Enter to that draw."""
    page.evaluate(WATCH_NEW_PROMPT, [new_index])
    box = page.locator(".murano-live-prompt")
    box.fill(text)
    box.press("Enter")
    page.wait_for_function("() => window.__live.t1 !== null", timeout=timeout)
    return page.evaluate("() => window.__live.t1 - window.__live.t0")


def status(page) -> dict:
    """What the live status line shows, as the hook reports it."""
    return page.evaluate(hooked("() => $HOOK.live.state"))


def wait_idle(page, timeout: float = 60_000) -> None:
    """No request of this view is open any more."""
    page.wait_for_function(
        hooked("() => $HOOK.live.state.open.length === 0"),
        timeout=timeout,
    )


def slider_redraws(page, moves: int = 30) -> dict[str, list[float]]:
    """Moves the layer slider ``moves`` times (down three rows, up three, ...) as its input
    events do. Returns, per move, in milliseconds: ``"latency"``, from the input event to the
    end of its redraw (the view draws in the next animation frame, so this includes the wait for
    it: up to a frame, longer while something else on the page animates), and ``"draw"``, the
    draw's own time."""
    return page.evaluate(
        hooked("""async ([moves]) => {
          const hook = $HOOK;
          const slider = document.querySelector('.murano-layer-control .murano-slider');
          const times = [];
          const draws = [];
          for (let i = 0; i < moves; i++) {
            const key = (i % 6) < 3 ? 'ArrowLeft' : 'ArrowRight';
            const drawn = hook.nextDraw();
            const t0 = performance.now();
            if (key === 'ArrowLeft') slider.stepDown(); else slider.stepUp();
            slider.dispatchEvent(new Event('input', {bubbles: true}));
            draws.push(await drawn);
            times.push(performance.now() - t0);
            await new Promise((r) => setTimeout(r, 20));
          }
          return {latency: times, draw: draws};
        }"""),
        [moves],
    )
