-- wrk script of the peerwire bench harness (bench/harness/wrk.py runs it).
--
--   wrk -t1 -c32 -d15s -s a2a.lua URL -- METHOD TASK_ID CHUNKS TAG
--
-- METHOD is SendMessage, GetTask or SendStreamingMessage. Every request is a JSON-RPC POST
-- with its own integer id and, for the send methods, its own messageId
-- ("bench-TAG-THREAD-N": TAG differs per wrk run, so a warm-up never reuses an id of the
-- run after it). A reply is ok when it is HTTP 200, holds TASK_STATE_COMPLETED and no
-- JSON-RPC "error" member; for streams the "data:" lines of the body are counted as events.
-- done() prints the totals as HARNESS_* lines for wrk.py to parse.

local threads = {}

function setup(thread)
  thread:set("thread_id", #threads)
  table.insert(threads, thread)
end

function init(args)
  method = args[1] or "SendMessage"
  task_id = args[2] or "-"
  chunks = tonumber(args[3] or "0") or 0
  tag = args[4] or "0"
  sent, responses, ok, bad, events = 0, 0, 0, 0, 0
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["A2A-Version"] = "1.0"
  if method == "SendStreamingMessage" then
    wrk.headers["Accept"] = "text/event-stream"
  end
  if method == "GetTask" then
    template = '{"jsonrpc":"2.0","id":%d,"method":"GetTask","params":{"id":"' .. task_id .. '"}}'
  else
    local metadata = ""
    if chunks > 0 then
      metadata = string.format(',"metadata":{"chunks":%d}', chunks)
    end
    template = '{"jsonrpc":"2.0","id":%d,"method":"' .. method .. '","params":{"message":'
      .. '{"messageId":"bench-' .. tag .. '-' .. tostring(thread_id) .. '-%d",'
      .. '"role":"ROLE_USER","parts":[{"text":"hello bench"}]' .. metadata .. '}}}'
  end
end

function request()
  sent = sent + 1
  local body
  if method == "GetTask" then
    body = string.format(template, sent)
  else
    body = string.format(template, sent, sent)
  end
  return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
  responses = responses + 1
  if status == 200 and string.find(body, "TASK_STATE_COMPLETED", 1, true)
      and not string.find(body, '"error"', 1, true) then
    ok = ok + 1
  else
    bad = bad + 1
    if bad <= 3 then
      io.stderr:write("HARNESS_BAD status=" .. status .. " body=" .. string.sub(body, 1, 300) .. "\n")
    end
  end
  if method == "SendStreamingMessage" then
    local _, n = string.gsub(body, "data:", "")
    events = events + n
  end
end

function done(summary, latency, requests)
  local totals = { responses = 0, ok = 0, bad = 0, events = 0 }
  for _, thread in ipairs(threads) do
    for key, _ in pairs(totals) do
      totals[key] = totals[key] + thread:get(key)
    end
  end
  local e = summary.errors
  io.write(string.format("HARNESS_COUNTS responses=%d ok=%d bad=%d events=%d\n",
    totals.responses, totals.ok, totals.bad, totals.events))
  io.write(string.format(
    "HARNESS_SUMMARY duration_us=%d requests=%d bytes=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
    summary.duration, summary.requests, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout))
  io.write(string.format("HARNESS_LATENCY_US mean=%.1f p50=%d p90=%d p99=%d p999=%d max=%d\n",
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max))
end
