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


# A page-wide count of animation frames (``frames.count``; ``frames.on = false`` stops it), for
# async page code: what redraw tests assert, since a frame count holds on any machine and under
# any load where milliseconds do not. Its callback is registered before any input that follows,
# so within a frame it runs before the view's draw: a draw in the next frame reads one more.
FRAMES = (
    "const frames = {count: 0, on: true};"
    " const tick = () => { frames.count += 1; if (frames.on) requestAnimationFrame(tick); };"
    " requestAnimationFrame(tick);"
    " await new Promise((r) => requestAnimationFrame(r));"
)


def counting_frames(source: str) -> str:
    """Async page code with ``$FRAMES`` standing for :data:`FRAMES`."""
    return source.replace("$FRAMES", FRAMES)


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


def add_prompt(page, text: str, new_index: int, timeout: float = 60_000, then=None) -> float:
    """Types ``text`` into the prompt box and presses Enter; calls ``then()`` if given (to let a
    held kernel go on); waits for the new prompt (index ``new_index``) drawn. Returns the
    milliseconds from Enter to that draw."""
    page.evaluate(WATCH_NEW_PROMPT, [new_index])
    box = page.locator(".murano-live-prompt")
    box.fill(text)
    box.press("Enter")
    if then is not None:
        then()
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
    events do. Returns, per move:

    - ``"frames"``: animation frames from the input event to the end of its redraw (a page-wide
      ``requestAnimationFrame`` counter; 1 is the next frame). A count, not a time, so it holds
      on any machine and under any load: what tests assert.
    - ``"pending"``: how many of this view's kernel requests were still open when it was drawn.
    - ``"layer"`` and ``"slider"``: the layer drawn and the slider's value.
    - ``"latency"`` (input event to the end of the redraw, including the wait for the frame) and
      ``"draw"`` (the draw itself), in milliseconds: for ``bench/live_frontend.py``, which
      measures on a quiet machine; tests only print them.
    """
    return page.evaluate(
        counting_frames(
            hooked("""async ([moves]) => {
          const hook = $HOOK;
          const slider = document.querySelector('.murano-layer-control .murano-slider');
          $FRAMES
          const out = {latency: [], draw: [], frames: [], pending: [], layer: [], slider: []};
          for (let i = 0; i < moves; i++) {
            const key = (i % 6) < 3 ? 'ArrowLeft' : 'ArrowRight';
            const drawn = hook.nextDraw().then((ms) => ({
              ms, frame: frames.count, pending: hook.live ? hook.live.state.open.length : 0, layer: hook.state.layer,
            }));
            const t0 = performance.now();
            const f0 = frames.count;
            if (key === 'ArrowLeft') slider.stepDown(); else slider.stepUp();
            slider.dispatchEvent(new Event('input', {bubbles: true}));
            const d = await drawn;
            out.latency.push(performance.now() - t0);
            out.draw.push(d.ms);
            out.frames.push(d.frame - f0);
            out.pending.push(d.pending);
            out.layer.push(d.layer);
            out.slider.push(Number(slider.value));
            await new Promise((r) => setTimeout(r, 20));
          }
          frames.on = false;
          return out;
        }""")
        ),
        [moves],
    )
