// The Documents screens: a paged list (found by file name or tag, sorted); one document with its
// chunks, its original to download, delete; a deleted document's page says so and offers nothing.
// Chunks overlap (CHUNK_OVERLAP): the start a chunk shares with the end of the one before is shown
// muted, found by their character offsets, so the document reads once.

import { fetchBlob, getJson, request } from "./api.js";
import { editDocument } from "./document_edit.js";
import { currentCollection, loadCollections } from "./collections.js";
import { $, formatDate, h, pagesLabel, replaceChildren, tagList } from "./dom.js";
import { markdownBlocks, markdownInline } from "./markdown.js";

const PAGE_SIZE = 20;
const CHUNK_PAGE = 50;
let latestView = 0; // answers to an earlier navigation are dropped

const DEFAULT_SORT = "created_at:desc";

/** The list's filters as they appear in the address: #/documents?filename=&tag=&sort=&order= */
function filterParams({ filename = "", tag = "", sort = DEFAULT_SORT }) {
  const params = new URLSearchParams();
  if (filename) params.set("filename", filename);
  if (tag) params.set("tag", tag);
  if (sort !== DEFAULT_SORT) {
    const [key, order] = sort.split(":");
    params.set("sort", key);
    params.set("order", order);
  }
  return params;
}

function listHash(params) {
  const text = params.toString();
  return text ? `#/documents?${text}` : "#/documents";
}

export function initDocuments(navigate) {
  const apply = () => navigate(listHash(filterParams({
    filename: $("#doc-filename").value.trim(),
    tag: $("#doc-tag").value.trim(),
    sort: $("#doc-sort").value,
  })));
  $("#doc-filter").addEventListener("submit", (event) => {
    event.preventDefault();
    apply();
  });
  $("#doc-sort").addEventListener("change", apply);
}

/** #/documents?offset=&tag=&filename=&sort=&order= */
export async function showDocuments(params, navigate) {
  const offset = Math.max(0, Number.parseInt(params.get("offset") || "0", 10) || 0);
  const tag = params.get("tag") || "";
  const filename = params.get("filename") || "";
  const sortValue = `${params.get("sort") || "created_at"}:${params.get("order") || "desc"}`;
  const sort = [...$("#doc-sort").options].some((option) => option.value === sortValue) ? sortValue : DEFAULT_SORT;
  $("#doc-tag").value = tag;
  $("#doc-filename").value = filename;
  $("#doc-sort").value = sort;
  const filters = filterParams({ filename, tag, sort });
  const query = new URLSearchParams({ offset, limit: PAGE_SIZE, collection: currentCollection() });
  for (const [name, value] of filters) query.set(name, value);
  const rows = $("#doc-rows");
  const view = ++latestView;
  let page;
  try {
    page = await getJson(`/documents?${query}`);
    if (view !== latestView) return;
  } catch (error) {
    if (view !== latestView) return;
    replaceChildren(rows, h("tr", {}, h("td", { colspan: 5 }, `Could not load documents: ${error.detail || error}`)));
    return;
  }
  if (!page.items.length) {
    const message = filename && tag ? `No documents named like “${filename}” tagged “${tag}”.`
      : filename ? `No documents named like “${filename}”.`
      : tag ? `No documents tagged “${tag}”.` : "No documents yet — ingest some on the Ingest screen.";
    replaceChildren(rows, h("tr", {}, h("td", { colspan: 5, class: "hint" }, message)));
  } else {
    replaceChildren(rows, page.items.map((doc) => documentRow(doc, () => showDocuments(params, navigate))));
  }
  const last = offset + page.items.length;
  $("#doc-range").textContent = page.total ? `${page.items.length ? offset + 1 : 0}–${last} of ${page.total}` : "";
  const pageLink = (newOffset) => {
    const next = new URLSearchParams(filters);
    if (newOffset) next.set("offset", newOffset);
    return listHash(next);
  };
  const prev = $("#doc-prev");
  const next = $("#doc-next");
  prev.disabled = offset === 0;
  next.disabled = last >= page.total;
  prev.onclick = () => navigate(pageLink(Math.max(0, offset - PAGE_SIZE)));
  next.onclick = () => navigate(pageLink(offset + PAGE_SIZE));
}

