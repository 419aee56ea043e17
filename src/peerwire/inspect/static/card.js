// The agent card: identity, interfaces in order, capabilities, skills, security, the
// signature, caching headers and the problems found; and the credential form per scheme.

import { h, replace, json } from "./dom.js";
import { post, del } from "./api.js";

function row(label, ...value) {
  return h("tr", {}, h("th", {}, label), h("td", {}, ...value));
}

function requirementText(requirements) {
  if (!requirements || !requirements.length) return "none";
  return requirements
    .map((r) => Object.entries(r.schemes || {})
      .map(([name, scopes]) => (scopes.list && scopes.list.length ? `${name} [${scopes.list.join(", ")}]` : name))
      .join(" and ") || "anonymous")
    .join(" or ");
}

function schemeText(scheme) {
  if (scheme.apiKeySecurityScheme) {
    const s = scheme.apiKeySecurityScheme;
    return `API key in ${s.location} "${s.name}"`;
  }
  if (scheme.httpAuthSecurityScheme) return `HTTP ${scheme.httpAuthSecurityScheme.scheme}`;
  if (scheme.oauth2SecurityScheme) return `OAuth 2.0 (${Object.keys(scheme.oauth2SecurityScheme.flows || {}).join(", ")})`;
  if (scheme.openIdConnectSecurityScheme) return `OpenID Connect ${scheme.openIdConnectSecurityScheme.openIdConnectUrl}`;
  if (scheme.mtlsSecurityScheme) return "mutual TLS";
  return json(scheme);
}

export function renderCard(container, view) {
  if (!view) {
    replace(container, h("p", { class: "muted" }, "Type an agent's URL and load its card."));
    return;
  }
  const card = view.document || {};
  const caps = card.capabilities || {};
  const signature = h("span", { id: "signature", class: `badge sig-${view.signature}` }, view.signature);
  const signatures = (view.signatures || []).map((s) =>
    h("li", { class: "signature-key" }, `kid ${s.kid || "(none)"}, alg ${s.alg || "?"}`, s.jku ? `, jku ${s.jku}` : ""));
  const schemes = Object.entries(card.securitySchemes || {});
  const headers = Object.entries(view.http.headers || {}).map(([k, v]) => h("li", {}, h("code", {}, `${k}: ${v}`)));
  replace(
    container,
    h("h3", { id: "card-name" }, card.name || "(no name)", " ", h("span", { class: "muted" }, card.version ? `v${card.version}` : "")),
    h("p", { id: "card-description" }, card.description || ""),
    h("table", { class: "facts" },
      row("card", h("code", {}, view.location), ` HTTP ${view.http.status}`),
      card.provider ? row("provider", `${card.provider.organization} (${card.provider.url})`) : null,
      card.documentationUrl ? row("docs", card.documentationUrl) : null,
      row("modes", `in: ${(card.defaultInputModes || []).join(", ")}; out: ${(card.defaultOutputModes || []).join(", ")}`),
      row("capabilities",
        h("span", { id: "capabilities" },
          `streaming ${caps.streaming ? "yes" : "no"}, push notifications ${caps.pushNotifications ? "yes" : "no"}, ` +
          `extended card ${caps.extendedAgentCard ? "yes" : "no"}`,
          (caps.extensions || []).map((e) => h("div", {}, `extension ${e.uri}${e.required ? " (required)" : ""}`)))),
      row("security", requirementText(card.securityRequirements)),
      row("signature", signature, " ", view.signatureReason || "", h("ul", {}, signatures)),
      row("caching", h("ul", { id: "card-headers" }, headers)),
    ),
    h("h4", {}, "Interfaces (in the agent's order of preference)"),
    h("ol", { id: "interfaces" },
      (card.supportedInterfaces || []).map((i) =>
        h("li", {}, h("b", {}, i.protocolBinding), ` ${i.protocolVersion || "(no version)"} `, h("code", {}, i.url),
          i.tenant ? ` tenant ${i.tenant}` : ""))),
    h("h4", {}, "Skills"),
    h("ul", { id: "skills" },
      (card.skills || []).map((s) =>
        h("li", { class: "skill" },
          h("b", {}, s.name || s.id), h("span", { class: "muted" }, ` (${s.id})`), ` ${s.description || ""}`,
          (s.tags || []).length ? h("div", { class: "muted" }, "tags: " + s.tags.join(", ")) : null,
          (s.examples || []).length ? h("div", { class: "examples" }, "examples: ", s.examples.map((e, i) => [i ? ", " : "", h("q", {}, e)])) : null,
          (s.securityRequirements || []).length ? h("div", { class: "scopes" }, "requires: " + requirementText(s.securityRequirements)) : null))),
    // No heading over nothing: a card without schemes says so in the "security" row above.
    schemes.length ? h("h4", { id: "schemes-heading" }, "Security schemes") : null,
    schemes.length
      ? h("ul", { id: "schemes" }, schemes.map(([name, scheme]) => h("li", {}, h("b", {}, name), " ", schemeText(scheme))))
      : null,
    h("h4", {}, "Problems found"),
    view.problems.length
      ? h("ul", { id: "problems" }, view.problems.map((p) => h("li", { class: "problem" }, p)))
      : h("p", { id: "problems", class: "ok" }, "none"),
    h("details", {}, h("summary", {}, "the card as served"), h("pre", { class: "raw" }, json(card))),
  );
}

