// Carrag web UI: a hash router over three screens, the API key box and the health badge.

import { apiKey, getJson, onApiError, setApiKey } from "./api.js";
import { initAsk, showAsk, showServerDefaults } from "./ask.js";
import { initCollectionPicker, loadCollections } from "./collections.js";
import { initDocuments, showDocument, showDocuments } from "./documents.js";
import { $ } from "./dom.js";
import { initIngest, loadRecentJobs } from "./ingest.js";

const SCREENS = ["ingest", "documents", "document", "ask"];
let firstRoute = true;

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function parseHash() {
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean);
  return { parts, params: new URLSearchParams(query) };
}

function route() {
  const { parts, params } = parseHash();
  let screen = parts[0] || "ask";
  if (!SCREENS.includes(screen) || screen === "document") screen = "ask";
  if (screen === "documents" && parts[1]) screen = "document";

  for (const name of SCREENS) $(`#screen-${name}`).hidden = name !== screen;
  const tab = screen === "document" ? "documents" : screen;
  document.querySelectorAll(".tabs a").forEach((link) => {
    if (link.dataset.screen === tab) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  });
  document.title = `${tab.charAt(0).toUpperCase()}${tab.slice(1)} · Carrag`;
  for (const dialog of document.querySelectorAll("dialog[open]")) dialog.close();

  if (screen === "documents") showDocuments(params, navigate);
  else if (screen === "document") showDocument(decodeURIComponent(parts[1]), params, navigate);
  else if (screen === "ask") showAsk();
  else if (screen === "ingest") loadRecentJobs();
  if (!firstRoute && screen !== "ask") $("#main").focus({ preventScroll: true });
  firstRoute = false;
}

function initApiKey() {
  const box = $("#key-box");
  const input = $("#api-key");
  const reflect = () => {
    box.dataset.set = String(Boolean(apiKey()));
    input.value = apiKey();
  };
  reflect();
  $("#key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    setApiKey(input.value.trim());
    reflect();
    box.open = false;
    hideBanner();
    loadCollections();
    route();
  });
  $("#key-forget").addEventListener("click", () => {
    setApiKey("");
    reflect();
  });
  onApiError((error) => {
    // A 401 for a request sent with another key (or none) answers an old request: the key saved since
    // is not refused, and reopening the box would undo the Save the user just did.
    if (error.status === 401 && error.sentKey === apiKey()) {
      showBanner(apiKey()
        ? "The server refused the API key. Check it under “API key” (top right)."
        : "This server needs an API key. Enter it under “API key” (top right).");
      box.open = true;
      input.focus();
    }
  });
}

function showBanner(text) {
  const banner = $("#banner");
  banner.textContent = text;
  banner.hidden = false;
}

function hideBanner() {
  $("#banner").hidden = true;
}

async function refreshHealth() {
  const badge = $("#health");
  try {
    const health = await getJson("/health");
    badge.dataset.status = health.status;
    badge.textContent = health.status === "ok" ? "ready" : health.status;
    badge.title = Object.entries(health.components)
      .map(([name, part]) => `${name}: ${part.status} (${part.backend}${part.model ? ` ${part.model}` : ""})${part.detail ? ` — ${part.detail}` : ""}`)
      .join("\n");
    if (health.store) $("#store-in-use").textContent = `Store: ${health.store.backend} · ${health.store.location}`;
    showServerDefaults(health);
  } catch {
    badge.dataset.status = "unavailable";
    badge.textContent = "offline";
  }
}

initApiKey();
initCollectionPicker(() => {
  // another collection: the screen shows that collection (a document page goes back to the list)
  if (parseHash().parts[0] === "documents") navigate("#/documents");
  else route();
});
initIngest();
initDocuments(navigate);
initAsk();
window.addEventListener("hashchange", () => {
  hideBanner();
  route();
});
route();
refreshHealth();
setInterval(refreshHealth, 30000);
