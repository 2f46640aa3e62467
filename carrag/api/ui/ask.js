// The Ask screen: the answer streams in from POST /query/stream; [Source n] citations become links
// that open the cited passage with its file and page.

import { streamEvents } from "./api.js";
import { $, h, pagesLabel, replaceChildren, splitTags } from "./dom.js";

// "[Source 2]", "[Source 1, Source 3]", "[Sources 1 and 2]", "[Source 1, 2]"
const CITATION = /\[Sources? \d+(?:\s*(?:,|and|&)\s*(?:Source )?\d+)*\]/g;

let sources = [];
let controller = null;

export function initAsk() {
  const form = $("#ask-form");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    ask();
  });
  $("#ask-question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      ask();
    }
  });
  $("#ask-stop").addEventListener("click", () => controller && controller.abort());
}

export function showAsk() {
  $("#ask-question").focus({ preventScroll: true });
}

async function ask() {
  const question = $("#ask-question").value.trim();
  if (!question) return;
  if (controller) controller.abort();
  controller = new AbortController();
  const body = { question, top_k: Number.parseInt($("#ask-top-k").value, 10) || 5 };
  const tags = splitTags($("#ask-tags").value);
  if (tags.length) body.tags = tags;
  const rerank = $("#ask-rerank").value;
  if (rerank) body.rerank = rerank === "true";

  const answerBox = $("#answer");
  const answerText = $("#answer-text");
  const meta = $("#answer-meta");
  answerBox.hidden = false;
  $("#sources-box").hidden = true;
  replaceChildren(answerText);
  replaceChildren($("#sources"));
  meta.textContent = "Searching…";
  answerText.setAttribute("aria-busy", "true");
  $("#ask-submit").disabled = true;
  $("#ask-stop").hidden = false;
  sources = [];
  let text = "";
  let pending = false;
  const render = () => {
    pending = false;
    renderAnswer(answerText, text);
  };
  try {
    for await (const { event, data } of streamEvents("/query/stream", body, controller.signal)) {
      if (event === "sources") {
        sources = data;
        renderSources();
        meta.textContent = sources.length ? "Generating…" : "";
      } else if (event === "token") {
        text += data.text;
        if (!pending) {
          pending = true;
          requestAnimationFrame(render);
        }
      } else if (event === "done") {
        meta.textContent = doneText(data);
      } else if (event === "error") {
        meta.textContent = `The answer stopped: ${data.detail || "generation failed"}`;
      }
    }
  } catch (error) {
    meta.textContent = error.name === "AbortError" ? "Stopped." : `Error: ${error.detail || error.message || error}`;
  } finally {
    render();
    answerText.setAttribute("aria-busy", "false");
    $("#ask-submit").disabled = false;
    $("#ask-stop").hidden = true;
    controller = null;
  }
}

function doneText(done) {
  const parts = [];
  if (done.model) parts.push(done.model);
  if (done.duration_ms !== undefined) parts.push(`${(done.duration_ms / 1000).toFixed(1)} s`);
  if (done.reranked) parts.push("reranked");
  else if (done.rerank_note) parts.push("not reranked");
  return parts.join(" · ");
}

/** The answer as text nodes, with each [Source n] made a link to source n. */
function renderAnswer(container, text) {
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    nodes.push(text.slice(last, match.index));
    const numbers = [...match[0].matchAll(/\d+/g)].map((m) => Number.parseInt(m[0], 10));
    numbers.forEach((number) => nodes.push(citationLink(number)));
    last = match.index + match[0].length;
  }
  nodes.push(text.slice(last));
  replaceChildren(container, nodes);
}

function citationLink(number) {
  const source = sources[number - 1];
  if (!source) return `[Source ${number}]`;
  return h("a", {
    class: "citation",
    href: chunkHref(source),
    title: `${source.filename}${source.page ? `, page ${source.page}` : ""}`,
    "aria-label": `Source ${number}: ${source.filename}`,
    dataset: { source: String(number) },
    onclick: (event) => {
      if (event.ctrlKey || event.metaKey || event.shiftKey) return; // let the browser open the document
      event.preventDefault();
      openSource(number);
    },
  }, `[${number}]`);
}

function chunkHref(source) {
  return `#/documents/${encodeURIComponent(source.document_id)}?chunk=${source.chunk_index}`;
}

function renderSources() {
  $("#sources-box").hidden = !sources.length;
  replaceChildren($("#sources"), sources.map((source, index) => {
    const where = [pagesLabel(source.pages, source.page), `chunk ${source.chunk_index}`, `score ${source.score.toFixed(3)}`];
    return h("li", { id: `source-${index + 1}` },
      h("a", {
        class: "source-link", href: chunkHref(source),
        onclick: (event) => {
          if (event.ctrlKey || event.metaKey || event.shiftKey) return;
          event.preventDefault();
          openSource(index + 1);
        },
      }, source.title && source.title !== source.filename ? `${source.title} (${source.filename})` : source.filename),
      " ", h("span", { class: "source-meta" }, where.filter(Boolean).join(" · ")),
      h("p", { class: "source-snippet" }, snippet(source.text, 220)));
  }));
}

function openSource(number) {
  const source = sources[number - 1];
  if (!source) return;
  $("#source-dialog-title").textContent = `[${number}] ${source.filename}`;
  const neighbours = source.window && source.window[1] > source.window[0]
    ? `with its neighbours, chunks ${source.window[0]}–${source.window[1]}` : null;
  const where = [pagesLabel(source.pages, source.page), `chunk ${source.chunk_index}`, neighbours, source.section,
    source.source_id !== source.filename ? source.source_id : null];
  $("#source-dialog-meta").textContent = where.filter(Boolean).join(" · ");
  $("#source-dialog-text").textContent = source.text;
  $("#source-dialog-open").href = chunkHref(source);
  $("#source-dialog").showModal();
}

function snippet(text, limit) {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= limit ? flat : `${flat.slice(0, limit - 1)}…`;
}
