// A Glossary Agent on the official JavaScript SDK's A2A 0.3 release (@a2a-js/sdk 0.3.x), for
// peerwire's interop tests: the 0.3 card over HTTP, A2A 0.3 over JSON-RPC (/a2a/jsonrpc),
// HTTP+JSON (/a2a/rest) and gRPC, all on 127.0.0.1.
//
//   node agent.js --http-port P --grpc-port G
//
// prints one line `READY {"http": "http://127.0.0.1:P", "grpc": "127.0.0.1:G"}` on stdout once
// both listeners are bound, and runs until it is signalled. It behaves as the a2a-sdk 0.3
// Glossary Agent (tests/interop/sdk03_peer/glossary_server.py), by the message's text:
//
//   record        completed, one artifact "definition" in two chunks (the second appended,
//                 the last): "A record is a final class that is a transparent",
//                 " carrier for its components."
//   sealed class  completed, one chunk "A sealed class restricts which other classes may
//                 extend it."
//   (empty)       input-required, "Which term should I define?"; a term sent on the same task
//                 continues it as above
//   slow          a working status every 500 ms for 5 s, then completed; cancellable
//   anything else failed, "I do not know the term '<term>'."
//   a file part with bytes (whatever the text): completed, one artifact "mirror": a text part
//                 with the file's `bytes` as the SDK read them (base64 text), then a file part
//                 "out.bin" holding "got:" and the file's content
//
// Push notifications are on (the SDK's InMemoryPushNotificationStore and its
// DefaultPushNotificationSender: the 0.3 Task as JSON, the token in X-A2A-Notification-Token).

import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';

import express from 'express';
import { Server, ServerCredentials } from '@grpc/grpc-js';

import { AGENT_CARD_PATH } from '@a2a-js/sdk';
import { DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import {
  UserBuilder as HttpUsers,
  agentCardHandler,
  jsonRpcHandler,
  restHandler,
} from '@a2a-js/sdk/server/express';
import { A2AService, UserBuilder as GrpcUsers, grpcService } from '@a2a-js/sdk/server/grpc';

const HOST = '127.0.0.1';
const DEFINITIONS = {
  record: ['A record is a final class that is a transparent', ' carrier for its components.'],
  'sealed class': ['A sealed class restricts which other classes may extend it.'],
};
const ASK_FOR_TERM = 'Which term should I define?';
const SLOW_STEPS = 10;
const SLOW_STEP_MS = 500;

const { values: args } = parseArgs({
  options: { 'http-port': { type: 'string' }, 'grpc-port': { type: 'string' } },
});
const httpPort = Number(args['http-port']);
const grpcPort = Number(args['grpc-port']);
if (!Number.isInteger(httpPort) || !Number.isInteger(grpcPort) || !httpPort || !grpcPort) {
  console.error('usage: node agent.js --http-port P --grpc-port G');
  process.exit(2);
}

const textOf = (message) =>
  (message?.parts ?? [])
    .filter((part) => part.kind === 'text')
    .map((part) => part.text)
    .join('');

class GlossaryExecutor {
  // taskId -> the AbortController of its running `slow` turn
  running = new Map();

  async execute(request, bus) {
    const { taskId, contextId, userMessage } = request;
    const now = () => new Date().toISOString();
    const say = (text) => ({
      kind: 'message',
      messageId: randomUUID(),
      role: 'agent',
      parts: [{ kind: 'text', text }],
      taskId,
      contextId,
    });
    const status = (state, text, final = false) =>
      bus.publish({
        kind: 'status-update',
        taskId,
        contextId,
        status: { state, message: text === undefined ? undefined : say(text), timestamp: now() },
        final,
      });

    if (!request.task) {
      bus.publish({
        kind: 'task',
        id: taskId,
        contextId,
        status: { state: 'submitted', timestamp: now() },
        history: [userMessage],
      });
    }
    status('working');

    const term = textOf(userMessage).trim();
    const key = term.toLowerCase();
    const file = (userMessage?.parts ?? []).find((part) => part.kind === 'file' && part.file?.bytes !== undefined);
    if (file) {
      const got = Buffer.concat([Buffer.from('got:'), Buffer.from(file.file.bytes, 'base64')]);
      bus.publish({
        kind: 'artifact-update',
        taskId,
        contextId,
        artifact: {
          artifactId: 'mirror',
          name: 'mirror',
          parts: [
            { kind: 'text', text: file.file.bytes },
            {
              kind: 'file',
              file: { bytes: got.toString('base64'), mimeType: 'application/octet-stream', name: 'out.bin' },
            },
          ],
        },
      });
      status('completed', undefined, true);
    } else if (!key) {
      status('input-required', ASK_FOR_TERM, true);
    } else if (key === 'slow') {
      if (await this.#slow(taskId, () => status('working'))) {
        status('canceled', 'Canceled.', true);
      } else {
        status('completed', 'Done thinking.', true);
      }
    } else if (key in DEFINITIONS) {
      const chunks = DEFINITIONS[key];
      chunks.forEach((text, i) =>
        bus.publish({
          kind: 'artifact-update',
          taskId,
          contextId,
          artifact: { artifactId: 'definition', name: 'definition', parts: [{ kind: 'text', text }] },
          append: i > 0,
          lastChunk: i === chunks.length - 1,
        })
      );
      status('completed', undefined, true);
    } else {
      status('failed', `I do not know the term '${term}'.`, true);
    }
    bus.finished();
  }

  async cancelTask(taskId) {
    // The running turn publishes CANCELED itself, so the task's events stay in one order.
    this.running.get(taskId)?.abort();
  }

  // Reports progress every step; true once canceled, false when done.
  async #slow(taskId, progress) {
    const controller = new AbortController();
    this.running.set(taskId, controller);
    try {
      for (let step = 1; step <= SLOW_STEPS; step++) {
        const canceled = await new Promise((resolve) => {
          const timer = setTimeout(() => resolve(false), SLOW_STEP_MS);
          controller.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve(true);
          });
        });
        if (canceled) return true;
        if (step < SLOW_STEPS) progress();
      }
      return false;
    } finally {
      this.running.delete(taskId);
    }
  }
}

