// DOM helpers. Text always goes in as text nodes: nothing from the server is ever parsed as HTML.

/** Create an element: h("a", {href: "#/x", class: "link", onclick: fn}, "text", otherNode). */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      element.className = value;
    } else if (name === "dataset") {
      Object.assign(element.dataset, value);
    } else if (name in element && typeof value !== "string") {
      element[name] = value;
    } else {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(element, ...children);
  return element;
}

export function append(parent, ...children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

export function replaceChildren(parent, ...children) {
  parent.replaceChildren();
  return append(parent, ...children);
}

export const $ = (selector, root = document) => root.querySelector(selector);

export function pagesLabel(pages, page) {
  const shown = pages && pages.length ? pages : page ? [page] : [];
  if (!shown.length) return "";
  if (shown.length === 1) return `page ${shown[0]}`;
  const contiguous = shown.every((page, index) => index === 0 || page === shown[index - 1] + 1);
  return contiguous ? `pages ${shown[0]}–${shown[shown.length - 1]}` : `pages ${shown.join(", ")}`;
}

export function formatDate(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

export function tagList(tags) {
  return (tags || []).map((tag) => h("span", { class: "tag" }, tag));
}

export function splitTags(raw) {
  return raw.split(",").map((tag) => tag.trim()).filter(Boolean);
}
