// The agent card: identity, interfaces in order, capabilities, skills, security, the
// signature, caching headers and the problems found; and the credential form per scheme.

import { h, replace, json } from "./dom.js";
import { post, del } from "./api.js";

function row(label, ...value) {
  return h("tr", {}, h("th", {}, label), h("td", {}, ...value));
}

// A card is what a stranger sent: every value is read as the type the spec gives it, and a
// value of another type becomes a listed problem (and is left out), never an exception.
const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
const kindOf = (v) => (v === null ? "null" : Array.isArray(v) ? "a list" : typeof v === "object" ? "an object" : `a ${typeof v}`);

function reader(problems) {
  const wrong = (path, want, v) => {
    problems.push(`${path} is ${kindOf(v)}, not ${want}: not shown`);
  };
  const absent = (v) => v === undefined || v === null;
  return {
    obj: (v, path) => (absent(v) ? {} : isObject(v) ? v : (wrong(path, "an object", v), {})),
    list: (v, path) => (absent(v) ? [] : Array.isArray(v) ? v : (wrong(path, "a list", v), [])),
    text: (v, path) => (absent(v) ? "" : typeof v === "string" ? v : (wrong(path, "text", v), "")),
    flag: (v, path) => (absent(v) ? false : typeof v === "boolean" ? v : (wrong(path, "true or false", v), false)),
    // A list of objects (or of text): its entries of another type are problems too.
    objects(v, path) {
      return this.list(v, path).filter((e, i) => isObject(e) || (wrong(`${path}[${i}]`, "an object", e), false));
    },
    texts(v, path) {
      return this.list(v, path).filter((e, i) => typeof e === "string" || (wrong(`${path}[${i}]`, "text", e), false));
    },
  };
}

// The card's interfaces as objects, whatever the card holds (for the binding choice too).
export function interfacesOf(view) {
  const card = view && isObject(view.document) ? view.document : {};
  return Array.isArray(card.supportedInterfaces) ? card.supportedInterfaces.filter(isObject) : [];
}

function requirementText(r, requirements, path) {
  const list = r.objects(requirements, path);
  if (!list.length) return "none";
  return list
    .map((req, i) => Object.entries(r.obj(req.schemes, `${path}[${i}].schemes`))
      .map(([name, scopes]) => {
        const listed = r.texts(isObject(scopes) ? scopes.list : undefined, `${path}[${i}].schemes.${name}.list`);
        return listed.length ? `${name} [${listed.join(", ")}]` : name;
      })
      .join(" and ") || "anonymous")
    .join(" or ");
}

function schemeText(r, scheme, path) {
  if (!isObject(scheme)) {
    r.obj(scheme, path);
    return "";
  }
  if (scheme.apiKeySecurityScheme) {
    const s = r.obj(scheme.apiKeySecurityScheme, `${path}.apiKeySecurityScheme`);
    return `API key in ${r.text(s.location, `${path}.apiKeySecurityScheme.location`)} "${r.text(s.name, `${path}.apiKeySecurityScheme.name`)}"`;
  }
  if (scheme.httpAuthSecurityScheme) {
    const s = r.obj(scheme.httpAuthSecurityScheme, `${path}.httpAuthSecurityScheme`);
    return `HTTP ${r.text(s.scheme, `${path}.httpAuthSecurityScheme.scheme`)}`;
  }
  if (scheme.oauth2SecurityScheme) {
    const s = r.obj(scheme.oauth2SecurityScheme, `${path}.oauth2SecurityScheme`);
    return `OAuth 2.0 (${Object.keys(r.obj(s.flows, `${path}.oauth2SecurityScheme.flows`)).join(", ")})`;
  }
  if (scheme.openIdConnectSecurityScheme) {
    const s = r.obj(scheme.openIdConnectSecurityScheme, `${path}.openIdConnectSecurityScheme`);
    return `OpenID Connect ${r.text(s.openIdConnectUrl, `${path}.openIdConnectSecurityScheme.openIdConnectUrl`)}`;
  }
  if (scheme.mtlsSecurityScheme) return "mutual TLS";
  return json(scheme);
}

export function renderCard(container, view) {
  if (!view) {
    replace(container, h("p", { class: "muted" }, "Type an agent's URL and load its card."));
    return;
  }
  try {
    renderCardAs(container, view);
  } catch (error) {
    // A shape this page did not foresee: still a listed problem, with the card as served.
    replace(container,
      h("h4", {}, "Problems found"),
      h("ul", { id: "problems" }, h("li", { class: "problem" }, `the page could not show this card: ${error.message}`)),
      h("details", {}, h("summary", {}, "the card as served"), h("pre", { class: "raw" }, json(view.document))));
  }
}

