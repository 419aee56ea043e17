// The conversation: the composer, the runs (each message sent, each resubscription) and a
// timeline per task: status changes, artifact chunks assembling, an INPUT_REQUIRED question
// with its reply box, cancel and resubscribe; and, when the inspector reads the agent's
// delegation ledger, the task's delegations to other agents.

import { h, replace, time } from "./dom.js";
import { get, post, query, taskPath } from "./api.js";

// protocol/states.py's TERMINAL and INTERRUPTED, as the page names states (a test compares).
const FINAL = new Set(["COMPLETED", "FAILED", "CANCELED", "REJECTED"]);
const WAITING = new Set(["INPUT_REQUIRED", "AUTH_REQUIRED"]);

export class Conversation {
  constructor({ binding, onError, onPushConfigs }) {
    this.binding = binding; // () => the binding chosen on the page
    this.onError = onError;
    this.onPushConfigs = onPushConfigs;
    this.runs = new Map();
    this.tasks = new Map();
    this.ledger = false; // whether the backend reads the agent's delegation ledger
    this.delegations = new Map(); // task id -> the ledger's view, once asked for
    this.runList = document.getElementById("runs");
    this.timelines = document.getElementById("timelines");
    document.getElementById("composer").addEventListener("submit", (e) => {
      e.preventDefault();
      this.sendFromComposer();
    });
  }

  reset(state) {
    this.runs.clear();
    this.tasks.clear();
    this.ledger = Boolean(state.ledger);
    this.runList.replaceChildren();
    this.timelines.replaceChildren();
    for (const run of state.runs || []) this.updateRun(run);
    for (const task of state.tasks || []) this.updateTask(task);
  }

  async sendFromComposer() {
    const text = document.getElementById("send-text").value;
    const body = {
      binding: this.binding(),
      text,
      data: document.getElementById("send-data").value,
      skill: document.getElementById("send-skill").value,
      taskId: document.getElementById("send-task").value,
      contextId: document.getElementById("send-context").value,
      streaming: document.getElementById("streaming").checked,
    };
    const fileInput = document.getElementById("send-file");
    if (fileInput.files.length) {
      const file = fileInput.files[0];
      body.file = { name: file.name, type: file.type, content: await base64(file) };
    }
    await this.send(body);
  }

  async send(body) {
    try {
      this.updateRun(await post("/api/send", body));
    } catch (error) {
      this.onError(error);
    }
  }

  updateRun(run) {
    this.runs.set(run.id, run);
    const item = h("li", { class: `run run-${run.status}`, dataset: { runId: run.id } },
      h("span", { class: "muted" }, `${time(run.started)} #${run.id} ${run.binding} ${run.mode} `),
      h("span", { class: "sent" }, run.sent),
      run.taskId ? h("span", { class: "muted" }, ` → task ${run.taskId}`) : null,
      run.reply ? h("div", { class: "reply-message" }, "agent: ", run.reply) : null,
      run.error ? h("div", { class: "error run-error" }, run.error) : null);
    const old = this.runList.querySelector(`[data-run-id="${run.id}"]`);
    if (old) old.replaceWith(item);
    else this.runList.prepend(item);
  }

  updateTask(task) {
    this.tasks.set(task.id, task);
    const old = this.timelines.querySelector(`article[data-task-id="${CSS.escape(task.id)}"]`);
    const typed = old ? old.querySelector(".reply-text") : null;
    const article = this.renderTask(task, typed ? typed.value : "");
    if (old) old.replaceWith(article);
    else this.agentGroup(task).querySelector(".agent-task-list").prepend(article);
  }

  // The tasks of each agent the page inspected, under that agent (newest agent first).
  agentGroup(task) {
    const agent = task.agent || "";
    const found = [...this.timelines.children].find((g) => g.dataset.agent === agent);
    if (found) return found;
    const group = h("section", { class: "agent-tasks", dataset: { agent } },
      h("h3", { class: "agent-heading" }, task.agentName || "agent", " ",
        h("code", { class: "muted" }, agent || "(no agent)")),
      h("div", { class: "agent-task-list" }));
    this.timelines.prepend(group);
    return group;
  }

  renderTask(task, typed) {
    const binding = () => this.binding();
    const action = (label, cls, run) => h("button", { type: "button", class: cls, onclick: run }, label);
    const article = h("article", { class: "task", dataset: { taskId: task.id, state: task.state } },
      h("header", {},
        "task ", h("code", { class: "task-id" }, task.id),
        task.contextId ? h("span", { class: "muted" }, " context ", h("code", { class: "context-id" }, task.contextId)) : null,
        " ", h("span", { class: `state badge state-${task.state}` }, task.state),
        h("span", { class: "muted" }, ` over ${task.binding}`),
        h("span", { class: "actions" },
          action("Cancel", "cancel", () => this.act(post(taskPath(task.id, "cancel"), { binding: binding() }))),
          action("Resubscribe", "resubscribe", () => this.act(post(taskPath(task.id, "subscribe"), { binding: binding() }))),
          action("Refresh", "refresh", () => this.act(get(taskPath(task.id) + query({ binding: binding() })))),
          action("Push configs", "push", () => this.onPushConfigs(task.id)),
          this.ledger ? action("Delegations", "delegations", () => this.act(this.showDelegations(task.id))) : null)),
      task.dropped ? h("p", { class: "muted" }, `${task.dropped} older entries not shown`) : null,
      h("ol", { class: "timeline" }, task.entries.map(entryItem)),
      task.artifacts.length
        ? h("div", { class: "artifacts" }, task.artifacts.map((a) =>
          h("div", { class: "artifact", dataset: { artifactId: a.artifactId } },
            h("b", {}, a.name || a.artifactId),
            h("span", { class: "muted" }, ` ${a.chunks} chunk${a.chunks === 1 ? "" : "s"}${a.complete ? ", complete" : ""}`),
            h("pre", { class: "artifact-text" }, a.text))))
        : null,
      WAITING.has(task.state) ? this.replyBox(task, typed) : null,
      this.delegations.has(task.id) ? delegationsView(this.delegations.get(task.id)) : null);
    return article;
  }

