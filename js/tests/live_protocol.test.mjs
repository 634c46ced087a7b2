// The live widget's conversation with the kernel (src/live/protocol.js): the hello handshake,
// ids, supersede, replies, time-outs and the status line, as pure functions of a state.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { indexReadout, indexSpoken, promptName } from "../src/format.js";
import { quoteToken } from "../src/tokens.js";

import {
  ACTIONS,
  controlsShown,
  describeRequest,
  dismiss,
  HELLO_TIMEOUT_MS,
  hello,
  initialState,
  nextDeadline,
  noKernel,
  NO_KERNEL_TEXT,
  receive,
  REPLY_TIMEOUT_MS,
  request,
  statusLine,
  tick,
} from "../src/live/protocol.js";

/** A live view whose kernel answered hello. */
function ready(firstId = 10) {
  let state = initialState({ live: true, canSend: true, firstId });
  const sent = hello(state, 0);
  state = receive(sent.state, { action: "hello", id: sent.message.id, live: true });
  assert.equal(state.kernel, "ready");
  return state;
}

test("not live: no controls, nothing said, nothing sent", () => {
  const state = initialState({ live: false, canSend: true });
  assert.equal(state.kernel, "off");
  assert.equal(hello(state, 0).message, null);
  assert.equal(request(state, "add_prompt", { text: "x" }, 0).message, null);
  assert.equal(controlsShown(state), false);
  assert.deepEqual(statusLine(state, null), { kind: "none", text: "", id: -1 });
});

test("live with no way to send (the standalone export): the no-kernel line, no controls", () => {
  const state = initialState({ live: true, canSend: false });
  assert.equal(state.kernel, "none");
  assert.equal(hello(state, 0).message, null);
  assert.equal(request(state, "track", { text: " Paris" }, 0).message, null);
  assert.equal(controlsShown(state), false);
  assert.deepEqual(statusLine(state, null), { kind: "no-kernel", text: NO_KERNEL_TEXT, id: -1 });
  assert.equal(NO_KERNEL_TEXT, "Editing needs a running kernel: run the notebook to type prompts, track tokens or patch.");
});

test("hello: answered live, the controls stay; no answer in 3 s, the no-kernel line", () => {
  let state = initialState({ live: true, canSend: true, firstId: 5 });
  assert.equal(state.kernel, "waiting");
  assert.ok(controlsShown(state), "the controls work while hello is on its way");
  const sent = hello(state, 1000);
  assert.deepEqual(sent.message, { action: "hello", id: 5 });
  state = sent.state;
  assert.equal(nextDeadline(state), 1000 + HELLO_TIMEOUT_MS);
  assert.equal(HELLO_TIMEOUT_MS, 3000);
  assert.equal(tick(state, 1000 + HELLO_TIMEOUT_MS - 1).kernel, "waiting");
  // Another view's hello reply (another id) says nothing about this one.
  assert.equal(receive(state, { action: "hello", id: 99, live: true }).kernel, "waiting");
  assert.equal(receive(state, { action: "hello", id: 5, live: true }).kernel, "ready");
  // The kernel says the widget is not live: no controls, nothing said.
  assert.equal(receive(state, { action: "hello", id: 5, live: false }).kernel, "off");
  const timedOut = tick(state, 1000 + HELLO_TIMEOUT_MS);
  assert.equal(timedOut.kernel, "none");
  assert.equal(statusLine(timedOut, null).kind, "no-kernel");
  assert.equal(nextDeadline(timedOut), null);
  // A late hello reply brings the controls back.
  assert.equal(receive(timedOut, { action: "hello", id: 5, live: true }).kernel, "ready");
});

