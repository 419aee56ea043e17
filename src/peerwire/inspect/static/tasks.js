// ListTasks with its filters, opening a task, and a task's push notification configs.

import { h, replace, json } from "./dom.js";
import { get, post, del, query, taskPath } from "./api.js";

export class Tasks {
  constructor({ binding, onError }) {
    this.binding = binding;
    this.onError = onError;
    this.list = document.getElementById("tasks-list");
    this.push = document.getElementById("push-configs");
    document.getElementById("tasks-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.refresh();
    });
    document.getElementById("open-task-form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.open(document.getElementById("open-task-id").value.trim());
    });
  }

  async refresh() {
    const params = {
      binding: this.binding(),
      contextId: document.getElementById("tasks-context").value.trim(),
      state: document.getElementById("tasks-state").value,
      page: document.getElementById("tasks-page").value,
      pageSize: document.getElementById("tasks-size").value,
    };
    try {
      const answer = await get("/api/tasks" + query(params));
      this.render(answer);
    } catch (error) {
      this.onError(error);
    }
  }

  render(answer) {
    const pageInput = document.getElementById("tasks-page");
    const goto = (page) => { pageInput.value = page; this.refresh(); };
    replace(this.list,
      answer.tasks.length
        ? h("table", { class: "task-rows" },
          h("tr", {}, h("th", {}, "task"), h("th", {}, "context"), h("th", {}, "state"), h("th", {}, "status time"), h("th", {}, "")),
          answer.tasks.map((t) => h("tr", { class: "task-row", dataset: { taskId: t.id } },
            h("td", {}, h("code", {}, t.id)), h("td", {}, h("code", {}, t.contextId)),
            h("td", {}, h("span", { class: `badge state-${t.state}` }, t.state)), h("td", {}, t.timestamp),
            h("td", {}, h("button", { type: "button", class: "open", onclick: () => this.open(t.id) }, "Open"),
              h("button", { type: "button", class: "push", onclick: () => this.showPush(t.id) }, "Push configs")))))
        : h("p", { class: "muted", id: "no-tasks" }, "no tasks on this page"),
      h("div", { class: "pager" },
        answer.page > 1 ? h("button", { type: "button", onclick: () => goto(answer.page - 1) }, "previous page") : null,
        h("span", {}, ` page ${answer.page} `),
        answer.more ? h("button", { type: "button", class: "next-page", onclick: () => goto(answer.page + 1) }, "next page") : null));
  }

  async open(taskId) {
    if (!taskId) return;
    try {
      await get(taskPath(taskId) + query({ binding: this.binding() }));
      // The timeline arrives on the event stream; bring it into view.
      const article = document.querySelector(`article[data-task-id="${CSS.escape(taskId)}"]`);
      if (article) article.scrollIntoView({ block: "nearest" });
    } catch (error) {
      this.onError(error);
    }
  }

  async showPush(taskId) {
    const binding = this.binding();
    let configs = [];
    try {
      configs = (await get(taskPath(taskId, "push-configs") + query({ binding }))).configs;
    } catch (error) {
      this.onError(error);
    }
    const url = h("input", { type: "url", class: "push-url", placeholder: "webhook URL", "aria-label": "webhook URL" });
    const token = h("input", { type: "text", class: "push-token", placeholder: "token (optional)", "aria-label": "token" });
    const id = h("input", { type: "text", class: "push-id", placeholder: "config id (optional)", "aria-label": "config id" });
    const detail = h("pre", { class: "raw push-detail" });
    const form = h("form", { class: "push-create", autocomplete: "off" }, url, token, id, h("button", { type: "submit" }, "Create"));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        await post(taskPath(taskId, "push-configs"), { binding, url: url.value, token: token.value, id: id.value });
        this.showPush(taskId);
      } catch (error) {
        this.onError(error);
      }
    });
    replace(this.push,
      h("h3", {}, "Push configs of ", h("code", {}, taskId)),
      configs.length
        ? h("ul", { class: "push-list" }, configs.map((c) => h("li", { class: "push-config", dataset: { configId: c.id } },
          h("code", {}, c.id), ` ${c.url} `,
          h("button", { type: "button", class: "push-get", onclick: async () => {
            try { detail.textContent = json(await get(taskPath(taskId, "push-configs", c.id) + query({ binding }))); } catch (e) { this.onError(e); }
          } }, "Get"),
          h("button", { type: "button", class: "push-delete", onclick: async () => {
            try { await del(taskPath(taskId, "push-configs", c.id) + query({ binding })); this.showPush(taskId); } catch (e) { this.onError(e); }
          } }, "Delete"))))
        : h("p", { class: "muted push-none" }, "no push configs"),
      form, detail);
  }
}
