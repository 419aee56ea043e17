// Drive an A2A agent with the official JavaScript SDK's 0.3 client (@a2a-js/sdk 0.3.x); print
// what it saw as JSON lines.
//
//   node client.js --url AGENT_BASE_URL --binding jsonrpc|rest|grpc --scenario NAME|all
//
// The 0.3 card is fetched from AGENT_BASE_URL/.well-known/agent-card.json and the client is
// given only the transport of the one binding asked for. Every stdout line is one JSON object
// {"scenario": S, "op": <operation>, <kind>: <0.3 JSON>}, with the scenarios of
// tests/interop/sdk03_peer/sdk_client.py:
//
//   card            {"op": "card", "card": AgentCard}
//   send            "record": {"op": "send", "result": Task | Message}
//   stream          "record" streamed: {"op": "stream", "event": ...} per event
//   get             send, then {"op": "get", "task": Task} (with historyLength 10)
//   input_required  send "" (must be input-required), then "record" on that task: two sends
//   cancel          send "slow" with blocking false, then {"op": "cancel", "task": Task}
//   subscribe       send "slow" with blocking false, resubscribe: the first event, then
//                   cancel it ({"op": "cancel"}) and the rest of the events
//   errors          get and cancel an unknown task: {"op": "error", "call": ..., "error": E}
//   files           (not in `all`) a message with one file part (bytes FILE_B64, "in.bin"),
//                   sent ({"op": "send"}), got ({"op": "get"}), then streamed ({"op": "stream"})
//   push            (not in `all`) a webhook receiver of the SDK's own web framework (express,
//                   on a free loopback port); "record" is sent with a push config (url, token
//                   PUSH_TOKEN) and, once a notification of the finished task came (or 15 s
//                   passed), {"op": "notification", "notification": {"contentType", "token",
//                   "a2aVersion", "task"}} per notification received
//
// `all` runs the first eight in this order; --scenario also takes a comma-separated list. A scenario that fails prints {"scenario": S, "error":
// {"type", "message", "code"?}} and the next one runs; the exit code is 3 if any failed.
// `code` is the gRPC status code number, or the JSON-RPC error code, under the SDK's error.

import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';

import express from 'express';

import {
  ClientFactory,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';

const TRANSPORTS = {
  jsonrpc: () => new JsonRpcTransportFactory(),
  rest: () => new RestTransportFactory(),
  grpc: () => new GrpcTransportFactory(),
};
const SCENARIOS = ['card', 'send', 'stream', 'get', 'input_required', 'cancel', 'subscribe', 'errors'];
const SINGLE = ['files', 'push']; // not in `all`
const FILE_B64 = 'AAH+/yBwZWVyd2lyZSCA'; // 00 01 fe ff " peerwire " 80: not base64 text
const PUSH_TOKEN = 'push-token-0.3';
const PUSH_WAIT_MS = 15_000;
const TERMINAL = ['completed', 'failed', 'canceled', 'rejected'];
const SCENARIO_TIMEOUT_MS = 20_000;
const UNKNOWN_TASK = '00000000-0000-4000-8000-000000000000';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    binding: { type: 'string' },
    scenario: { type: 'string' },
  },
});
const chosen = args.scenario === 'all' ? SCENARIOS : (args.scenario ?? '').split(',');
if (!args.url || !(args.binding in TRANSPORTS) || !chosen.every((s) => [...SCENARIOS, ...SINGLE].includes(s))) {
  console.error('usage: node client.js --url URL --binding jsonrpc|rest|grpc --scenario NAME|all');
  process.exit(2);
}

let scenario = '';
const emit = (op, kind, value) =>
  process.stdout.write(`${JSON.stringify({ scenario, op, [kind]: value })}\n`);

const describe = (err) => {
  const error = { type: err?.constructor?.name ?? typeof err, message: String(err?.message ?? err) };
  const code = err?.code ?? err?.cause?.code;
  if (code !== undefined) error.code = code;
  return error;
};

const message = (text, task) => ({
  kind: 'message',
  messageId: randomUUID(),
  role: 'user',
  parts: [{ kind: 'text', text }],
  ...(task ? { taskId: task.id, contextId: task.contextId } : {}),
});

const factory = new ClientFactory({ transports: [TRANSPORTS[args.binding]()] });
const client = await factory.createFromUrl(args.url).catch((err) => {
  process.stdout.write(`${JSON.stringify({ scenario: 'card', error: describe(err) })}\n`);
  process.exit(3);
});

