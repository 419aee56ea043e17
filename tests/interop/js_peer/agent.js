// An A2A agent built on the official JavaScript SDK (@a2a-js/sdk), for peerwire's interop
// tests: the card over HTTP, A2A over gRPC, JSON-RPC and HTTP+JSON, all on 127.0.0.1.
//
//   node agent.js --http-port P --grpc-port G
//
// prints one line `READY {"http": "http://127.0.0.1:P", "grpc": "127.0.0.1:G"}` on stdout once
// both listeners are bound, and runs until it is signalled. What it does is chosen by the first
// word of the message's text:
//
//   echo <words>  completes with one text artifact "echo: <words>"
//   ask           asks for input (INPUT_REQUIRED); the follow-up on the same task is WORKING,
//                 then completes with the artifact "answer: <follow-up text>"
//   stream        WORKING, two chunks of one artifact (the second appended, the last), COMPLETED
//   slow          WORKING, then waits (at most 30 s) until it is canceled
//   fail          FAILED, with a status message
//   anything else is echoed.

import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';

import express from 'express';
import { Server, ServerCredentials } from '@grpc/grpc-js';

import { A2A_PROTOCOL_VERSION, AGENT_CARD_PATH, Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import {
  UserBuilder as HttpUsers,
  agentCardHandler,
  jsonRpcHandler,
  restHandler,
} from '@a2a-js/sdk/server/express';
import { A2AService, UserBuilder as GrpcUsers, grpcService } from '@a2a-js/sdk/server/grpc';

const HOST = '127.0.0.1';
const SLOW_LIMIT_MS = 30_000;
const CHUNKS = ['A record is a final class', ' that carries its components.'];

const { values: args } = parseArgs({
  options: { 'http-port': { type: 'string' }, 'grpc-port': { type: 'string' } },
});
const httpPort = Number(args['http-port']);
const grpcPort = Number(args['grpc-port']);
if (!Number.isInteger(httpPort) || !Number.isInteger(grpcPort) || !httpPort || !grpcPort) {
  console.error('usage: node agent.js --http-port P --grpc-port G');
  process.exit(2);
}

const textPart = (value) => ({
  content: { $case: 'text', value },
  metadata: undefined,
  filename: '',
  mediaType: 'text/plain',
});

const agentMessage = (taskId, contextId, value) => ({
  messageId: randomUUID(),
  contextId,
  taskId,
  role: Role.ROLE_AGENT,
  parts: [textPart(value)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

const textOf = (message) =>
  (message?.parts ?? [])
    .filter((part) => part.content?.$case === 'text')
    .map((part) => part.content.value)
    .join('');

class InteropExecutor {
  // taskId -> the AbortController of its running `slow` turn
  running = new Map();

  async execute(request, bus) {
    const { taskId, contextId, userMessage } = request;
    const text = textOf(userMessage).trim();
    const status = (state, message) =>
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: {
            state,
            message: message && agentMessage(taskId, contextId, message),
            timestamp: new Date().toISOString(),
          },
          metadata: undefined,
        })
      );
    const artifact = (value, { append = false, lastChunk = true } = {}) =>
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId,
          contextId,
          artifact: {
            artifactId: 'answer',
            name: 'answer',
            description: '',
            parts: [textPart(value)],
            metadata: undefined,
            extensions: [],
          },
          append,
          lastChunk,
          metadata: undefined,
        })
      );

    // Every turn starts with the task (the SDK requires it), a continued one too.
    const previous = request.task;
    bus.publish(
      AgentEvent.task(
        previous ?? {
          id: taskId,
          contextId,
          status: {
            state: TaskState.TASK_STATE_SUBMITTED,
            message: undefined,
            timestamp: new Date().toISOString(),
          },
          artifacts: [],
          history: [userMessage],
          metadata: undefined,
        }
      )
    );

    if (previous?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
      // As an agent that works on the answer says: the stream is then the task as it was
      // (still INPUT_REQUIRED), WORKING, the artifact, COMPLETED.
      status(TaskState.TASK_STATE_WORKING);
      artifact(`answer: ${text}`);
      status(TaskState.TASK_STATE_COMPLETED);
      return;
    }
    const [verb, ...rest] = text.split(/\s+/);
    switch (verb) {
      case 'ask':
        status(TaskState.TASK_STATE_INPUT_REQUIRED, 'Which term?');
        return;
      case 'stream':
        status(TaskState.TASK_STATE_WORKING);
        artifact(CHUNKS[0], { lastChunk: false });
        artifact(CHUNKS[1], { append: true, lastChunk: true });
        status(TaskState.TASK_STATE_COMPLETED);
        return;
      case 'slow':
        status(TaskState.TASK_STATE_WORKING);
        if (await this.#canceledWithin(taskId, SLOW_LIMIT_MS)) {
          status(TaskState.TASK_STATE_CANCELED, 'Canceled.');
        } else {
          status(TaskState.TASK_STATE_FAILED, `Nobody canceled me within ${SLOW_LIMIT_MS} ms.`);
        }
        return;
      case 'fail':
        status(TaskState.TASK_STATE_FAILED, 'Failing, as asked.');
        return;
      case 'echo':
        artifact(`echo: ${rest.join(' ')}`);
        status(TaskState.TASK_STATE_COMPLETED);
        return;
      default:
        artifact(`echo: ${text}`);
        status(TaskState.TASK_STATE_COMPLETED);
    }
  }

  async cancelTask(taskId) {
    // The running turn publishes CANCELED itself, so the task's events stay in one order.
    this.running.get(taskId)?.abort();
  }

  #canceledWithin(taskId, ms) {
    const controller = new AbortController();
    this.running.set(taskId, controller);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      controller.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve(true);
      });
    }).finally(() => this.running.delete(taskId));
  }
}

