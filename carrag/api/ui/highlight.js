// A passage shown as formatted Markdown with two kinds of marks, both offsets into `sources[*].text`:
// the sentences an answer relies on (`highlights`, [{start, end}], as <mark>), and the chunk that
// matched the question (`chunk_span`, {start, end}: the rest of the passage is its neighbours).

import { h } from "./dom.js";
import { markdownBlocks } from "./markdown.js";

/** Valid ranges, clipped to the text, sorted and merged. */
export function cleanRanges(text, ranges) {
  const valid = (Array.isArray(ranges) ? ranges : [])
    .filter((range) => range && Number.isInteger(range.start) && Number.isInteger(range.end))
    .map((range) => ({ start: Math.max(0, range.start), end: Math.min(text.length, range.end) }))
    .filter((range) => range.end > range.start)
    .sort((a, b) => a.start - b.start);
  const merged = [];
  for (const range of valid) {
    const previous = merged[merged.length - 1];
    if (previous && range.start <= previous.end) previous.end = Math.max(previous.end, range.end);
    else merged.push({ ...range });
  }
  return merged;
}

/** ``text[from:to]`` as blocks, the parts inside ``ranges`` as <mark class="highlight">. */
export function markedBlocks(text, ranges, from = 0, to = text.length) {
  const spans = cleanRanges(text, ranges).map((range) => ({
    ...range,
    wrap: (nodes) => h("mark", { class: "highlight" }, nodes),
  }));
  return markdownBlocks(text, { from, to, spans });
}

/** The whole passage, with the chunk that matched set apart (class "matched-chunk"). */
export function passageBlocks(text, ranges, chunkSpan) {
  const matched = cleanRanges(text, chunkSpan ? [chunkSpan] : [])[0];
  if (!matched || (matched.start === 0 && matched.end === text.length)) return markedBlocks(text, ranges);
  return [
    ...markedBlocks(text, ranges, 0, matched.start),
    h("div", { class: "matched-chunk", title: "The chunk that matched the question; around it, its neighbours" },
      markedBlocks(text, ranges, matched.start, matched.end)),
    ...markedBlocks(text, ranges, matched.end),
  ];
}

/** About ``limit`` characters of the passage: around its first highlight, else from the start of the
 * chunk that matched, beginning at a line start when one is near (at its table's header when the
 * line is a table row not far into it), and cut at a word's end. */
export function snippetBlocks(text, ranges, chunkSpan, limit) {
  const first = cleanRanges(text, ranges)[0];
  const matched = cleanRanges(text, chunkSpan ? [chunkSpan] : [])[0];
  const anchor = first ? first.start : matched ? matched.start : 0;
  const lead = first ? 60 : 0;
  const line = text.lastIndexOf("\n", anchor - 1) + 1;
  const table = tableStart(text, line, limit);
  let from;
  if (table < line) from = table; // a table row: from the table's header
  else if (anchor - line <= lead) from = line;
  else from = Math.min(anchor, wordEnd(text, anchor - lead)); // mid-line: from a word's start
  let to = Math.min(text.length, Math.max(from + limit, first ? Math.min(first.end, from + 2 * limit) : 0));
  if (to < text.length) to = wordEnd(text, to);
  const blocks = markedBlocks(text, ranges, from, to);
  if (from > 0) atEdge(blocks, "start");
  if (to < text.length) atEdge(blocks, "end");
  return blocks;
}

/** Where the table holding the line at ``lineStart`` begins, when that is within ``reach``
 * characters (its header row comes first); else ``lineStart``. */
function tableStart(text, lineStart, reach) {
  const row = /^[ \t]*\|/;
  if (!row.test(text.slice(lineStart))) return lineStart;
  let start = lineStart;
  while (start > 0) {
    const previous = text.lastIndexOf("\n", start - 2) + 1;
    if (!row.test(text.slice(previous, start)) || lineStart - previous > reach) break;
    start = previous;
  }
  return start;
}

/** The index just past the word at ``at`` (or ``at`` itself at a space). */
function wordEnd(text, at) {
  const space = text.slice(at).search(/\s/);
  return space < 0 ? text.length : at + space;
}

/** "…" inside the first or last paragraph, so it reads as part of the text; beside any other block. */
function atEdge(blocks, edge) {
  const block = edge === "start" ? blocks[0] : blocks[blocks.length - 1];
  if (block && block.tagName === "P") {
    if (edge === "start") block.prepend("… ");
    else block.append(" …");
  } else if (edge === "start") {
    blocks.unshift(h("p", {}, "…"));
  } else {
    blocks.push(h("p", {}, "…"));
  }
}
