// The Ask screen: a conversation. Each question is a turn that stays on screen; the earlier turns go
// with the next question as `history`, so a follow-up ("what sizes does it come in?") is understood.
// The answer streams in from POST /query/stream; [Source n] citations become links that open the
// cited passage. When `done` arrives, the turn shows what the server checked, rendering defensively
// (every field may be absent): sentences the sources do not support are marked (`grounding`), an
// answer cut by the token limit says so (`finish_reason`), "the documents don't say" (`answerable:
// false`) is shown as such with the closest passages, and source cards highlight `highlights`.
// Tokens flagged `draft` (the model's raw text in `generate` mode) are shown as a draft, labelled as
// not checked, until `done` replaces them with the checked answer; `auto` answers arrive checked.

import { streamEvents } from "./api.js";
import { currentCollection } from "./collections.js";
import { $, h, pagesLabel, replaceChildren, splitTags } from "./dom.js";
import { highlightedText, highlightedSnippet } from "./highlight.js";

// "[Source 2]", "[Source 1, Source 3]", "[Sources 1 and 2]", "[Source 1, 2]"
const CITATION = /\[Sources? \d+(?:\s*(?:,|and|&)\s*(?:Source )?\d+)*\]/g;
const HISTORY_TURNS = 10; // question/answer pairs sent with the next question
const NO_ANSWER = "The documents don't say. These are the closest passages:";
const DRAFT = "Draft: the model's text as it is written, not checked against the sources yet.";
const STOPPED = {
  length: "Answer cut off: it reached the length limit (LLM_MAX_TOKENS).",
  loop: "Answer stopped: it had started repeating itself.",
};

const turns = []; // {question, answer, finished}
let controller = null;