function documentRow(doc, refresh) {
  const name = doc.title && doc.title !== doc.filename ? markdownInline(doc.title) : doc.filename;
  return h(
    "tr",
    {},
    h("td", {},
      h("a", { class: "doc-name", href: `#/documents/${encodeURIComponent(doc.document_id)}` }, name),
      h("div", { class: "doc-source" }, doc.source_id)),
    h("td", {}, tagList(doc.tags)),
    h("td", { class: "num" }, String(doc.chunk_count),
      h("span", { class: "narrow-only" }, doc.chunk_count === 1 ? " chunk" : " chunks")),
    h("td", {}, formatDate(doc.created_at)),
    h("td", {}, h("button", {
      type: "button", class: "small danger", "aria-label": `Delete ${doc.filename}`,
      onclick: async () => {
        if (await deleteDocument(doc)) refresh();
      },
    }, "Delete")),
  );
}

/** Ask for confirmation, then DELETE. Resolves true when the document is gone. */
export async function deleteDocument(doc) {
  const dialog = $("#confirm-dialog");
  $("#confirm-title").textContent = "Delete this document?";
  $("#confirm-text").textContent = `“${doc.filename}” and its ${doc.chunk_count} chunks will be removed from the index.`;
  dialog.returnValue = "";
  dialog.showModal();
  const answer = await new Promise((resolve) => dialog.addEventListener("close", () => resolve(dialog.returnValue), { once: true }));
  if (answer !== "confirm") return false;
  try {
    await request(`/documents/${encodeURIComponent(doc.document_id)}`, { method: "DELETE" });
    loadCollections(); // the picker's document counts
    return true;
  } catch (error) {
    alertBanner(`Could not delete: ${error.detail || error}`);
    return false;
  }
}

function alertBanner(text) {
  const banner = $("#banner");
  banner.textContent = text;
  banner.hidden = false;
}

/** #/documents/<id>?chunk=<index> */
export async function showDocument(documentId, params, navigate) {
  const wanted = params.has("chunk") ? Number.parseInt(params.get("chunk"), 10) : null;
  const meta = $("#document-meta");
  const list = $("#document-chunks");
  const more = $("#chunks-more");
  replaceChildren(meta);
  replaceChildren(list);
  more.hidden = true;
  meta.hidden = false;
  $("#document-actions").hidden = true; // actions only for a document that exists
  $("#document-edit-box").hidden = true;
  $("#document-gone").hidden = true;
  $("#document-title").textContent = "Loading…";
  const view = ++latestView;
  let doc;
  try {
    doc = await getJson(`/documents/${encodeURIComponent(documentId)}`);
    if (view !== latestView) return;
  } catch (error) {
    if (view !== latestView) return;
    if (error.status === 404) {
      showGone(documentId);
      return;
    }
    $("#document-title").textContent = "Could not load the document";
    replaceChildren(meta, h("dt", {}, "Error"), h("dd", {}, error.detail || String(error)));
    return;
  }
  replaceChildren($("#document-title"), doc.title ? markdownInline(doc.title) : doc.filename);
  $("#document-actions").hidden = false;
  $("#document-edit-box").hidden = false;
  const metadata = doc.system_metadata || {}; // what Carrag recorded; doc.metadata is the user's own
  const rows = [
    ["File", doc.filename],
    ["Collection", doc.collection || "default"],
    ["Source", doc.source_id],
    ["Type", doc.source_type],
    ["Tags", tagList(doc.tags)],
    ["Chunks", String(doc.chunk_count)],
    ["Added", formatDate(doc.created_at)],
    ["Document id", h("code", {}, doc.document_id)],
    ["Content hash", h("code", {}, doc.content_hash.slice(0, 16) + "…")],
  ];
  for (const [key, value] of Object.entries(doc.metadata || {})) rows.push([`metadata: ${key}`, String(value)]);
  for (const [key, value] of Object.entries(metadata)) {
    if (["filename", "source_type"].includes(key)) continue;
    rows.push([key.replaceAll("_", " "), typeof value === "object" ? JSON.stringify(value) : String(value)]);
  }
  replaceChildren(meta, rows.flatMap(([key, value]) => [h("dt", {}, key), h("dd", {}, value)]));

  $("#document-delete").onclick = async () => {
    if (await deleteDocument(doc)) navigate("#/documents");
    else if (await isGone(documentId)) showGone(documentId); // deleted meanwhile (another tab)
  };
  $("#document-download").onclick = () => downloadOriginal(doc);
  editDocument(doc, () => showDocument(documentId, params, navigate));

  let loaded = 0;
  let previous = null;
  const loadMore = async (limit) => {
    const page = await getJson(`/documents/${encodeURIComponent(documentId)}/chunks?offset=${loaded}&limit=${limit}`);
    if (view !== latestView) return;
    for (const chunk of page.items) {
      list.append(chunkItem(chunk, previous));
      previous = chunk;
    }
    loaded += page.items.length;
    more.hidden = loaded >= page.total || !page.items.length;
  };
  more.onclick = () => loadMore(CHUNK_PAGE);
  // Load far enough to show the chunk a citation points at.
  await loadMore(wanted !== null && wanted >= CHUNK_PAGE ? Math.min(1000, wanted + CHUNK_PAGE) : CHUNK_PAGE);
  if (wanted !== null) {
    const target = document.getElementById(`chunk-${wanted}`);
    if (target) {
      target.classList.add("highlight");
      target.scrollIntoView({ block: "center" });
      target.focus({ preventScroll: true });
    }
  }
}

