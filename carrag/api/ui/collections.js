// The collection picker in the top bar: which collection (knowledge base) every screen works in.
// Ingest uploads into it, Documents lists it, Ask searches it. Remembered in this browser.

import { getJson } from "./api.js";
import { $, h, replaceChildren } from "./dom.js";

const STORAGE = "carrag.collection";
const DEFAULT = "default";
let latestLoad = 0; // an answer to an earlier load (say, one sent before the API key was saved) is dropped

/** The collection picked (what every request sends as `collection`). */
export function currentCollection() {
  return localStorage.getItem(STORAGE) || DEFAULT;
}

function remember(name) {
  if (name && name !== DEFAULT) localStorage.setItem(STORAGE, name);
  else localStorage.removeItem(STORAGE);
}

/** Fill the picker from GET /collections; a remembered collection that is gone falls back to default, or
 * to the first one listed when the API key may not read default (a key scoped by API_KEY_SCOPES). */
export async function loadCollections() {
  const picker = $("#collection-picker");
  const load = ++latestLoad;
  let items = [];
  try {
    items = (await getJson("/collections")).items;
  } catch {
    items = [{ name: currentCollection(), document_count: null }];
  }
  if (load !== latestLoad) return;
  if (!items.some((item) => item.name === currentCollection())) {
    const defaultListed = items.length === 0 || items.some((item) => item.name === DEFAULT);
    remember(defaultListed ? DEFAULT : items[0].name);
  }
  const chosen = currentCollection();
  replaceChildren(
    picker,
    items.map((item) =>
      h(
        "option",
        { value: item.name, selected: item.name === chosen },
        item.document_count === null ? item.name : `${item.name} (${item.document_count})`,
      ),
    ),
  );
  picker.value = chosen;
}

/** ``onChange`` runs after the user picks another collection (the current screen reloads). */
export function initCollectionPicker(onChange) {
  const picker = $("#collection-picker");
  picker.addEventListener("change", () => {
    remember(picker.value);
    onChange(picker.value);
  });
  loadCollections();
}