const base = `http://${HOST}:${httpPort}`;
const card = {
  name: 'Glossary Agent (@a2a-js/sdk 0.3)',
  description: "Defines programming terms; the A2A 0.3 peer of peerwire's interop tests.",
  protocolVersion: '0.3.0',
  version: '1.0.0',
  url: `${base}/a2a/jsonrpc`,
  preferredTransport: 'JSONRPC',
  additionalInterfaces: [
    { url: `${base}/a2a/jsonrpc`, transport: 'JSONRPC' },
    { url: `${base}/a2a/rest`, transport: 'HTTP+JSON' },
    { url: `${HOST}:${grpcPort}`, transport: 'GRPC' },
  ],
  capabilities: { streaming: true, pushNotifications: true },
  defaultInputModes: ['text/plain', 'application/octet-stream'],
  defaultOutputModes: ['text/plain', 'application/octet-stream'],
  skills: [
    {
      id: 'define',
      name: 'define',
      description: 'Define a programming term.',
      tags: ['glossary'],
      examples: ['record', 'sealed class'],
    },
  ],
};

const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new GlossaryExecutor());

const app = express();
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: HttpUsers.noAuthentication }));
app.use('/a2a/rest', restHandler({ requestHandler, userBuilder: HttpUsers.noAuthentication }));

const listening = new Promise((resolve, reject) => {
  const server = app.listen(httpPort, HOST, (err) => (err ? reject(err) : resolve(server)));
  server.once('error', reject);
});

const grpcServer = new Server();
grpcServer.addService(A2AService, grpcService({ requestHandler, userBuilder: GrpcUsers.noAuthentication }));
const bound = new Promise((resolve, reject) =>
  grpcServer.bindAsync(`${HOST}:${grpcPort}`, ServerCredentials.createInsecure(), (err, port) =>
    err ? reject(err) : resolve(port)
  )
);

try {
  const [httpServer] = await Promise.all([listening, bound]);
  const stop = () => {
    grpcServer.forceShutdown();
    httpServer.closeAllConnections();
    httpServer.close(() => process.exit(0));
    // A response still being written (a stream) must not keep the process alive.
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdout.write(`READY ${JSON.stringify({ http: base, grpc: `${HOST}:${grpcPort}` })}\n`);
} catch (err) {
  console.error(`cannot listen: ${err?.message ?? err}`);
  process.exit(3);
}
