// Talking to the Carrag API: the stored API key, JSON requests, uploads with progress, and the
// Server-Sent Events of POST /query/stream (read with fetch, since EventSource cannot POST).

const KEY_STORAGE = "carrag.apiKey";

export function apiKey() {
  return localStorage.getItem(KEY_STORAGE) || "";
}

export function setApiKey(key) {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
}

export class ApiError extends Error {
  /** ``sentKey``: the API key the failed request carried ("" for none); a 401 for a key since replaced
   * is an answer to an old request, not about the key in use. */
  constructor(status, detail, sentKey = "") {
    super(detail);
    this.status = status;
    this.detail = detail;
    this.sentKey = sentKey;
  }
}

const listeners = new Set();
/** Called with every ApiError (the app shows a banner for 401s). */
export function onApiError(listener) {
  listeners.add(listener);
}

function authHeaders(key, extra = {}) {
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

function detailOf(status, body) {
  let detail = body && body.detail;
  if (Array.isArray(detail)) {
    detail = detail.map((item) => `${(item.loc || []).slice(1).join(".")}: ${item.msg}`).join("; ");
  }
  return detail || `HTTP ${status}`;
}

function fail(status, body, sentKey) {
  const error = new ApiError(status, detailOf(status, body), sentKey);
  listeners.forEach((listener) => listener(error));
  return error;
}

async function readJson(response) {
  const text = await response.text();
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return { detail: text.slice(0, 300) };
  }
}

/** A JSON request. Resolves to {status, body}; rejects with ApiError on 4xx/5xx or a network failure. */
export async function request(path, { method = "GET", json, form, signal } = {}) {
  const key = apiKey();
  const init = { method, headers: authHeaders(key), signal };
  if (json !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(json);
  } else if (form) {
    init.body = form;
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw fail(0, { detail: `The server cannot be reached (${error.message}).` }, key);
  }
  const body = await readJson(response);
  if (!response.ok) throw fail(response.status, body, key);
  return { status: response.status, body };
}

export async function getJson(path, options) {
  return (await request(path, options)).body;
}

/** GET a file: resolves to {blob, filename, headers} (the name from Content-Disposition); rejects with ApiError. */
export async function fetchBlob(path) {
  const key = apiKey();
  let response;
  try {
    response = await fetch(path, { headers: authHeaders(key) });
  } catch (error) {
    throw fail(0, { detail: `The server cannot be reached (${error.message}).` }, key);
  }
  if (!response.ok) throw fail(response.status, await readJson(response), key);
  const disposition = response.headers.get("Content-Disposition") || "";
  const encoded = /filename\*=UTF-8''([^;]+)/i.exec(disposition);
  const plain = /filename="([^"]*)"/i.exec(disposition);
  const filename = encoded ? decodeURIComponent(encoded[1]) : plain ? plain[1] : "";
  return { blob: await response.blob(), filename, headers: response.headers };
}

/** POST a multipart form with upload progress (fetch has none). Resolves to {status, body}. */
export function upload(path, form, onProgress) {
  return new Promise((resolve, reject) => {
    const key = apiKey();
    const xhr = new XMLHttpRequest();
    xhr.open("POST", path);
    for (const [name, value] of Object.entries(authHeaders(key))) xhr.setRequestHeader(name, value);
    xhr.upload.addEventListener("progress", (event) => {
      if (event.lengthComputable) onProgress(event.loaded, event.total);
    });
    xhr.addEventListener("load", () => {
      let body = null;
      try {
        body = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        body = { detail: xhr.responseText.slice(0, 300) };
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve({ status: xhr.status, body });
      else reject(fail(xhr.status, body, key));
    });
    xhr.addEventListener("error", () => reject(fail(0, { detail: "The upload failed: the server cannot be reached." }, key)));
    xhr.send(form);
  });
}

/** POST JSON and yield the Server-Sent Events of the response as {event, data} (data parsed as JSON). */
export async function* streamEvents(path, json, signal) {
  const key = apiKey();
  let response;
  try {
    response = await fetch(path, {
      method: "POST",
      headers: authHeaders(key, { "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify(json),
      signal,
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw fail(0, { detail: `The server cannot be reached (${error.message}).` }, key);
  }
  if (!response.ok) throw fail(response.status, await readJson(response), key);

  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value.replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = parseEvent(block);
        if (event) yield event;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function parseEvent(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue; // comments are keep-alive pings
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return null;
  const text = data.join("\n");
  try {
    return { event, data: JSON.parse(text) };
  } catch {
    return { event, data: text };
  }
}