export function initAsk() {
  $("#ask-form").addEventListener("submit", (event) => {
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
  $("#ask-new").addEventListener("click", newConversation);
}

export function showAsk() {
  $("#ask-question").focus({ preventScroll: true });
}

function newConversation() {
  if (controller) controller.abort();
  turns.length = 0;
  replaceChildren($("#conversation"));
  $("#ask-new").hidden = true;
  $("#ask-question").placeholder = "Ask a question about your documents…";
  $("#ask-question").focus();
}

/** The earlier turns as chat messages, oldest first: what the server needs to read a follow-up. */
function history() {
  return turns
    .filter((turn) => turn.finished && turn.answer.trim())
    .slice(-HISTORY_TURNS)
    .flatMap((turn) => [
      { role: "user", content: turn.question },
      { role: "assistant", content: turn.answer },
    ]);
}

function requestBody(question) {
  const body = {
    question,
    top_k: Number.parseInt($("#ask-top-k").value, 10) || 5,
    collection: currentCollection(),
  };
  const earlier = history();
  if (earlier.length) body.history = earlier;
  const tags = splitTags($("#ask-tags").value);
  if (tags.length) body.tags = tags;
  const rerank = $("#ask-rerank").value;
  if (rerank) body.rerank = rerank === "true";
  const mode = $("#ask-mode").value;
  if (mode) body.answer_mode = mode;
  return body;
}

/** A new turn at the end of the conversation; the ids of the previous one move to it. */
function addTurnElement(question) {
  for (const element of $("#conversation").querySelectorAll("[id]")) element.removeAttribute("id");
  for (const element of $("#conversation").querySelectorAll("[aria-live]")) element.removeAttribute("aria-live");
  const parts = {
    notice: h("p", { class: "notice no-answer", hidden: true }, NO_ANSWER),
    draft: h("p", { class: "notice draft", hidden: true }, DRAFT),
    text: h("div", { id: "answer-text", class: "answer-text", "aria-live": "polite", "aria-busy": "true" }),
    stopped: h("p", { class: "notice stopped", hidden: true }),
    meta: h("p", { id: "answer-meta", class: "hint answer-meta" }, "Searching…"),
    sourcesTitle: h("h3", { class: "sources-title" }, "Sources"),
    sources: h("ol", { id: "sources", class: "sources" }),
  };
  parts.sourcesBox = h("section", { class: "turn-sources", hidden: true }, parts.sourcesTitle, parts.sources);
  parts.element = h("li", { class: "turn", dataset: { state: "streaming" } },
    h("p", { class: "turn-question" }, h("span", { class: "visually-hidden" }, "Question: "), question),
    h("article", { class: "card answer", "aria-label": "Answer" },
      parts.notice, parts.draft, parts.text, parts.stopped, parts.meta),
    parts.sourcesBox);
  $("#conversation").append(parts.element);
  return parts;
}

async function ask() {
  const question = $("#ask-question").value.trim();
  if (!question) return;
  if (controller) controller.abort();
  const mine = new AbortController();
  controller = mine;
  const body = requestBody(question);
  const turn = { question, answer: "", finished: false };
  turns.push(turn);
  const view = addTurnElement(question);
  $("#ask-question").value = "";
  $("#ask-question").placeholder = "Ask a follow-up question…";
  $("#ask-new").hidden = false;
  $("#ask-submit").disabled = true;
  $("#ask-stop").hidden = false;
  view.element.scrollIntoView({ block: "nearest" });

  let sources = [];
  let done = null;
  let pending = false;
  const render = () => {
    pending = false;
    renderAnswer(view.text, turn.answer, sources, done && done.grounding);
  };
  try {
    for await (const { event, data } of streamEvents("/query/stream", body, mine.signal)) {
      if (event === "sources") {
        sources = Array.isArray(data) ? data : [];
        renderSources(view, sources);
        view.meta.textContent = sources.length ? "Generating…" : "";
      } else if (event === "token") {
        if (data.draft && view.draft.hidden) {
          view.draft.hidden = false;
          view.text.classList.add("draft");
          view.meta.textContent = "Generating… (draft, checked when it is complete)";
        }
        turn.answer += data.text;
        if (!pending) {
          pending = true;
          requestAnimationFrame(render);
        }
      } else if (event === "done") {
        done = data || {};
        if (typeof done.answer === "string") turn.answer = done.answer; // the checked answer, citations fixed
        view.draft.hidden = true;
        view.text.classList.remove("draft");
        if (Array.isArray(done.sources)) sources = done.sources;
        sources = withHighlights(sources, done.highlights);
        turn.finished = true;
        showChecks(view, done, sources);
      } else if (event === "error") {
        view.element.dataset.state = "error";
        view.meta.textContent = `The answer stopped: ${data.detail || "generation failed"}`;
      }
    }
  } catch (error) {
    view.element.dataset.state = "error";
    view.meta.textContent = error.name === "AbortError" ? "Stopped." : `Error: ${error.detail || error.message || error}`;
  } finally {
    render();
    view.text.setAttribute("aria-busy", "false");
    if (view.element.dataset.state === "streaming") view.element.dataset.state = "done";
    // A question asked meanwhile (Ctrl+Enter while this one streamed) aborted this one and owns the
    // buttons now: releasing them here would leave its Stop hidden and unable to stop it.
    if (controller === mine) {
      $("#ask-submit").disabled = false;
      $("#ask-stop").hidden = true;
      controller = null;
    }
  }
}

/** The SSE `done` event carries the highlights per source position (the `sources` event came before
 * the answer was known); /query has them in `sources[*].highlights`. */
function withHighlights(sources, highlights) {
  if (!Array.isArray(highlights)) return sources;
  return sources.map((source, index) =>
    Array.isArray(highlights[index]) && highlights[index].length ? { ...source, highlights: highlights[index] } : source);
}

/** What `done` says about the answer: refusal, cut-off, grounding, mode; then the sources again. */
function showChecks(view, done, sources) {
  const refused = done.answerable === false;
  view.element.classList.toggle("no-answer", refused);
  view.notice.hidden = !refused;
  view.sourcesTitle.textContent = refused ? "Closest passages" : "Sources";
  const stopped = STOPPED[done.finish_reason];
  view.stopped.hidden = !stopped;
  view.stopped.textContent = stopped || "";
  view.element.dataset.finish = done.finish_reason || "";
  view.meta.textContent = doneText(done);
  renderSources(view, sources);
}

function doneText(done) {
  const parts = [];
  const mode = done.answer_mode;
  if (mode === "extract") parts.push("quoted from the sources");
  if (done.fallback_reason) {
    const replaced = done.answerable !== false && mode === "extract" && done.requested_mode === "auto";
    parts.push(replaced ? `the generated answer was replaced: ${done.fallback_reason}` : done.fallback_reason);
  }
  if (done.model && mode !== "extract" && mode !== "none") parts.push(done.model);
  const grounding = done.grounding;
  if (grounding && Array.isArray(grounding.sentences)) {
    const unsupported = grounding.sentences.filter((sentence) => sentence.supported === false).length;
    parts.push(unsupported ? `${unsupported} sentence${unsupported === 1 ? "" : "s"} not supported by the sources`
      : "every sentence supported by the sources");
    const removed = grounding.citations_removed || [];
    if (removed.length) parts.push(`removed citation${removed.length === 1 ? "" : "s"} of missing source ${removed.join(", ")}`);
  }
  if (done.duration_ms !== undefined) parts.push(`${(done.duration_ms / 1000).toFixed(1)} s`);
  if (done.reranked) parts.push("reranked");
  else if (done.rerank_note) parts.push("not reranked");
  return parts.join(" · ");
}

/** The answer as text nodes with [Source n] links; with a grounding check, each checked sentence in a
 * span, marked when the sources do not support it. Offsets that do not fit the text are ignored. */
function renderAnswer(container, text, sources, grounding) {
  const nodes = [];
  let last = 0;
  for (const sentence of groundedSpans(text, grounding)) {
    nodes.push(...withCitations(text.slice(last, sentence.start), sources));
    const supported = sentence.supported !== false;
    const support = typeof sentence.support === "number" ? sentence.support.toFixed(2) : "?";
    nodes.push(h("span", {
      class: supported ? "sentence" : "sentence unsupported",
      title: supported ? `Supported by the sources (support ${support})` : `Not supported by the sources (support ${support})`,
      dataset: { support },
    }, ...withCitations(text.slice(sentence.start, sentence.end), sources)));
    last = sentence.end;
  }
  nodes.push(...withCitations(text.slice(last), sources));
  replaceChildren(container, nodes);
}

/** The grounding's sentences located in ``text``, in order, without overlaps. */
function groundedSpans(text, grounding) {
  if (!grounding || !Array.isArray(grounding.sentences)) return [];
  const spans = [];
  let cursor = 0;
  for (const sentence of grounding.sentences) {
    let { start, end } = sentence;
    const fits = Number.isInteger(start) && Number.isInteger(end) && start >= cursor && end <= text.length
      && (typeof sentence.text !== "string" || text.slice(start, end) === sentence.text);
    if (!fits) {
      if (typeof sentence.text !== "string" || !sentence.text) continue;
      start = text.indexOf(sentence.text, cursor);
      if (start < 0) continue;
      end = start + sentence.text.length;
    }
    if (end <= start) continue;
    spans.push({ ...sentence, start, end });
    cursor = end;
  }
  return spans;
}

function withCitations(text, sources) {
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    nodes.push(text.slice(last, match.index));
    const numbers = [...match[0].matchAll(/\d+/g)].map((m) => Number.parseInt(m[0], 10));
    numbers.forEach((number) => nodes.push(citationLink(number, sources)));
    last = match.index + match[0].length;
  }
  nodes.push(text.slice(last));
  return nodes.filter((node) => node !== "");
}

function citationLink(number, sources) {
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
      openSource(source, number);
    },
  }, `[${number}]`);
}

