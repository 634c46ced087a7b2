import assert from "node:assert/strict";
import { test } from "node:test";

import { cellDetails, readoutText, tooltipModel } from "../src/heatmap/details.js";
import { columnOf, columnOfPosition, computeLayout, positionAt, positionOfColumn } from "../src/shared/layout.js";
import { decodePayload } from "../src/heatmap/payload.js";
import {
  generationColumn,
  generationStart,
  hasTemplateTokens,
  isGenerated,
  nearestShown,
  pickColumns,
  rolesPresent,
  roleStyles,
  shownPositions,
  shownPromptText,
  tokenMarkText,
  tokenRole,
} from "../src/heatmap/token_marks.js";
import { lensPayload } from "./golden.mjs";
import { encode } from "./helpers.mjs";

const ROLES = ["template", "system", "user", "assistant"];

/**
 * The golden chat payloads (tests/golden/lens_chat*.json): two prompts of 6 and 4 tokens, prompt 0
 * "<|user|> Hi there<|assistant|> Hello!" (template, user, user, template, then two generated
 * assistant tokens), prompt 1 "<|system|> Be brief<|end|>" (template, system, system, template,
 * none generated); without the generated tokens or without the roles when asked.
 */
function chatLens({ generated = true, roles = true } = {}) {
  const name = generated && roles ? "lens_chat" : generated ? "lens_chat_no_roles" : "lens_chat_no_generation";
  assert.ok(generated || roles);
  return decodePayload(...Object.values(lensPayload(name)));
}

test("generated tokens and their start, per prompt", () => {
  const data = chatLens();
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((j) => isGenerated(data, 0, j)), [false, false, false, false, true, true]);
  assert.equal(generationStart(data, 0), 4);
  assert.equal(generationStart(data, 1), -1); // nothing generated after prompt 1
  const plain = chatLens({ generated: false });
  assert.equal(isGenerated(plain, 0, 4), false);
  assert.equal(generationStart(plain, 0), -1);
});

test("roles come from meta.roles by code; the legend lists only those present", () => {
  const data = chatLens();
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((j) => tokenRole(data, 0, j)), ["template", "user", "user", "template", "assistant", "assistant"]);
  assert.equal(tokenRole(data, 1, 1), "system");
  assert.deepEqual(rolesPresent(data).map((r) => r.name), ["template", "system", "user", "assistant"]);
  assert.equal(hasTemplateTokens(data), true);
  assert.equal(tokenRole(chatLens({ roles: false }), 0, 0), null);
  assert.equal(hasTemplateTokens(chatLens({ roles: false })), false);
});

test("role colours: distinct, fixed for the usual roles, others get the next free hue", () => {
  const styles = roleStyles([...ROLES, "tool", "developer"]);
  const colours = styles.map((s) => s.colour);
  assert.equal(new Set(colours).size, colours.length);
  assert.equal(styles[0].label, "chat template");
  assert.deepEqual(roleStyles(["user"])[0], { name: "user", colour: "#0072b2", label: "user" });
});

test("codes outside meta.roles are refused", () => {
  // Malformed on purpose: the golden chat with a role code Python never writes.
  const { meta, sections } = lensPayload("lens_chat");
  assert.deepEqual(meta.roles, ROLES);
  sections.token_roles = encode([0, 4, 2, 0, 3, 3, 0, 1, 1, 0], "uint8");
  assert.throws(() => decodePayload(meta, sections), /token_roles: role 4 is outside _meta.roles/);
});

