// The Ingest screen: upload files or URLs as async jobs and follow each job's stage and progress.
// Every chosen file and URL is listed as a job at once; a few upload at a time (UPLOADS_AT_ONCE), and
// each job is followed from the moment the server accepts it, so the next upload need not wait for it.

import { ApiError, getJson, request, upload } from "./api.js";
import { currentCollection, loadCollections } from "./collections.js";
import { $, h, replaceChildren, splitTags } from "./dom.js";

const POLL_MS = 400;
const UPLOADS_AT_ONCE = 3;
const QUEUE_FULL_RETRY_MS = 2000; // a 429 (the server's INGEST_QUEUE_SIZE is full): try again after this
const FINISHED = new Set(["done", "failed", "cancelled"]);
const STAGE_UNITS = { uploading: "bytes", embedding: "chunks", running: "sources" };
// What the server did with a finished ingest (`result.status`), as the job's badge says it.
const OUTCOMES = { ingested: "stored", updated: "updated", unchanged: "unchanged", duplicate: "not stored" };
const shown = new Map(); // job id → its row (JobView)
const doneViews = new Set(); // finished rows that link to a document: checked again on each visit
let exists = new Map(); // document id → Promise<boolean>, for one visit to the screen
let unsent = 0; // files and URLs listed but not yet accepted by the server: closing the tab would lose them

/** Whether a document still exists (once per id and visit; a job's document may since be deleted). */
function documentExists(documentId) {
  if (!exists.has(documentId)) {
    exists.set(documentId, getJson(`/documents/${encodeURIComponent(documentId)}`)
      .then(() => true, (error) => error.status !== 404));
  }
  return exists.get(documentId);
}

export function initIngest() {
  const form = $("#ingest-form");
  const input = $("#ingest-files");
  const dropzone = $("#dropzone");

  input.addEventListener("change", () => showChosen(input.files));
  window.addEventListener("beforeunload", (event) => {
    if (unsent > 0) event.preventDefault(); // the browser asks before the page (and the waiting uploads) go
  });
  for (const name of ["dragenter", "dragover"]) {
    dropzone.addEventListener(name, (event) => {
      event.preventDefault();
      dropzone.classList.add("over");
    });
  }
  for (const name of ["dragleave", "drop"]) dropzone.addEventListener(name, () => dropzone.classList.remove("over"));
  dropzone.addEventListener("drop", (event) => {
    event.preventDefault();
    input.files = event.dataTransfer.files;
    showChosen(input.files);
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const files = [...input.files];
    const urls = $("#ingest-urls").value.split("\n").map((line) => line.trim()).filter(Boolean);
    const error = $("#ingest-error");
    if (!files.length && !urls.length) {
      error.textContent = "Choose at least one file or enter a URL.";
      return;
    }
    error.textContent = "";
    const options = {
      tags: splitTags($("#ingest-tags").value),
      chunking: $("#ingest-chunking").value || null,
      force: $("#ingest-force").checked,
    };
    form.reset();
    showChosen([]);
    const work = [
      ...files.map((file) => ({ name: file.name, send: (job) => ingestFile(job, file, options) })),
      ...urls.map((url) => ({ name: url, send: (job) => ingestUrl(job, url, options) })),
    ];
    const views = [];
    for (const item of work) views.push(new JobView(item.name, { waiting: true, after: views.at(-1) }));
    let next = 0;
    unsent += work.length;
    const worker = async () => {
      while (next < work.length) {
        const index = next++;
        if (!views[index].withdrawn) await work[index].send(views[index]);
        unsent -= 1;
      }
    };
    await Promise.all(Array.from({ length: Math.min(UPLOADS_AT_ONCE, work.length) }, worker));
  });
}

/** Jobs the server already holds (this or another tab, before a reload): show them, follow the running ones. */
export async function loadRecentJobs() {
  exists = new Map();
  for (const view of doneViews) view.checkLink();
  let listing;
  try {
    listing = await getJson("/jobs?limit=20");
  } catch {
    return; // a server without the jobs API, or no key yet
  }
  for (const job of [...listing.items].reverse()) {
    if (shown.has(job.job_id)) continue;
    const view = new JobView(job.source);
    view.jobId = job.job_id;
    shown.set(job.job_id, view);
    view.show(job);
    if (!FINISHED.has(job.state)) view.poll(`/jobs/${encodeURIComponent(job.job_id)}`).catch(() => {});
  }
}

