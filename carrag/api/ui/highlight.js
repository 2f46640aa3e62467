// Character ranges of a passage shown as <mark>: the sentences an answer relies on
// (`sources[*].highlights`, [{start, end}] offsets into `sources[*].text`). Text stays text nodes.

import { h } from "./dom.js";

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

/** ``text[from:to]`` as nodes, the parts inside ``ranges`` as <mark class="highlight">. */
export function highlightedText(text, ranges, from = 0, to = text.length, tidy = (part) => part) {
  const nodes = [];
  let cursor = from;
  for (const range of cleanRanges(text, ranges)) {
    const start = Math.max(range.start, from);
    const end = Math.min(range.end, to);
    if (end <= start) continue;
    if (start > cursor) nodes.push(tidy(text.slice(cursor, start)));
    nodes.push(h("mark", { class: "highlight" }, tidy(text.slice(start, end))));
    cursor = end;
  }
  if (cursor < to) nodes.push(tidy(text.slice(cursor, to)));
  return nodes;
}

/** About ``limit`` characters of the passage, whitespace collapsed: from its start, or, when it has
 * highlights, around the first one, with it marked. */
export function highlightedSnippet(text, ranges, limit) {
  const first = cleanRanges(text, ranges)[0];
  const lead = 60;
  const from = first ? Math.max(0, first.start - lead) : 0;
  const to = Math.min(text.length, Math.max(from + limit, first ? Math.min(first.end, from + 2 * limit) : 0));
  const tidy = (part) => part.replace(/\s+/g, " ");
  const nodes = highlightedText(text, ranges, from, to, tidy);
  if (from > 0) nodes.unshift("…");
  if (to < text.length) nodes.push("…");
  return nodes;
}
