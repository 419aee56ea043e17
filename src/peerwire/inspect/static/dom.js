// Building the page from data: every text goes in as a text node, never as HTML, since
// what an agent sends (names, messages, artifacts) is not ours to trust.

export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "value") node.value = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function replace(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

export function json(value) {
  return JSON.stringify(value, null, 2);
}

export function time(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString([], { hour12: false }) +
    "." + String(Math.floor((seconds % 1) * 1000)).padStart(3, "0");
}

export async function copy(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "copied";
  } catch {
    // No clipboard (an insecure context, a headless browser): select the text instead.
    const area = h("textarea", { class: "copy-fallback", readonly: true }, text);
    button.after(area);
    area.select();
    button.textContent = "select and copy";
  }
}