function showChosen(files) {
  replaceChildren($("#chosen-files"), [...files].map((file) => h("li", {}, `${file.name} (${formatBytes(file.size)})`)));
}

/** Upload one file; resolves once the server has accepted it (the job is followed from then on). */
function ingestFile(job, file, options) {
  const form = new FormData();
  form.append("file", file);
  if (options.tags.length) form.append("tags", options.tags.join(","));
  if (options.chunking) form.append("chunking", options.chunking);
  if (options.force) form.append("force", "true");
  form.append("collection", currentCollection());
  return submit(job, "uploading", () => upload("/ingest/file?async=true", form, (loaded, total) =>
    job.show({ state: "uploading", progress: { done: loaded, total } })));
}

function ingestUrl(job, url, options) {
  const json = { url, tags: options.tags, force: options.force, collection: currentCollection() };
  if (options.chunking) json.chunking = options.chunking;
  return submit(job, "queued", () => request("/ingest/url?async=true", { method: "POST", json }));
}

/** Send until the server takes the job (a full queue, 429, is waited out), then follow it unawaited. */
async function submit(job, state, send) {
  job.show({ state });
  while (true) {
    try {
      const { status, body } = await send();
      job.follow(status, body).catch((error) => job.show({ state: "failed", error: error.detail || String(error) }));
      return;
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 429)) {
        job.show({ state: "failed", error: error.detail || String(error) });
        return;
      }
      job.show({ state: "waiting", note: `The server's queue is full; trying again (${error.detail})` });
      await new Promise((resolve) => setTimeout(resolve, QUEUE_FULL_RETRY_MS));
    }
  }
}

/** One row of the job list, kept up to date from GET /jobs/{id}. */
class JobView {
  /** ``waiting``: listed before its upload starts (it can be withdrawn until then); ``after``: the row
   * it follows (a batch keeps its order at the top of the list). */
  constructor(name, { waiting = false, after = null } = {}) {
    this.jobId = null;
    this.removed = false;
    this.withdrawn = false;
    this.badge = h("span", { class: "badge" });
    this.cancelButton = h("button", { type: "button", class: "small cancel", onclick: () => this.cancel() }, "Cancel");
    this.bar = h("progress", { max: 1, "aria-label": `Progress of ${name}` });
    this.detail = h("div", { class: "job-detail" });
    this.element = h(
      "li",
      { class: "job" },
      h("div", { class: "job-head" }, h("span", { class: "job-name" }, name), this.badge, this.cancelButton),
      this.bar,
      this.detail,
    );
    if (after) after.element.after(this.element);
    else $("#jobs").prepend(this.element);
    if (waiting) this.show({ state: "waiting" });
    $("#jobs-empty").hidden = true;
  }

  /** After the POST: 202 → follow the job; a server without jobs answers 200 with the result. */
  async follow(status, body) {
    if (status !== 202) {
      this.show({ state: "done", result: body });
      return;
    }
    this.jobId = body.job_id;
    // The list of recent jobs can name this job before its upload's answer has been read here (the
    // list was asked for when the screen opened, and answered after the server accepted the upload):
    // this row follows the job, so the listed one goes.
    const listed = shown.get(body.job_id);
    if (listed && listed !== this) listed.remove();
    shown.set(body.job_id, this);
    this.show(body);
    await this.poll(body.status_url || `/jobs/${encodeURIComponent(body.job_id)}`);
  }

