// The page: loads the state, listens to the backend's event stream, wires the panels.

import { h, replace } from "./dom.js";
import { get, post, eventsUrl } from "./api.js";
import { renderCard, renderCredentials, interfacesOf } from "./card.js";
import { Conversation } from "./conversation.js";
import { Tasks } from "./tasks.js";
import { Wire } from "./wire.js";
import { setupSelfCheck } from "./selfcheck.js";

const banner = document.getElementById("error-banner");
const bindingSelect = document.getElementById("binding");
const binding = () => bindingSelect.value;
let cardView = null;
let held = {};

function showError(error) {
  replace(banner, h("span", { class: "error-text" }, error.message || String(error)),
    h("button", { type: "button", class: "small", onclick: () => { banner.hidden = true; } }, "dismiss"));
  banner.hidden = false;
}

function clearError() {
  banner.hidden = true;
}

const conversation = new Conversation({ binding, onError: showError, onPushConfigs: (id) => tasks.showPush(id) });
const tasks = new Tasks({ binding, onError: showError });
const wire = new Wire({ onError: showError });
setupSelfCheck(showError);

function showCard(view) {
  cardView = view;
  renderCard(document.getElementById("card"), view);
  showCredentials();
  // Only the bindings the card offers can be chosen (all of them before a card is loaded).
  const offered = new Set(interfacesOf(view).map((i) => i.protocolBinding));
  for (const option of bindingSelect.options) {
    option.disabled = offered.size > 0 && !offered.has(option.value);
  }
  if (bindingSelect.selectedOptions[0] && bindingSelect.selectedOptions[0].disabled) {
    const first = [...bindingSelect.options].find((o) => !o.disabled);
    if (first) bindingSelect.value = first.value;
  }
}

const agentUrl = document.getElementById("agent-url");

function showCredentials() {
  renderCredentials(document.getElementById("credentials"), cardView, held,
    (summary) => { held = summary; clearError(); showCredentials(); }, showError, agentUrl.value.trim());
}

// Before a card is read, the client-certificate form follows the URL's scheme as it is typed.
agentUrl.addEventListener("input", () => { if (!cardView) showCredentials(); });

document.getElementById("connect-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const url = agentUrl.value.trim();
  const keys = document.getElementById("pinned-keys").value;
  const button = document.getElementById("connect");
  button.disabled = true;
  try {
    showCard(await post("/api/connect", { url, keys }));
    clearError();
  } catch (error) {
    showCard(null);
    showError(error);
  } finally {
    button.disabled = false;
  }
});

async function loadState() {
  const state = await get("/api/state");
  if (state.url) agentUrl.value = state.url;
  held = state.credentials || {};
  showCard(state.card);
  conversation.reset(state);
  wire.reset(state.exchanges);
}

function listen() {
  const live = document.getElementById("live");
  const events = new EventSource(eventsUrl());
  events.onopen = () => {
    live.textContent = "live";
    live.classList.add("on");
    // Whatever happened while the stream was down is in the state.
    loadState().catch(showError);
  };
  events.onerror = () => {
    live.textContent = "reconnecting";
    live.classList.remove("on");
  };
  events.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (event.type === "task") conversation.updateTask(event.task);
    else if (event.type === "run") conversation.updateRun(event.run);
    else if (event.type === "exchange") wire.update(event.exchange);
    else if (event.type === "credentials") { held = event.credentials; showCredentials(); }
  };
}

listen();