test("requests: increasing ids, the fields sent as given, the latest one shown running", () => {
  let state = ready(10);
  const a = request(state, "add_prompt", { text: "The capital of France is" }, 100);
  assert.deepEqual(a.message, { text: "The capital of France is", action: "add_prompt", id: 11 });
  state = a.state;
  assert.deepEqual(state.open, [11]);
  const line = statusLine(state, null);
  assert.equal(line.kind, "progress");
  assert.equal(line.id, 11);
  assert.match(line.text, /Running the lens on “The capital of France is”…/);
  const b = request(state, "track", { text: " Paris", show: true }, 200);
  assert.deepEqual(b.message, { text: " Paris", show: true, action: "track", id: 12 });
  assert.deepEqual(b.state.open, [11, 12]);
  assert.equal(b.state.latest?.id, 12);
  assert.throws(() => request(state, "drop_table", {}, 0), /unknown action/);
  assert.deepEqual([...ACTIONS], ["add_prompt", "remove_prompt", "track", "untrack", "patch", "clear_patch", "describe_patchscope", "group"]);
});

test("a second request supersedes the first: replies to the older id change nothing shown", () => {
  let state = ready(0);
  state = request(state, "add_prompt", { text: "one" }, 0).state;
  const first = state.latest?.id;
  state = request(state, "add_prompt", { text: "two" }, 10).state;
  const second = state.latest?.id;
  assert.notEqual(first, second);
  const before = statusLine(state, null);
  assert.match(before.text, /“two”/);
  // The kernel superseded the first; then the first's late "done" (never: it is answered once).
  state = receive(state, { action: "superseded", id: first, message: "superseded by request " + second });
  assert.deepEqual(statusLine(state, null), before, "the older reply is not shown");
  assert.deepEqual(state.open, [second]);
  // An error for an id no longer open (answered already) is ignored too.
  assert.equal(receive(state, { action: "error", id: first, message: "late" }), state);
  state = receive(state, { action: "done", id: second, message: "" });
  assert.equal(statusLine(state, null).kind, "done");
  assert.equal(statusLine(state, null).text, "Added “two”.");
  assert.deepEqual(state.open, []);
});

test("replies end the latest request: done, error (one line, dismissable), superseded", () => {
  const base = request(ready(), "patch", { prompt: 0, layer: 3, position: 2, source: "zero" }, 0).state;
  const id = /** @type {number} */ (base.latest?.id);
  const done = receive(base, { action: "done", id, message: "" });
  assert.equal(statusLine(done, null).kind, "done");
  const error = receive(base, { action: "error", id, message: "ValueError: position 9 is outside the prompt's 4 tokens" });
  assert.deepEqual(statusLine(error, null), { kind: "error", text: "ValueError: position 9 is outside the prompt's 4 tokens", id });
  assert.equal(nextDeadline(error), null, "no spinner, no timer left");
  const dismissed = dismiss(error);
  assert.equal(statusLine(dismissed, null).kind, "none");
  // A new request after a dismissed error shows again.
  const again = request(dismissed, "patch", { prompt: 0, layer: 3, position: 1, source: "mean" }, 5).state;
  assert.equal(statusLine(again, null).kind, "progress");
  const superseded = receive(base, { action: "superseded", id, message: "" });
  assert.equal(statusLine(superseded, null).kind, "note");
  // Messages that are no replies change nothing.
  for (const msg of [null, "done", { action: "done" }, { action: "weird", id }, { action: "done", id: "7" }]) {
    assert.equal(receive(base, msg), base);
  }
});

test("a request with no reply in 60 s says so; a late reply still ends it", () => {
  let state = request(ready(), "add_prompt", { text: "slow" }, 1000).state;
  const id = /** @type {number} */ (state.latest?.id);
  assert.equal(REPLY_TIMEOUT_MS, 60000);
  assert.equal(nextDeadline(state), 1000 + REPLY_TIMEOUT_MS);
  assert.equal(tick(state, 1000 + REPLY_TIMEOUT_MS - 1), state);
  state = tick(state, 1000 + REPLY_TIMEOUT_MS);
  const line = statusLine(state, null);
  assert.equal(line.kind, "error");
  assert.equal(line.text, "No reply from the kernel after 60 s (running the lens on “slow”): it may still be working, or the kernel stopped.");
  assert.equal(nextDeadline(state), null);
  state = receive(state, { action: "done", id, message: "" });
  assert.equal(statusLine(state, null).kind, "done");
  // Shorter time-outs (the browser tests') say their own wait.
  const short = tick(request(ready(), "track", { text: "x" }, 0).state, 500, { reply: 500 });
  assert.match(statusLine(short, null).text, /after 0\.5 s \(tracking “x”\)/);
});

