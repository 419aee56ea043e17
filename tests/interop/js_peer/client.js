// Drive an A2A agent with the official JavaScript SDK's 1.x client (@a2a-js/sdk 1.3.0); print
// what it saw as JSON lines (ProtoJSON, the SDK's own toJSON).
//
//   node client.js --url AGENT_BASE_URL --binding jsonrpc|rest|grpc --scenario card|send|all
//   node client.js ... --scenario verify --jwk PUBLIC_JWK_JSON
//
// The card is fetched from AGENT_BASE_URL/.well-known/agent-card.json by the SDK's
// ClientFactory.createFromUrl, and the client is given only the transport of the one binding
// asked for. Every stdout line is {"scenario": S, "op": <operation>, <kind>: <value>}:
//
//   card   {"op": "card", "card": AgentCard} (the card as the SDK parsed it)
//   send   "record": {"op": "send", "result": Task | Message} ("task" or "message" inside)
//   verify the card's signatures with the SDK's verifyAgentCardSignature and the key --jwk:
//          {"op": "verify", "ok": true} (a failure is the scenario's error line)
//
// A scenario that fails prints {"scenario": S, "error": {"type", "message"}}; exit code 3.

import { createPublicKey, randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';

import { AgentCard, Message, Role, Task, verifyAgentCardSignature } from '@a2a-js/sdk';
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';

const TRANSPORTS = {
  jsonrpc: () => new JsonRpcTransportFactory(),
  rest: () => new RestTransportFactory(),
  grpc: () => new GrpcTransportFactory(),
};
const SCENARIOS = ['card', 'send', 'verify'];
const SCENARIO_TIMEOUT_MS = 20_000;

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    binding: { type: 'string' },
    scenario: { type: 'string' },
    jwk: { type: 'string' },
  },
});
if (!args.url || !(args.binding in TRANSPORTS) || ![...SCENARIOS, 'all'].includes(args.scenario)) {
  console.error('usage: node client.js --url URL --binding jsonrpc|rest|grpc --scenario card|send|verify|all [--jwk JWK]');
  process.exit(2);
}

// The SDK logs failed signature checks with console.debug, on stdout: keep stdout JSON lines.
console.debug = (...values) => console.error(...values);

let scenario = 'card';
const emit = (op, kind, value) =>
  process.stdout.write(`${JSON.stringify({ scenario, op, [kind]: value })}\n`);
const describe = (err) => ({
  type: err?.constructor?.name ?? typeof err,
  message: String(err?.message ?? err),
});

const factory = new ClientFactory({ transports: [TRANSPORTS[args.binding]()] });
const client = await factory.createFromUrl(args.url).catch((err) => {
  process.stdout.write(`${JSON.stringify({ scenario: 'card', error: describe(err) })}\n`);
  process.exit(3);
});

const message = (text) => ({
  messageId: randomUUID(),
  contextId: '',
  taskId: '',
  role: Role.ROLE_USER,
  parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

const run = {
  async card() {
    emit('card', 'card', AgentCard.toJSON(client.agentCard));
  },
  async send() {
    const result = await client.sendMessage({
      tenant: '',
      message: message('record'),
      configuration: undefined,
      metadata: undefined,
    });
    const value = 'status' in result ? { task: Task.toJSON(result) } : { message: Message.toJSON(result) };
    emit('send', 'result', value);
  },
  async verify() {
    if (!args.jwk) throw new Error('verify needs --jwk');
    const key = createPublicKey({ key: JSON.parse(args.jwk), format: 'jwk' });
    await verifyAgentCardSignature(async () => key)(client.agentCard);
    emit('verify', 'ok', true);
  },
};

let failed = false;
for (const name of args.scenario === 'all' ? ['card', 'send'] : [args.scenario]) {
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