  // What the agent's ledger holds for the task, shown under its timeline (again on each
  // click: the ledger moves on as remote tasks end and compensations run).
  async showDelegations(taskId) {
    this.delegations.set(taskId, await get(taskPath(taskId, "delegations")));
    const task = this.tasks.get(taskId);
    if (task) this.updateTask(task);
  }

  replyBox(task, typed) {
    const input = h("input", { class: "reply-text", type: "text", placeholder: "your answer", value: typed, "aria-label": "answer" });
    const form = h("form", { class: "reply", autocomplete: "off" },
      h("p", { class: "question" }, task.question || "(the agent asks for input)"),
      input, h("button", { type: "submit", class: "reply-send" }, "Reply"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.send({
        binding: this.binding(),
        text: input.value,
        taskId: task.id,
        contextId: task.contextId,
        streaming: document.getElementById("streaming").checked,
      });
    });
    return form;
  }

  async act(promise) {
    try {
      await promise;
    } catch (error) {
      this.onError(error);
    }
  }
}

function entryItem(entry) {
  const label = { sent: "sent", status: "status", snapshot: "task", artifact: "chunk", closed: "closed", info: "", error: "error" }[entry.kind] ?? entry.kind;
  let text = entry.text;
  if (entry.kind === "artifact") text = `${entry.name || entry.artifactId}${entry.append ? " +" : ""}: ${entry.text}${entry.lastChunk ? " (last chunk)" : ""}`;
  return h("li", { class: `entry kind-${entry.kind}${FINAL.has(entry.state) ? " final" : ""}` },
    h("span", { class: "muted" }, time(entry.at), " "),
    label ? h("span", { class: "kind" }, label, " ") : null,
    entry.state ? h("span", { class: `badge state-${entry.state}` }, entry.state) : null,
    text ? h("span", { class: "entry-text" }, " ", text) : null);
}

// A task's delegations, per remote agent: each remote task (a step or a compensation) with its
// ledger status and the remote state last seen; a step links to its undo, an undo names its
// step.
function delegationsView(view) {
  const entry = (e) => h("li", { class: `delegation kind-${e.kind}`, id: `delegation-${e.id}`, dataset: { key: e.key, status: e.status } },
    h("code", { class: "delegation-key" }, e.key), " ",
    h("span", { class: "muted" }, e.kind === "compensation" ? "undo" : "step"), " ",
    h("span", { class: `badge delegation-status status-${e.status}` }, e.status),
    e.remoteTaskId ? [" remote task ", h("code", { class: "remote-task" }, e.remoteTaskId)] : null,
    e.remoteState ? [" ", h("span", { class: `badge remote-state state-${e.remoteState}` }, e.remoteState)] : null,
    e.kind === "compensation" && e.compensates
      ? [" ", h("a", { class: "undoes", href: `#${stepAnchor(view, e.compensates)}` }, `undoes ${e.compensates}`)]
      : null,
    e.runs ? h("span", { class: "muted" }, ` (${e.runs} failed run${e.runs === 1 ? "" : "s"})`) : null,
    (e.compensations || []).length
      ? h("div", { class: "compensations" }, "undo: ", e.compensations.map((c, i) => [i ? ", " : "",
        h("a", { class: "compensation-link", href: `#delegation-${c.id}` }, c.key), ` ${c.status}`]))
      : null,
    e.reason ? h("div", { class: "muted delegation-reason" }, e.reason) : null);
  return h("section", { class: "delegations", dataset: { count: view.count } },
    h("h4", {}, `Delegations (${view.count}`, view.open ? `, ${view.open} open` : "", ")",
      view.ended ? h("span", { class: "muted delegations-ended" }, ` the ledger recorded the end: ${view.ended.state}`) : null),
    view.count
      ? view.agents.map((group) => h("div", { class: "delegation-agent", dataset: { agent: group.agent } },
        h("div", {}, "agent ", h("code", { class: "agent-url" }, group.agent),
          h("span", { class: "muted" }, ` ${group.entries.length} remote task${group.entries.length === 1 ? "" : "s"}`)),
        h("ul", {}, group.entries.map(entry))))
      : h("p", { class: "muted no-delegations" }, "The ledger holds no delegation of this task."));
}

function stepAnchor(view, key) {
  for (const group of view.agents) {
    const step = group.entries.find((e) => e.kind === "step" && e.key === key);
    if (step) return `delegation-${step.id}`;
  }
  return "";
}

function base64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(",", 2)[1] || "");
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}
