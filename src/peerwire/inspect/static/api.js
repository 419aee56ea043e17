// The one way the page talks: to the inspector's own backend, never to the agent.

export class ApiError extends Error {}

// The launch token (as Jupyter's): the URL the inspector printed carries it once; the page
// keeps it for this tab and sends it on every call, which no page of another origin can.
export const TOKEN_HEADER = "X-Peerwire-Token";
export const token = (() => {
  const url = new URL(window.location.href);
  const given = url.searchParams.get("token");
  if (given) {
    sessionStorage.setItem("peerwire-token", given);
    url.searchParams.delete("token");
    history.replaceState(null, "", url.pathname + url.search + url.hash);
  }
  return given || sessionStorage.getItem("peerwire-token") || "";
})();

// EventSource cannot send headers: the stream's URL carries the token instead.
export const eventsUrl = () => "/api/events?" + new URLSearchParams({ token }).toString();

export async function call(method, path, body) {
  const options = { method, headers: { [TOKEN_HEADER]: token } };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, options);
  } catch (error) {
    throw new ApiError(`the inspector's backend cannot be reached (${error.message})`);
  }
  let answer = null;
  try {
    answer = await response.json();
  } catch {
    throw new ApiError(`the backend answered HTTP ${response.status} without JSON`);
  }
  if (!response.ok) {
    throw new ApiError(answer && answer.error ? answer.error : `HTTP ${response.status}`);
  }
  return answer;
}

export const get = (path) => call("GET", path);
export const post = (path, body = {}) => call("POST", path, body);
export const del = (path) => call("DELETE", path);

export function query(params) {
  const pairs = Object.entries(params).filter(([, v]) => v !== "" && v !== undefined && v !== null);
  return pairs.length ? "?" + new URLSearchParams(pairs).toString() : "";
}

export function taskPath(id, ...rest) {
  return ["/api/tasks", encodeURIComponent(id), ...rest.map(encodeURIComponent)].join("/");
}