async function send(text, { task, blocking = true, push } = {}) {
  const configuration = { blocking, ...(push ? { pushNotificationConfig: push } : {}) };
  const result = await client.sendMessage({ message: message(text, task), configuration });
  emit('send', 'result', result);
  return result;
}

async function sendForTask(text, options) {
  const result = await send(text, options);
  if (result.kind !== 'task') throw new Error(`expected a task, got ${result.kind}`);
  return result;
}

const run = {
  async card() {
    emit('card', 'card', client.agentCard);
  },
  async send() {
    await send('record');
  },
  async stream() {
    for await (const event of client.sendMessageStream({ message: message('record') })) {
      emit('stream', 'event', event);
    }
  },
  async get() {
    const task = await sendForTask('record');
    emit('get', 'task', await client.getTask({ id: task.id, historyLength: 10 }));
  },
  async input_required() {
    const task = await sendForTask('');
    if (task.status.state !== 'input-required') {
      throw new Error(`expected input-required, got ${task.status.state}`);
    }
    await send('record', { task });
  },
  async cancel() {
    const task = await sendForTask('slow', { blocking: false });
    emit('cancel', 'task', await client.cancelTask({ id: task.id }));
  },
  async subscribe() {
    const task = await sendForTask('slow', { blocking: false });
    const events = client.resubscribeTask({ id: task.id })[Symbol.asyncIterator]();
    const first = await events.next();
    if (first.done) throw new Error('the subscription ended before its first event');
    emit('subscribe', 'event', first.value);
    emit('cancel', 'task', await client.cancelTask({ id: task.id }));
    for (let next = await events.next(); !next.done; next = await events.next()) {
      emit('subscribe', 'event', next.value);
    }
  },
  async files() {
    const withFile = () => ({
      kind: 'message',
      messageId: randomUUID(),
      role: 'user',
      parts: [{ kind: 'file', file: { bytes: FILE_B64, mimeType: 'application/octet-stream', name: 'in.bin' } }],
    });
    const result = await client.sendMessage({ message: withFile(), configuration: { blocking: true } });
    emit('send', 'result', result);
    if (result.kind !== 'task') throw new Error(`expected a task, got ${result.kind}`);
    emit('get', 'task', await client.getTask({ id: result.id }));
    for await (const event of client.sendMessageStream({ message: withFile() })) {
      emit('stream', 'event', event);
    }
  },
  async push() {
    const received = [];
    let finished;
    const done = new Promise((resolve) => {
      finished = resolve;
    });
    const app = express();
    app.post('/hook', express.json(), (req, res) => {
      const task = req.body;
      received.push({
        contentType: req.get('content-type') ?? null,
        token: req.get('x-a2a-notification-token') ?? null,
        a2aVersion: req.get('a2a-version') ?? null,
        task,
      });
      if (task?.kind !== 'task') {
        res.status(400).end();
        return;
      }
      if (TERMINAL.includes(task.status?.state)) finished();
      res.status(200).end();
    });
    const server = await new Promise((resolve, reject) => {
      const listening = app.listen(0, '127.0.0.1', (err) => (err ? reject(err) : resolve(listening)));
    });
    try {
      const url = `http://127.0.0.1:${server.address().port}/hook`;
      await send('record', { push: { url, token: PUSH_TOKEN } });
      let timer;
      await Promise.race([done, new Promise((resolve) => (timer = setTimeout(resolve, PUSH_WAIT_MS)))]);
      clearTimeout(timer);
      for (const notification of received) emit('notification', 'notification', notification);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  },
  async errors() {
    for (const [call, request] of [
      ['get', () => client.getTask({ id: UNKNOWN_TASK })],
      ['cancel', () => client.cancelTask({ id: UNKNOWN_TASK })],
    ]) {
      let value;
      try {
        value = await request();
      } catch (err) {
        process.stdout.write(`${JSON.stringify({ scenario, op: 'error', call, error: describe(err) })}\n`);
        continue;
      }
      throw new Error(`${call} of an unknown task answered ${JSON.stringify(value)}`);
    }
  },
};

let failed = false;
for (const name of chosen) {
  scenario = name;
  let timer;
  try {
    await Promise.race([
      run[name](),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${SCENARIO_TIMEOUT_MS} ms`)), SCENARIO_TIMEOUT_MS);
      }),
    ]);
  } catch (err) {
    failed = true;
    process.stdout.write(`${JSON.stringify({ scenario: name, error: describe(err) })}\n`);
  } finally {
    clearTimeout(timer);
  }
}
process.exit(failed ? 3 : 0);
