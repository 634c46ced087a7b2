// @ts-check
/**
 * The live lens's state as one plain object in a store (`shared/store.js`, the one view pattern):
 * the kernel conversation (`protocol.js`'s `LiveState`), the texts sent from a box and not yet
 * answered, the picker's state, the "Describe this cell" request and text, and the traits Python
 * sends that the controls show (`prompts`, `targets`, `live_status`, `patch`, the patch's payload).
 * Each part of the live DOM subscribes to the keys it shows (`view.js`), as it follows the
 * heatmap's `prompt`, `selected`, `focus` and `dataVersion`.
 */

import { createStore } from "../../shared/store.js";

/**
 * @typedef {import("./protocol.js").LiveState} LiveState
 *
 * @typedef {object} SentText a text sent from a box: emptied from it once done (unless edited)
 * @property {number} id the request's id
 * @property {HTMLInputElement} box
 * @property {string} text
 *
 * @typedef {object} Described "Describe this cell": the request in flight and the text shown
 * @property {number} pending the request in flight (-1: none)
 * @property {string} cell the cell the text is about ("": none)
 * @property {string} text the kernel's description (data: shown as text)
 *
 * @typedef {object} LiveStoreState
 * @property {LiveState} conn the conversation with the kernel (`protocol.js`)
 * @property {SentText[]} sent
 * @property {boolean} pickerOpen
 * @property {Described} describe
 * @property {unknown} prompts the `prompts` trait
 * @property {unknown} targets the `targets` trait
 * @property {unknown} live_status the `live_status` trait (Python's progress message)
 * @property {unknown} patch the `patch` trait
 * @property {number} patchVersion counts the changes of `_patch_meta` and `_patch_sections`
 *
 * @typedef {keyof LiveStoreState} LiveKey
 * @typedef {import("../../shared/store.js").Store<LiveStoreState>} LiveStore
 */

/**
 * The live lens's store, its traits read from the model.
 * @param {LiveState} conn
 * @param {{get: (name: string) => unknown}} model
 * @returns {LiveStore}
 */
export function createLiveStore(conn, model) {
  /** @type {LiveStoreState} */
  const state = {
    conn,
    sent: [],
    pickerOpen: false,
    describe: { pending: -1, cell: "", text: "" },
    prompts: model.get("prompts"),
    targets: model.get("targets"),
    live_status: model.get("live_status"),
    patch: model.get("patch"),
    patchVersion: 0,
  };
  return createStore(state);
}