/** A document that does not exist (any more): say so, offer no actions, link back to the list. */
function showGone(documentId) {
  $("#document-title").textContent = "Document deleted";
  $("#document-actions").hidden = true;
  $("#document-edit-box").hidden = true;
  replaceChildren($("#document-meta"));
  $("#document-meta").hidden = true;
  replaceChildren($("#document-chunks"));
  $("#chunks-more").hidden = true;
  const gone = $("#document-gone");
  replaceChildren(gone, `There is no document with id ${documentId} any more: it was deleted, or replaced by a newer `
    + "version of the same file (which has a new id). Find it in the list of documents.");
  gone.hidden = false;
}

async function isGone(documentId) {
  try {
    await getJson(`/documents/${encodeURIComponent(documentId)}`);
    return false;
  } catch (error) {
    return error.status === 404;
  }
}

/** Fetch the original (with the API key) and hand it to the browser as a download. */
async function downloadOriginal(doc) {
  const button = $("#document-download");
  button.disabled = true;
  try {
    const { blob, filename } = await fetchBlob(`/documents/${encodeURIComponent(doc.document_id)}/file`);
    const url = URL.createObjectURL(blob);
    const link = h("a", { href: url, download: filename || doc.filename, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  } catch (error) {
    if (error.status === 404 && (await isGone(doc.document_id))) showGone(doc.document_id);
    else alertBanner(`Could not download: ${error.detail || error}`);
  } finally {
    button.disabled = false;
  }
}

function chunkItem(chunk, previous) {
  const page = pagesLabel(chunk.pages);
  const shared = overlap(chunk, previous);
  const spans = shared ? [{ start: 0, end: shared, wrap: (nodes) => h("span", { class: "chunk-overlap" }, nodes) }] : [];
  return h(
    "li",
    { class: "chunk", id: `chunk-${chunk.chunk_index}`, tabindex: "-1" },
    h("div", { class: "chunk-head" },
      h("span", {}, `Chunk ${chunk.chunk_index}`),
      page ? h("span", { class: "chunk-page" }, page) : null,
      chunk.section ? h("span", {}, chunk.section) : null,
      h("span", {}, `characters ${chunk.char_start}–${chunk.char_end}`),
      shared ? h("span", { class: "overlap-note" }, `the first ${shared} characters (grey) repeat the end of chunk ${previous.chunk_index}`) : null),
    h("div", { class: "chunk-text md" }, markdownBlocks(chunk.text, { spans })),
  );
}

/** How many leading characters ``chunk`` shares with the end of ``previous`` (by their offsets in the
 * document, checked against the texts: 0 when they do not agree). */
function overlap(chunk, previous) {
  if (!previous || previous.chunk_index !== chunk.chunk_index - 1) return 0;
  const shared = Math.min(previous.char_end - chunk.char_start, chunk.text.length);
  return shared > 0 && previous.text.endsWith(chunk.text.slice(0, shared)) ? shared : 0;
}
