// Editing one document's tags, title and metadata in place (PATCH /documents/{id}; nothing is re-embedded).

import { request } from "./api.js";
import { $, splitTags } from "./dom.js";

/** Fill the edit form with `doc`; on save, PATCH and hand the updated document to `onSaved`. */
export function editDocument(doc, onSaved) {
  const form = $("#document-edit");
  const status = $("#edit-status");
  $("#edit-title").value = doc.title || "";
  $("#edit-tags").value = (doc.tags || []).join(", ");
  $("#edit-metadata").value = Object.entries(doc.metadata || {}).map(([key, value]) => `${key}=${value}`).join("\n");
  status.textContent = "";
  form.onsubmit = async (event) => {
    event.preventDefault();
    let body;
    try {
      body = { tags: splitTags($("#edit-tags").value), metadata: parseMetadata($("#edit-metadata").value) };
    } catch (error) {
      status.textContent = error.message;
      return;
    }
    const title = $("#edit-title").value.trim();
    if (title && title !== doc.title) body.title = title;
    status.textContent = "Saving…";
    try {
      const { body: updated } = await request(`/documents/${encodeURIComponent(doc.document_id)}`, {
        method: "PATCH",
        json: body,
      });
      status.textContent = "Saved.";
      onSaved(updated);
    } catch (error) {
      status.textContent = `Could not save: ${describe(error)}`;
    }
  };
}

/** `key=value` lines as an object; numbers and true/false keep their JSON type, the rest is text. */
function parseMetadata(text) {
  const metadata = {};
  for (const line of text.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const at = line.indexOf("=");
    if (at < 1) throw new Error(`“${line}” is not key=value.`);
    const raw = line.slice(at + 1).trim();
    metadata[line.slice(0, at).trim()] = /^(true|false|-?\d+(\.\d+)?)$/.test(raw) ? JSON.parse(raw) : raw;
  }
  return metadata;
}

function describe(error) {
  const detail = error.detail;
  if (Array.isArray(detail)) return detail.map((item) => item.msg).join("; ");
  return detail || String(error);
}
