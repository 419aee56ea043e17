// The self-check: the backend probes the agent; each finding is shown with its verdict.

import { h, replace } from "./dom.js";
import { post } from "./api.js";

export function setupSelfCheck(onError) {
  const button = document.getElementById("selfcheck-run");
  const out = document.getElementById("selfcheck");
  button.addEventListener("click", async () => {
    button.disabled = true;
    replace(out, h("p", { class: "muted" }, "checking…"));
    try {
      renderReport(out, await post("/api/selfcheck"));
    } catch (error) {
      replace(out);
      onError(error);
    } finally {
      button.disabled = false;
    }
  });
}

export function renderReport(out, report) {
  const findings = report.findings || [];
  const failed = findings.filter((f) => !f.ok);
  replace(out,
    h("p", { id: "selfcheck-summary", class: report.ok ? "ok" : "error" },
      report.ok ? "Nothing found that would break a client." : `${failed.length} of ${findings.length} checks found a fault.`),
    h("ul", { class: "findings" }, findings.map((f) =>
      h("li", { class: `finding ${f.ok ? "pass" : "fail"} severity-${f.severity}`, dataset: { check: f.check } },
        h("span", { class: "badge" }, f.ok ? "ok" : f.severity), " ",
        h("code", {}, f.check), " ", h("b", {}, f.title),
        f.detail ? h("div", { class: "detail" }, f.detail) : null))));
}