const card = {
  name: 'JS Interop Agent',
  description: 'An agent on the official JavaScript SDK, for interop tests',
  supportedInterfaces: [
    {
      url: `${HOST}:${grpcPort}`,
      protocolBinding: 'GRPC',
      tenant: '',
      protocolVersion: A2A_PROTOCOL_VERSION,
    },
    {
      url: `http://${HOST}:${httpPort}/a2a/jsonrpc`,
      protocolBinding: 'JSONRPC',
      tenant: '',
      protocolVersion: A2A_PROTOCOL_VERSION,
    },
    {
      url: `http://${HOST}:${httpPort}/a2a/rest`,
      protocolBinding: 'HTTP+JSON',
      tenant: '',
      protocolVersion: A2A_PROTOCOL_VERSION,
    },
  ],
  provider: undefined,
  version: '1.0.0',
  documentationUrl: '',
  capabilities: {
    streaming: true,
    pushNotifications: false,
    extensions: [],
    extendedAgentCard: false,
  },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [
    {
      id: 'interop',
      name: 'Interop',
      description: 'echo, ask, stream, slow and fail',
      tags: ['interop'],
      examples: ['echo hello', 'ask', 'stream', 'slow', 'fail'],
      inputModes: ['text/plain'],
      outputModes: ['text/plain'],
      securityRequirements: [],
    },
  ],
  signatures: [],
};

const requestHandler = new DefaultRequestHandler(
  card,
  new InMemoryTaskStore(),
  new InteropExecutor()
);

const app = express();
app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: requestHandler }));
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: HttpUsers.noAuthentication }));
app.use('/a2a/rest', restHandler({ requestHandler, userBuilder: HttpUsers.noAuthentication }));

const listening = new Promise((resolve, reject) => {
  const server = app.listen(httpPort, HOST, (err) => (err ? reject(err) : resolve(server)));
  server.once('error', reject);
});

const grpcServer = new Server();
grpcServer.addService(
  A2AService,
  grpcService({ requestHandler, userBuilder: GrpcUsers.noAuthentication })
);
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
  const ready = { http: `http://${HOST}:${httpPort}`, grpc: `${HOST}:${grpcPort}` };
  process.stdout.write(`READY ${JSON.stringify(ready)}\n`);
} catch (err) {
  console.error(`cannot listen: ${err?.message ?? err}`);
  process.exit(3);
}
