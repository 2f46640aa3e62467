// The Ingest screen: upload files or URLs as async jobs and follow each job's stage and progress.

import { getJson, request, upload } from "./api.js";
import { currentCollection } from "./collections.js";
import { $, h, replaceChildren, splitTags } from "./dom.js";

const POLL_MS = 400;
const FINISHED = new Set(["done", "failed", "cancelled"]);
const STAGE_UNITS = { uploading: "bytes", embedding: "chunks" };
const shown = new Map(); // job id → its row (JobView)
const doneViews = new Set(); // finished rows that link to a document: checked again on each visit
let exists = new Map(); // document id → Promise<boolean>, for one visit to the screen

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
    // One upload at a time; the server queues the jobs and works through them.
    for (const file of files) await ingestFile(file, options);
    for (const url of urls) await ingestUrl(url, options);
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

async function ingestFile(file, options) {
  const job = new JobView(file.name);
  const form = new FormData();
  form.append("file", file);
  if (options.tags.length) form.append("tags", options.tags.join(","));
  if (options.chunking) form.append("chunking", options.chunking);
  if (options.force) form.append("force", "true");
  form.append("collection", currentCollection());
  try {
    const { status, body } = await upload("/ingest/file?async=true", form, (loaded, total) =>
      job.show({ state: "uploading", progress: { done: loaded, total } }),
    );
    await job.follow(status, body);
  } catch (error) {
    job.show({ state: "failed", error: error.detail || String(error) });
  }
}

async function ingestUrl(url, options) {
  const job = new JobView(url);
  job.show({ state: "queued" });
  const json = { url, tags: options.tags, force: options.force, collection: currentCollection() };
  if (options.chunking) json.chunking = options.chunking;
  try {
    const { status, body } = await request("/ingest/url?async=true", { method: "POST", json });
    await job.follow(status, body);
  } catch (error) {
    job.show({ state: "failed", error: error.detail || String(error) });
  }
}

/** One row of the job list, kept up to date from GET /jobs/{id}. */
class JobView {
  constructor(name) {
    this.jobId = null;
    this.removed = false;
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
    $("#jobs").prepend(this.element);
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
    this.element.dataset.state = state;
    this.badge.dataset.state = state;
    this.badge.textContent = state;
    this.cancelButton.hidden = FINISHED.has(state) || !this.jobId;
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

    if (state === "done") {
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
