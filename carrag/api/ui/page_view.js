// The page a citation comes from, beside its passage in the source dialog: GET
// /documents/{id}/pages/{n}/image draws it with the chunk tinted (its stored regions) and the sentences
// the answer relies on (`highlights`, offsets in the passage of chunks `window`) marked, one page at a
// time over the chunk's pages. A source without pages, or one the server does not draw (not a PDF, or
// its original was not kept: 409), keeps the passage text alone.

import { fetchBlob } from "./api.js";
import { $ } from "./dom.js";

const MAX_HIGHLIGHTS = 64; // what the route accepts

let shown = null; // {source, pages, index}
let drawing = 0; // the latest request: an older picture arriving late is dropped
let pictureUrl = null;

export function initPageView() {
  $("#source-page-prev").addEventListener("click", () => turn(-1));
  $("#source-page-next").addEventListener("click", () => turn(1));
  $("#source-dialog").addEventListener("close", () => showPages(null));
}

/** Show the first page of ``source`` (its `page` when it names one of its `pages`); null: none. */
export function showPages(source) {
  drawing += 1;
  $("#source-page").hidden = true;
  if (pictureUrl) URL.revokeObjectURL(pictureUrl);
  pictureUrl = null;
  $("#source-page-image").removeAttribute("src");
  const pages = source && Array.isArray(source.pages) ? source.pages : [];
  shown = pages.length ? { source, pages, index: Math.max(pages.indexOf(source.page), 0) } : null;
  if (shown) draw();
}

function turn(step) {
  const index = shown ? shown.index + step : -1;
  if (index < 0 || index >= shown.pages.length) return;
  shown.index = index;
  draw();
}

export function pagePath(source, page) {
  const params = new URLSearchParams({ chunk: String(source.chunk_index) });
  if (Array.isArray(source.window) && source.window.length === 2) {
    params.set("window", `${source.window[0]}-${source.window[1]}`);
  }
  for (const { start, end } of (source.highlights || []).slice(0, MAX_HIGHLIGHTS)) {
    params.append("highlight", `${start}-${end}`);
  }
  return `/documents/${encodeURIComponent(source.document_id)}/pages/${page}/image?${params}`;
}

async function draw() {
  const request = ++drawing;
  const { source, pages, index } = shown;
  const page = pages[index];
  $("#source-page-label").textContent = pages.length > 1 ? `page ${page} (${index + 1} of ${pages.length})` : `page ${page}`;
  $("#source-page-prev").disabled = index === 0;
  $("#source-page-next").disabled = index === pages.length - 1;
  const figure = $("#source-page");
  figure.setAttribute("aria-busy", "true");
  let picture;
  try {
    picture = await fetchBlob(pagePath(source, page));
  } catch {
    if (request === drawing) figure.hidden = true; // not drawn for this document: the text alone
    return;
  } finally {
    if (request === drawing) figure.setAttribute("aria-busy", "false");
  }
  if (request !== drawing) return;
  const image = $("#source-page-image");
  if (pictureUrl) URL.revokeObjectURL(pictureUrl);
  pictureUrl = URL.createObjectURL(picture.blob);
  image.alt = `Page ${page} of ${source.filename}, the passage highlighted`;
  image.dataset.page = String(page);
  image.dataset.pageSize = picture.headers.get("X-Page-Size") || ""; // points, "width x height"
  image.src = pictureUrl;
  figure.hidden = false;
}