const FIELDS = {
  apiKey: [["key", "API key", "password"]],
  bearer: [["token", "Bearer token", "password"]],
  basic: [["username", "user name", "text"], ["password", "password", "password"]],
  oauth2: [["clientId", "client id", "text"], ["clientSecret", "client secret", "password"],
    ["tokenUrl", "token URL", "url"], ["scopes", "scopes (space-separated)", "text"]],
  mtls: [["certFile", "certificate file (PEM path)", "text"], ["keyFile", "key file (PEM path)", "text"],
    ["caFile", "CA file (PEM path, optional)", "text"], ["password", "key password (optional)", "password"]],
};

// A client certificate can be needed before there is a card to read: an agent that asks for
// one on every TLS connection refuses the card to a client without it.
const CLIENT_CERTIFICATE = { name: "client-certificate", kind: "mtls", where: "on every TLS connection (the card's too)" };

const isHttps = (url) => typeof url === "string" && /^https:/i.test(url.trim());

// Where a TLS connection is made: the card's location, or any interface the card lists.
function speaksTls(view) {
  const card = view.document || {};
  return isHttps(view.location) || (card.supportedInterfaces || []).some((i) => isHttps(i.url));
}

// typedUrl: the agent URL as typed, for the form shown before a card could be read.
export function renderCredentials(container, view, held, onChange, onError, typedUrl) {
  // A certificate form only where a certificate can be presented: on a TLS connection, and
  // once a card is read, only for the mTLS schemes it declares.
  const tls = view ? speaksTls(view) : isHttps(typedUrl);
  const schemes = (view ? view.schemes || [] : []).filter((s) => s.kind !== "mtls" || tls);
  const note = schemes.length ? null
    : h("p", { class: "muted" }, view ? "The card declares no security schemes." : "The card's security schemes appear here.");
  const heldCertificate = Boolean(held[CLIENT_CERTIFICATE.name]);
  if (((!view && tls) || heldCertificate) && !schemes.some((s) => s.kind === "mtls")) {
    schemes.push(CLIENT_CERTIFICATE);
  }
  replace(container, note, schemes.map((scheme) => {
    const fields = FIELDS[scheme.kind] || [];
    const inputs = {};
    const form = h("form", { class: "credential", dataset: { scheme: scheme.name }, autocomplete: "off" },
      h("div", {}, h("b", {}, scheme.name), ` ${scheme.where}`,
        held[scheme.name] ? h("span", { class: "badge held" }, `${held[scheme.name]} held`) : null),
      fields.map(([key, label, type]) => {
        const input = h("input", { type, name: key, placeholder: label, "aria-label": `${scheme.name} ${label}` });
        if (key === "tokenUrl" && scheme.tokenUrl) input.value = scheme.tokenUrl;
        if (key === "scopes" && scheme.scopes) input.value = scheme.scopes.join(" ");
        inputs[key] = input;
        return input;
      }),
      fields.length ? h("button", { type: "submit" }, "Use") : h("span", { class: "muted" }, " (not supported)"),
      held[scheme.name] ? h("button", { type: "button", class: "forget", onclick: async () => {
        try { onChange(await del(`/api/credentials/${encodeURIComponent(scheme.name)}`)); } catch (e) { onError(e); }
      } }, "Forget") : null);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const credential = { kind: scheme.kind };
      for (const [key, input] of Object.entries(inputs)) {
        credential[key] = key === "scopes" ? input.value.split(/\s+/).filter(Boolean) : input.value;
        if (input.type === "password") input.value = "";  // the page keeps no secret
      }
      try {
        onChange(await post("/api/credentials", { scheme: scheme.name, credential }));
      } catch (error) {
        onError(error);
      }
    });
    return form;
  }));
}