function renderCardAs(container, view) {
  const problems = Array.isArray(view.problems) ? view.problems.map(String) : [];
  const r = reader(problems);
  const card = r.obj(view.document, "the card");
  const caps = r.obj(card.capabilities, "capabilities");
  const provider = r.obj(card.provider, "provider");
  const httpInfo = r.obj(view.http, "http");
  const signature = h("span", { id: "signature", class: `badge sig-${String(view.signature)}` }, String(view.signature));
  const signatures = r.objects(view.signatures, "signatures").map((s) =>
    h("li", { class: "signature-key" }, `kid ${s.kid || "(none)"}, alg ${s.alg || "?"}`, s.jku ? `, jku ${s.jku}` : ""));
  const schemes = Object.entries(r.obj(card.securitySchemes, "securitySchemes"));
  const headers = Object.entries(r.obj(httpInfo.headers, "headers")).map(([k, v]) => h("li", {}, h("code", {}, `${k}: ${v}`)));
  const version = r.text(card.version, "version");
  const modes = (name) => r.texts(card[name], name).join(", ");
  const extensions = r.objects(caps.extensions, "capabilities.extensions");
  const interfaces = r.objects(card.supportedInterfaces, "supportedInterfaces");
  const skills = r.objects(card.skills, "skills");
  const security = requirementText(r, card.securityRequirements, "securityRequirements");
  const schemeItems = schemes.map(([name, scheme]) =>
    h("li", {}, h("b", {}, name), " ", schemeText(r, scheme, `securitySchemes.${name}`)));
  const skillItems = skills.map((s, n) => {
    const at = `skills[${n}]`;
    const tags = r.texts(s.tags, `${at}.tags`);
    const examples = r.texts(s.examples, `${at}.examples`);
    const required = requirementText(r, s.securityRequirements, `${at}.securityRequirements`);
    return h("li", { class: "skill" },
      h("b", {}, r.text(s.name, `${at}.name`) || r.text(s.id, `${at}.id`)), h("span", { class: "muted" }, ` (${r.text(s.id, `${at}.id`)})`),
      ` ${r.text(s.description, `${at}.description`)}`,
      tags.length ? h("div", { class: "muted" }, "tags: " + tags.join(", ")) : null,
      examples.length ? h("div", { class: "examples" }, "examples: ", examples.map((e, i) => [i ? ", " : "", h("q", {}, e)])) : null,
      required !== "none" ? h("div", { class: "scopes" }, "requires: " + required) : null);
  });
  const interfaceItems = interfaces.map((i, n) => {
    const at = `supportedInterfaces[${n}]`;
    const tenant = r.text(i.tenant, `${at}.tenant`);
    return h("li", {}, h("b", {}, r.text(i.protocolBinding, `${at}.protocolBinding`)),
      ` ${r.text(i.protocolVersion, `${at}.protocolVersion`) || "(no version)"} `, h("code", {}, r.text(i.url, `${at}.url`)),
      tenant ? ` tenant ${tenant}` : "");
  });
  const name = r.text(card.name, "name");
  const description = r.text(card.description, "description");
  const docs = r.text(card.documentationUrl, "documentationUrl");
  const capabilities = `streaming ${r.flag(caps.streaming, "capabilities.streaming") ? "yes" : "no"}, ` +
    `push notifications ${r.flag(caps.pushNotifications, "capabilities.pushNotifications") ? "yes" : "no"}, ` +
    `extended card ${r.flag(caps.extendedAgentCard, "capabilities.extendedAgentCard") ? "yes" : "no"}`;
  const providerText = card.provider
    ? `${r.text(provider.organization, "provider.organization")} (${r.text(provider.url, "provider.url")})` : "";
  const modesText = `in: ${modes("defaultInputModes")}; out: ${modes("defaultOutputModes")}`;
  const extensionItems = extensions.map((e, n) =>
    h("div", {}, `extension ${r.text(e.uri, `capabilities.extensions[${n}].uri`)}${e.required === true ? " (required)" : ""}`));
  replace(
    container,
    h("h3", { id: "card-name" }, name || "(no name)", " ", h("span", { class: "muted" }, version ? `v${version}` : "")),
    h("p", { id: "card-description" }, description),
    h("table", { class: "facts" },
      row("card", h("code", {}, String(view.location)), ` HTTP ${String(httpInfo.status)}`),
      providerText ? row("provider", providerText) : null,
      docs ? row("docs", docs) : null,
      row("modes", modesText),
      row("capabilities", h("span", { id: "capabilities" }, capabilities, extensionItems)),
      row("security", security),
      row("signature", signature, " ", String(view.signatureReason || ""), h("ul", {}, signatures)),
      row("caching", h("ul", { id: "card-headers" }, headers)),
    ),
    h("h4", {}, "Interfaces (in the agent's order of preference)"),
    h("ol", { id: "interfaces" }, interfaceItems),
    h("h4", {}, "Skills"),
    h("ul", { id: "skills" }, skillItems),
    // No heading over nothing: a card without schemes says so in the "security" row above.
    schemes.length ? h("h4", { id: "schemes-heading" }, "Security schemes") : null,
    schemes.length ? h("ul", { id: "schemes" }, schemeItems) : null,
    h("h4", {}, "Problems found"),
    problems.length
      ? h("ul", { id: "problems" }, problems.map((p) => h("li", { class: "problem" }, p)))
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
  return isHttps(view.location) || interfacesOf(view).some((i) => isHttps(i.url));
}

// typedUrl: the agent URL as typed, for the form shown before a card could be read.
export function renderCredentials(container, view, held, onChange, onError, typedUrl) {
  // A certificate form only where a certificate can be presented: on a TLS connection, and
  // once a card is read, only for the mTLS schemes it declares.
  const tls = view ? speaksTls(view) : isHttps(typedUrl);
  const schemes = (view && Array.isArray(view.schemes) ? view.schemes : []).filter((s) => s.kind !== "mtls" || tls);
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
        // For the agent shown, or the one typed when no card could be read yet.
        const url = view && typeof view.url === "string" ? view.url : typedUrl;
        onChange(await post("/api/credentials", { scheme: scheme.name, credential, url }));
      } catch (error) {
        onError(error);
      }
    });
    return form;
  }));
}