test("a model that cannot send: no kernel (not live stays not live)", () => {
  const state = hello(initialState({ live: true, canSend: true }), 0).state;
  assert.equal(noKernel(state).kernel, "none");
  assert.equal(statusLine(noKernel(state), null).kind, "no-kernel");
  assert.equal(noKernel(initialState({ live: false, canSend: true })).kernel, "off");
});

test("a reply after hello timed out: the kernel is there after all", () => {
  let state = initialState({ live: true, canSend: true, firstId: 1 });
  state = hello(state, 0).state;
  state = request(state, "track", { text: "a" }, 10).state;
  state = tick(state, HELLO_TIMEOUT_MS);
  assert.equal(state.kernel, "none");
  state = receive(state, { action: "done", id: 2, message: "" });
  assert.equal(state.kernel, "ready");
});

test("live_status: Python's running description for the latest request, and a Python call's", () => {
  const state = request(ready(), "add_prompt", { text: "The capital of" }, 0).state;
  const id = /** @type {number} */ (state.latest?.id);
  const running = { state: "running", request: id, action: "add_prompt", message: "running the lens on 'The capital of'…" };
  assert.deepEqual(statusLine(state, running), { kind: "progress", text: "running the lens on 'The capital of'…", id });
  // About another request: our own description.
  assert.match(statusLine(state, { ...running, request: id - 1 }).text, /^Running the lens/);
  // Python says it failed before the reply arrives.
  assert.deepEqual(statusLine(state, { state: "error", request: id, action: "add_prompt", message: "RuntimeError: out of memory" }), {
    kind: "error",
    text: "RuntimeError: out of memory",
    id,
  });
  // A Python call (`w.add_prompt(...)`) running while nothing of ours runs.
  const idle = ready();
  const python = { state: "running", request: -1, action: "track", message: "tracking ' London'…" };
  assert.deepEqual(statusLine(idle, python), { kind: "progress", text: "tracking ' London'…", id: -1 });
  const done = receive(state, { action: "done", id, message: "" });
  assert.equal(statusLine(done, python).kind, "progress");
  assert.equal(statusLine(idle, { state: "idle", request: -1, action: "", message: "" }).kind, "none");
  assert.equal(statusLine(idle, "garbage").kind, "none");
});

// The shared table: tests/test_live.py checks Python's running lines against the same cases.
const STATUS = JSON.parse(readFileSync(new URL("../../tests/status_line_cases.json", import.meta.url), "utf8"));

test("a request's running line is worded as Python words it: indices as Python counts, tokens quoted one way", () => {
  assert.ok(STATUS.running.length >= 8 && STATUS.quote.length >= 5);
  for (const c of STATUS.quote) assert.equal(quoteToken(c.text, { spaces: c.spaces }), c.quoted, c.text);
  for (const c of STATUS.running) assert.equal(describeRequest(c.action, c.fields, "running"), c.line, c.action);
  assert.equal(describeRequest("remove_prompt", { index: 2 }, "done"), "Removed prompt 2.");
  assert.equal(describeRequest("track", { text: " Rome" }, "done"), "Tracking “␣Rome”.");
});

test("counting: a prompt by its index, a slider's readout with its range", () => {
  assert.equal(promptName(0), "prompt 0");
  assert.equal(promptName(2), "prompt 2");
  assert.equal(indexReadout(2, 5), "2 (0–4)");
  assert.equal(indexReadout(0, 1), "0");
  assert.equal(indexSpoken(3, 6), "3 (0 to 5)");
});