test("hiding template tokens keeps the other positions' true numbers", () => {
  const data = chatLens();
  assert.equal(shownPositions(data, 0, false), null);
  const shown = shownPositions(data, 0, true);
  assert.deepEqual(shown, [1, 2, 4, 5]);
  assert.deepEqual(shown.map((_, c) => positionOfColumn(shown, c)), [1, 2, 4, 5]);
  assert.equal(columnOfPosition(shown, 4), 2);
  assert.equal(columnOfPosition(shown, 3), -1); // hidden
  assert.equal(columnOfPosition(null, 3), 3);
  assert.equal(nearestShown(shown, 3), 4);
  assert.equal(nearestShown(shown, 0), 1);
  assert.equal(nearestShown(shown, 5), 5);
  // The layout counts columns; columnOf / positionAt translate.
  const layout = computeLayout({ nLayers: 3, nPositions: shown.length, width: 600, labelW: 40, charW: 7, maxChars: 4, columns: shown });
  assert.equal(layout.nPositions, 4);
  assert.equal(positionAt(layout, 3), 5);
  assert.equal(columnOf(layout, 5), 3);
  assert.equal(columnOf(layout, 0), -1);
  // The generation boundary sits at the first shown generated column.
  assert.equal(generationColumn(data, 0, shown), 2);
  assert.equal(generationColumn(data, 0, null), 4);
  assert.equal(generationColumn(data, 1, null), -1);
});

test("a prompt with nothing to hide, or nothing else, shows every position", () => {
  // lens_roles_uniform: prompt 0 holds template tokens only, prompt 1 user tokens only.
  const data = decodePayload(...Object.values(lensPayload("lens_roles_uniform")));
  assert.deepEqual([0, 1, 2].map((j) => tokenRole(data, 0, j)), ["template", "template", "template"]);
  assert.deepEqual([0, 1].map((j) => tokenRole(data, 1, j)), ["user", "user"]);
  assert.equal(shownPositions(data, 0, true), null);
  assert.equal(shownPositions(data, 1, true), null);
});

test("colour image columns are picked in order", () => {
  const image = { width: 3, height: 2, data: new Uint8ClampedArray([...[1, 1, 1, 1], ...[2, 2, 2, 2], ...[3, 3, 3, 3], ...[4, 4, 4, 4], ...[5, 5, 5, 5], ...[6, 6, 6, 6]]) };
  const picked = pickColumns(image, [0, 2]);
  assert.equal(picked.width, 2);
  assert.deepEqual(Array.from(picked.data), [...[1, 1, 1, 1], ...[3, 3, 3, 3], ...[4, 4, 4, 4], ...[6, 6, 6, 6]]);
});

test("tooltip and readout say generated and the role", () => {
  const data = chatLens();
  const generated = cellDetails(data, 0, 0, 4);
  assert.equal(generated.generated, true);
  assert.equal(generated.role, "assistant");
  const tip = tooltipModel(generated);
  assert.ok(tip.badge.startsWith("generated"));
  assert.deepEqual(tip.rows.find((r) => r.label === "token")?.value, "generated, assistant");
  assert.match(readoutText(generated), /^Layer 0, position 4, input .* \(generated, assistant\);/);
  const template = cellDetails(data, 0, 0, 0);
  assert.match(readoutText(template), /\(chat template\)/);
  assert.doesNotMatch(tooltipModel(template).badge, /generated/);
  const plain = cellDetails(decodePayload(...Object.values(lensPayload("lens_plain"))), 0, 0, 0);
  assert.equal(plain.generated, false);
  assert.equal(plain.role, null);
  assert.equal(tooltipModel(plain).rows.find((r) => r.label === "token"), undefined);
  assert.doesNotMatch(readoutText(plain), /\(/);
  assert.equal(tokenMarkText(false, null), "");
});

test("the prompt's text with template tokens hidden is that of the shown tokens", () => {
  const data = chatLens({ generated: false });
  assert.equal(shownPromptText(data, 0, false), "<|user|> Hi there<|assistant|> Hello!");
  assert.equal(shownPromptText(data, 0, true), " Hi there Hello!");
  assert.equal(shownPromptText(data, 1, true), " Be brief");
  // Nothing to hide: the prompt as given.
  assert.equal(shownPromptText(chatLens({ roles: false }), 0, true), chatLens({ roles: false }).prompts[0] ?? "");
});
