// Markdown shown as text formatting, safely. Document text (answers quote it, passages and chunks are
// it) is Markdown from the parsers; this renderer builds elements and text nodes itself and never
// parses anything as HTML, so a document's `<script>` or `<img onerror>` shows as the characters it is.
// Blocks: paragraphs (line breaks kept), headings, bullet and numbered lists, pipe tables (a row of
// dashes makes the rows above it a header), fenced code. Inline: **bold**, *italic* and _italic_,
// `code`, backslash escapes, <br> in table cells, and links and images as their text only (a document
// never supplies an address the page follows). Unmatched markers stay as typed, and so does `__x__`
// (in technical text it is far more often a name like __init__ than bold).
//
// Callers mark ranges of the raw text (highlights, grounded sentences) with ``spans``: sorted,
// non-overlapping {start, end, wrap(nodes) → Element} in offsets of ``text``; a span that crosses
// blocks is wrapped once per block. ``tokens`` adds inline patterns ([Source n] citations).

import { h } from "./dom.js";

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const HEADING = /^ {0,3}#{1,6}[ \t]+/;
const ITEM = /^[ \t]*(?:[-*+•]|(\d{1,4})[.)])[ \t]+/;
const TABLE_ROW = /^[ \t]*\|.*\|[ \t]*$/;
const TABLE_RULE = /^[ \t]*\|(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*$/;
const PUNCTUATION = /[!-/:-@[-`{-~]/;
const LINK = /!?\[((?:\\.|[^\]\\\n])*)\]\(([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+"[^"\n]*")?\)/y;
const BREAK = /<br\s*\/?>/iy;

/** ``text[from:to]`` as block elements (see the top of this file for ``spans`` and ``tokens``). */
export function markdownBlocks(text, { from = 0, to = text.length, spans = [], tokens = [] } = {}) {
  const context = { text, spans, tokens: tokens.map(({ pattern, render }) => ({ pattern: sticky(pattern), render })) };
  const lines = splitLines(text, from, to);
  const blocks = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.text.trim()) {
      i += 1;
    } else if (FENCE.test(line.text)) {
      i = codeBlock(lines, i, context, blocks);
    } else if (TABLE_ROW.test(line.text)) {
      i = table(lines, i, context, blocks);
    } else if (ITEM.test(line.text)) {
      i = list(lines, i, context, blocks);
    } else if (HEADING.test(line.text)) {
      const marker = HEADING.exec(line.text)[0].length;
      blocks.push(h("p", { class: "md-heading" }, inline(context, line.start + marker, line.end)));
      i += 1;
    } else {
      const first = i;
      while (i + 1 < lines.length && continuesParagraph(lines[i + 1].text)) i += 1;
      blocks.push(h("p", {}, inline(context, lines[first].start, lines[i].end)));
      i += 1;
    }
  }
  return blocks;
}

/** One line of Markdown (a title) as its formatted inline content. */
export function markdownInline(text) {
  return inline({ text, spans: [], tokens: [] }, 0, text.length);
}

function sticky(pattern) {
  return new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, "") + "y");
}

function splitLines(text, from, to) {
  const lines = [];
  let start = from;
  while (start < to) {
    let end = text.indexOf("\n", start);
    if (end < 0 || end > to) end = to;
    lines.push({ start, end, text: text.slice(start, end) });
    start = end + 1;
  }
  return lines;
}

function startsBlock(line) {
  return FENCE.test(line) || TABLE_ROW.test(line) || ITEM.test(line) || HEADING.test(line);
}

function continuesParagraph(line) {
  return Boolean(line.trim()) && !startsBlock(line);
}

function codeBlock(lines, i, context, blocks) {
  const fence = FENCE.exec(lines[i].text)[1];
  let end = i + 1;
  while (end < lines.length && !lines[end].text.trimStart().startsWith(fence)) end += 1;
  const body = end > i + 1 ? literal(context, lines[i + 1].start, lines[end - 1].end) : [];
  blocks.push(h("pre", {}, h("code", {}, body)));
  return end + 1;
}

function table(lines, i, context, blocks) {
  const head = [];
  let body = [];
  for (; i < lines.length && TABLE_ROW.test(lines[i].text); i += 1) {
    if (TABLE_RULE.test(lines[i].text)) {
      head.push(...body);
      body = [];
    } else {
      body.push(lines[i]);
    }
  }
  const row = (line, cell) => h("tr", {}, tableCells(line).map(([start, end]) => h(cell, {}, inline(context, start, end))));
  blocks.push(h("div", { class: "md-table" }, h("table", {},
    head.length ? h("thead", {}, head.map((line) => row(line, "th"))) : null,
    h("tbody", {}, body.map((line) => row(line, "td"))))));
  return i;
}

/** The [start, end) of each cell of a `| a | b |` row, trimmed; an escaped `\|` stays in its cell. */
function tableCells(line) {
  const cells = [];
  const { text, start } = line;
  let cellStart = text.indexOf("|") + 1;
  for (let at = cellStart; at < text.length; at += 1) {
    if (text[at] === "\\") at += 1;
    else if (text[at] === "|") {
      cells.push(trimmed(text, start, cellStart, at));
      cellStart = at + 1;
    }
  }
  return cells;
}

function trimmed(text, base, from, to) {
  while (from < to && /\s/.test(text[from])) from += 1;
  while (to > from && /\s/.test(text[to - 1])) to -= 1;
  return [base + from, base + to];
}

function list(lines, i, context, blocks) {
  const number = ITEM.exec(lines[i].text)[1];
  const numbered = number !== undefined;
  const items = [];
  while (i < lines.length && ITEM.test(lines[i].text) && (ITEM.exec(lines[i].text)[1] !== undefined) === numbered) {
    const contentStart = lines[i].start + ITEM.exec(lines[i].text)[0].length;
    while (i + 1 < lines.length && continuesParagraph(lines[i + 1].text)) i += 1; // a wrapped item
    items.push(h("li", {}, inline(context, contentStart, lines[i].end)));
    i += 1;
  }
  const start = numbered && Number.parseInt(number, 10) !== 1 ? number : null;
  blocks.push(numbered ? h("ol", { start }, items) : h("ul", {}, items));
  return i;
}

/** ``text[start:end]`` with its spans wrapped around the formatted pieces they cover. */
function inline(context, start, end) {
  return withSpans(context, start, end, (from, to) => formatted(context.text.slice(from, to), context.tokens));
}

/** ``text[start:end]`` as plain text (code), spans still wrapped. */
function literal(context, start, end) {
  return withSpans(context, start, end, (from, to) => [context.text.slice(from, to)]);
}

function withSpans(context, start, end, render) {
  const nodes = [];
  let cursor = start;
  for (const span of context.spans) {
    if (span.end <= cursor || span.start >= end) continue;
    const from = Math.max(span.start, cursor);
    const to = Math.min(span.end, end);
    if (from > cursor) nodes.push(...render(cursor, from));
    nodes.push(span.wrap(render(from, to)));
    cursor = to;
  }
  if (cursor < end) nodes.push(...render(cursor, end));
  return nodes;
}

/** Inline Markdown of ``source`` as nodes (strings become text nodes). */
function formatted(source, tokens) {
  const nodes = [];
  let plain = "";
  const emit = (...made) => {
    if (plain) nodes.push(plain);
    plain = "";
    nodes.push(...made);
  };
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (c === "\\" && PUNCTUATION.test(source[i + 1] || "")) {
      plain += source[i + 1];
      i += 2;
      continue;
    }
    const token = tokens.find(({ pattern }) => {
      pattern.lastIndex = i;
      return pattern.test(source);
    });
    if (token) {
      token.pattern.lastIndex = i;
      const match = token.pattern.exec(source);
      emit(...[token.render(match)].flat());
      i += match[0].length;
      continue;
    }
    const made = c === "`" ? codeSpan(source, i)
      : c === "[" || (c === "!" && source[i + 1] === "[") ? link(source, i, tokens)
      : c === "<" ? lineBreak(source, i)
      : c === "*" || c === "_" ? emphasis(source, i, tokens)
      : null;
    if (made) {
      emit(made.node);
      i = made.end;
    } else {
      const run = c === "`" || c === "*" || c === "_" ? runLength(source, i) : 1;
      plain += source.slice(i, i + run);
      i += run;
    }
  }
  emit();
  return nodes;
}

function runLength(source, i) {
  let end = i;
  while (source[end] === source[i]) end += 1;
  return end - i;
}

function codeSpan(source, i) {
  const run = runLength(source, i);
  const fence = "`".repeat(run);
  let close = source.indexOf(fence, i + run);
  while (close >= 0 && runLength(source, close) !== run) close = source.indexOf(fence, close + runLength(source, close));
  if (close < 0) return null;
  let content = source.slice(i + run, close).replace(/\n/g, " ");
  if (/^ .*[^ ].* $/.test(content)) content = content.slice(1, -1);
  return { node: h("code", {}, content), end: close + run };
}

function link(source, i, tokens) {
  LINK.lastIndex = i;
  const match = LINK.exec(source);
  if (!match) return null;
  const image = source[i] === "!";
  const label = image ? match[1].replace(/\\(.)/g, "$1") : formatted(match[1], tokens);
  const title = /^https?:/i.test(match[2]) ? match[2] : null;
  return { node: h("span", { class: image ? "md-image" : "md-link", title }, label), end: LINK.lastIndex };
}

function lineBreak(source, i) {
  BREAK.lastIndex = i;
  return BREAK.test(source) ? { node: h("br"), end: BREAK.lastIndex } : null;
}

/** `*x*` `_x_` (italic), `**x**` (bold), `***x***` (both): the first closing run of the same length
 * that follows a non-space; `_` only alone and at word edges (snake_case and __init__ stay as typed). */
function emphasis(source, i, tokens) {
  const marker = source[i];
  const run = runLength(source, i);
  const after = source[i + run] || "";
  if (run > (marker === "_" ? 1 : 3) || !after || /\s/.test(after)) return null;
  if (marker === "_" && /\w/.test(source[i - 1] || "")) return null;
  const delimiter = marker.repeat(run);
  for (let close = source.indexOf(delimiter, i + run + 1); close >= 0; close = source.indexOf(delimiter, close + 1)) {
    const before = source[close - 1];
    if (/\s/.test(before) || before === marker || runLength(source, close) !== run) continue;
    if (marker === "_" && /\w/.test(source[close + run] || "")) continue;
    const inner = formatted(source.slice(i + run, close), tokens);
    const node = run === 1 ? h("em", {}, inner) : run === 2 ? h("strong", {}, inner) : h("strong", {}, h("em", {}, inner));
    return { node, end: close + run };
  }
  return null;
}