function chunkHref(source) {
  return `#/documents/${encodeURIComponent(source.document_id)}?chunk=${source.chunk_index}`;
}

function renderSources(view, sources) {
  view.sourcesBox.hidden = !sources.length;
  replaceChildren(view.sources, sources.map((source, index) => {
    const score = typeof source.score === "number" ? `score ${source.score.toFixed(3)}` : null;
    const where = [pagesLabel(source.pages, source.page), `chunk ${source.chunk_index}`, score];
    const highlights = Array.isArray(source.highlights) ? source.highlights : [];
    return h("li", { class: highlights.length ? "source has-highlights" : "source" },
      h("a", {
        class: "source-link", href: chunkHref(source),
        onclick: (event) => {
          if (event.ctrlKey || event.metaKey || event.shiftKey) return;
          event.preventDefault();
          openSource(source, index + 1);
        },
      }, source.title && source.title !== source.filename ? `${source.title} (${source.filename})` : source.filename),
      " ", h("span", { class: "source-meta" }, where.filter(Boolean).join(" · ")),
      h("p", { class: "source-snippet" }, ...highlightedSnippet(source.text || "", highlights, 220)));
  }));
}

function openSource(source, number) {
  $("#source-dialog-title").textContent = `[${number}] ${source.filename}`;
  const neighbours = source.window && source.window[1] > source.window[0]
    ? `with its neighbours, chunks ${source.window[0]}–${source.window[1]}` : null;
  const where = [pagesLabel(source.pages, source.page), `chunk ${source.chunk_index}`, neighbours, source.section,
    source.source_id !== source.filename ? source.source_id : null];
  $("#source-dialog-meta").textContent = where.filter(Boolean).join(" · ");
  const highlights = Array.isArray(source.highlights) ? source.highlights : [];
  replaceChildren($("#source-dialog-text"), highlightedText(source.text || "", highlights));
  $("#source-dialog-open").href = chunkHref(source);
  $("#source-dialog").showModal();
  const first = $("#source-dialog-text mark");
  if (first) first.scrollIntoView({ block: "center" });
}