  async poll(url) {
    while (!this.removed) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      if (this.removed) return;
      const job = await getJson(url);
      this.show(job);
      if (FINISHED.has(job.state)) return;
    }
  }

  /** Take the row off the list (another row shows the same job); its polling stops. */
  remove() {
    this.removed = true;
    this.element.remove();
    doneViews.delete(this);
  }

  async cancel() {
    this.cancelButton.disabled = true;
    if (this.element.dataset.state === "waiting") {
      this.withdrawn = true;
      this.show({ state: "cancelled" });
      this.detail.textContent = "Withdrawn before its upload; nothing was sent.";
      return;
    }
    if (!this.jobId) return;
    try {
      await request(`/jobs/${encodeURIComponent(this.jobId)}`, { method: "DELETE" });
    } catch (error) {
      this.detail.textContent = `Could not cancel: ${error.detail || error}`;
      this.cancelButton.disabled = false;
    }
  }

  /** Link to the job's document only while it exists; say so once it is gone. */
  async checkLink() {
    const link = this.link;
    const documentId = this.documentId;
    if (!link || !documentId) return;
    const present = await documentExists(documentId);
    if (link !== this.link) return; // shown again meanwhile
    replaceChildren(link, present
      ? h("a", { href: `#/documents/${encodeURIComponent(documentId)}` }, "open document")
      : h("span", { class: "job-gone" }, "document since deleted or replaced"));
  }

  show(job) {
    const state = job.state || "queued";
    const finishing = state === "done" && this.element.dataset.state !== "done";
    this.element.dataset.state = state;
    this.badge.dataset.state = state;
    const outcome = state === "done" ? (job.result || {}).status : undefined;
    this.badge.dataset.outcome = outcome || "";
    this.badge.textContent = OUTCOMES[outcome] || state;
    this.cancelButton.hidden = FINISHED.has(state) || (!this.jobId && state !== "waiting");
    if (finishing) loadCollections(); // the picker's document counts
    const progress = job.progress || {};
    if (FINISHED.has(state)) {
      this.bar.max = 1;
      this.bar.value = state === "done" ? 1 : 0;
    } else if (progress.total) {
      this.bar.max = progress.total;
      this.bar.value = progress.done || 0;
    } else {
      this.bar.removeAttribute("value"); // indeterminate while the stage has no count
    }
    this.bar.hidden = state === "failed" || state === "cancelled";

    if (state === "done" && job.report) { // a folder sync or site crawl (carrag sync, POST /sync)
      const counts = Object.entries(job.report.counts).filter(([, count]) => count);
      replaceChildren(this.detail, counts.map(([outcome, count]) => `${count} ${outcome}`).join(", ") || "Nothing to sync",
        timingsText(job.timings_ms));
    } else if (state === "done") {
      const result = job.result || {};
      this.documentId = result.document_id;
      const link = h("span", { class: "job-link" });
      this.link = link;
      doneViews.add(this);
      this.checkLink();
      const verb = result.status === "unchanged" ? "Unchanged (already ingested)"
        : result.status === "updated" ? "Tags updated (same content, nothing re-embedded)"
        : result.status === "duplicate" ? `Duplicate of ${result.source_id}, not stored` : "Ingested";
      replaceChildren(this.detail, `${verb}: ${plural(result.chunk_count, "chunk")}`,
        result.tags && result.tags.length ? ` · tags: ${result.tags.join(", ")}` : "",
        timingsText(job.timings_ms || result.timings_ms), " · ", link);
    } else if (state === "cancelled") {
      this.detail.textContent = "Cancelled; nothing of it was stored.";
    } else if (state === "failed") {
      this.detail.textContent = job.error || "Failed.";
    } else if (state === "waiting") {
      this.detail.textContent = job.note || `Waiting to upload (${UPLOADS_AT_ONCE} at a time)…`;
    } else if (progress.total) {
      const unit = STAGE_UNITS[state] || "";
      this.detail.textContent = state === "uploading"
        ? `Uploading ${formatBytes(progress.done)} of ${formatBytes(progress.total)}`
        : state === "parsing" // the only count while parsing: pages read by OCR, each reported as it starts
          ? `OCR page ${Math.min(progress.done + 1, progress.total)} of ${progress.total}`
          : `${capitalize(state)}: ${progress.done} / ${progress.total} ${unit}`.trim();
    } else {
      this.detail.textContent = `${capitalize(state)}…`;
    }
  }
}

/** " · 2.8 s (parsing 2.6 s, embedding 155 ms)": the total, and the stages that took real time. */
function timingsText(timings) {
  const entries = Object.entries(timings || {});
  const total = entries.reduce((sum, [, ms]) => sum + ms, 0);
  if (!entries.length) return "";
  const notable = entries.filter(([, ms]) => ms >= Math.max(5, total * 0.05)).map(([stage, ms]) => `${stage} ${duration(ms)}`);
  return ` · ${duration(total)}${notable.length ? ` (${notable.join(", ")})` : ""}`;
}

function duration(ms) {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

function capitalize(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function formatBytes(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(0)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
