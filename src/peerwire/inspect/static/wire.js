// The raw wire: every exchange with the agent (request, headers, response, each SSE event;
// gRPC metadata and messages as JSON), copyable as curl for the HTTP bindings.

import { h, replace, json, time, copy } from "./dom.js";
import { del } from "./api.js";

function headerLines(headers) {
  return (headers || []).map(([k, v]) => `${k}: ${v}`).join("\n");
}

function pretty(text) {
  if (!text) return "";
  try { return json(JSON.parse(text)); } catch { return text; }
}

export class Wire {
  constructor({ onError }) {
    this.list = document.getElementById("wire");
    this.open = new Set();
    document.getElementById("wire-clear").addEventListener("click", async () => {
      try { await del("/api/wire"); this.list.replaceChildren(); } catch (e) { onError(e); }
    });
  }

  reset(exchanges) {
    this.list.replaceChildren();
    for (const exchange of exchanges || []) this.update(exchange);
  }

  update(x) {
    const old = this.list.querySelector(`[data-exchange-id="${x.id}"]`);
    const wasOpen = old ? old.querySelector("details").open : false;
    const item = this.render(x, wasOpen);
    if (old) old.replaceWith(item);
    else this.list.prepend(item);
    while (this.list.children.length > 200) this.list.lastChild.remove();
  }

  render(x, open) {
    const r = x.response;
    const status = r ? (r.status !== undefined ? `${r.status}` : "") : "…";
    const grpc = x.binding === "GRPC";
    const request = grpc
      ? h("div", {}, h("div", {}, "rpc ", h("code", {}, x.request.rpc), " to ", h("code", {}, x.request.target)),
        h("pre", { class: "raw metadata" }, headerLines(x.request.metadata)), h("pre", { class: "raw" }, json(x.request.message)))
      : h("div", {}, h("div", {}, h("code", {}, `${x.request.method} ${x.request.url}`)),
        h("pre", { class: "raw headers" }, headerLines(x.request.headers)),
        x.request.body ? h("pre", { class: "raw body" }, pretty(x.request.body)) : null);
    const response = !r ? h("p", { class: "muted" }, "waiting") : grpc
      ? h("div", {}, r.message !== undefined ? h("pre", { class: "raw" }, json(r.message)) : null)
      : h("div", {}, h("pre", { class: "raw headers" }, `HTTP ${r.status}\n` + headerLines(r.headers)),
        r.body ? h("pre", { class: "raw body" }, pretty(r.body)) : null);
    const events = x.events.length
      ? h("ol", { class: "sse-events" }, x.events.map((e) => h("li", { class: "sse-event" },
        h("span", { class: "muted" }, time(e.at), " "),
        h("pre", { class: "raw" }, grpc ? json(e.data) : (e.comment ? e.raw : (e.event ? `event: ${e.event}\n` : "") + pretty(e.data))))))
      : null;
    const curlButton = x.curl ? h("button", { type: "button", class: "copy-curl small", onclick: (ev) => copy(x.curl, ev.target) }, "copy as curl") : null;
    return h("li", { class: `exchange${x.error ? " failed" : ""}`, dataset: { exchangeId: x.id, binding: x.binding, operation: x.operation } },
      h("details", { open },
        h("summary", {},
          h("span", { class: "muted" }, time(x.started), " "),
          h("b", {}, x.binding), " ", h("span", { class: "operation" }, x.operation), " ",
          h("span", { class: "status" }, status),
          x.events.length ? h("span", { class: "muted" }, ` ${x.events.length} events`) : null,
          x.done ? "" : h("span", { class: "muted" }, " (open)"),
          x.error ? h("span", { class: "error" }, " ", x.error) : null),
        h("div", { class: "exchange-body" },
          h("h4", {}, "request ", curlButton), request,
          h("h4", {}, "response"), response,
          events ? [h("h4", {}, "events"), events] : null,
          x.droppedEvents ? h("p", { class: "muted" }, `${x.droppedEvents} later events not kept`) : null,
          x.curl ? h("pre", { class: "raw curl" }, x.curl) : null)));
  }
}
