"""A2A 0.3 file bytes on the proto bindings (HTTP+JSON and gRPC), where the 0.3 SDKs disagree:
a2a-sdk puts the base64 *text* of the content in the proto ``bytes``, @a2a-js the content.

peerwire reads both (``"auto"``), answers each task in the form its files arrived in (kept in
the task's history, so GetTask answers alike after a restart), can be told one form per
binding, and its client sends either. The wire here is raw: what a2a-sdk 0.3 and @a2a-js
0.3 put on it (the interop tests run the SDKs themselves).
"""

from __future__ import annotations

import base64
import contextlib
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import grpc
import grpc.aio
import httpx
import msgspec
import pytest

from peerwire import Agent, Client, Message, TaskContext, create_app
from peerwire.bindings.grpc._gen import a2a_v03_pb2 as pb
from peerwire.bindings.sse import SSEParser
from peerwire.client import CardCache
from peerwire.compat.v03 import proto, translate
from peerwire.compat.v03.files import (
    FORM_KEY,
    FileBytesSettingError,
    files_in,
    files_out,
)
from peerwire.errors import InvalidParamsError
from peerwire.server import A2AApp
from peerwire.testing import live_server
from peerwire.types import Binding, Part, Role, Task, TaskState, TaskStatus
from tests.server._services import PG_DSN, fresh_schema

from .conftest import V03CardOnly

TIMEOUT_S = 30.0
CONTENT = b"\x00\x01\xfe\xff peerwire \x80"  # not base64 text: no form can be mistaken
SDK_FORM = base64.b64encode(CONTENT)  # what a2a-sdk puts in the proto bytes
GRPC = "/a2a.v1.A2AService/"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def mirror_agent() -> Agent:
    agent = Agent("Mirror Agent", description="Answers a file with the file it received")

    @agent.skill(input_modes=["*/*"], output_modes=["*/*"])
    async def mirror(message: Message) -> Part:
        """Completes with a file: "got:" and the bytes of the file it received."""
        [raw] = [p.raw for p in message.parts if p.raw is not None]
        return Part(raw=b"got:" + raw, media_type="application/octet-stream", filename="out.bin")

    return agent


# --- the codec ---------------------------------------------------------------------------------


def file_doc(proto_bytes: bytes) -> dict[str, Any]:
    return {"message": {"content": [{"file": {"fileWithBytes": b64(proto_bytes)}}]}}


def bytes_of(document: dict[str, Any]) -> str:
    value: str = document["message"]["content"][0]["file"]["fileWithBytes"]
    return value


@pytest.mark.parametrize(
    ("proto_bytes", "setting", "form", "content"),
    [
        (CONTENT, "auto", "content", CONTENT),
        (SDK_FORM, "auto", "base64", CONTENT),
        (b"abcd", "auto", "base64", base64.b64decode(b"abcd")),  # the ambiguous case
        (b"abcd", "content", "content", b"abcd"),  # ...which a setting decides
        (SDK_FORM, "base64", "base64", CONTENT),
        (b"", "auto", "content", b""),
    ],
)
def test_files_in_reads_either_form(
    proto_bytes: bytes, setting: Any, form: str, content: bytes
) -> None:
    document = file_doc(proto_bytes)
    assert files_in(document, setting, mark=True) == form
    assert base64.b64decode(bytes_of(document)) == content
    assert document["message"]["metadata"] == {FORM_KEY: form}


def test_a_forced_base64_reading_refuses_what_is_not_base64_text() -> None:
    with pytest.raises(InvalidParamsError, match=r"fileWithBytes must hold base64 text"):
        files_in(file_doc(CONTENT), "base64")


def test_a_callers_own_form_key_is_replaced_and_never_written_back() -> None:
    document = {"message": {"metadata": {FORM_KEY: "base64", "k": 1}, "content": [{"text": "x"}]}}
    assert files_in(document, "auto", mark=True) is None
    assert document["message"]["metadata"] == {"k": 1}
    marked = Message(
        message_id="m",
        role=Role.USER,
        parts=[Part(text="x")],
        metadata={FORM_KEY: "base64", "k": 1},
    )
    task = Task(
        id="t",
        context_id="c",
        status=TaskStatus(state=TaskState.COMPLETED),
        history=[marked, msgspec.structs.replace(marked, metadata={FORM_KEY: "content"})],
    )
    # Neither 0.3 form of the task (proto bindings, JSON-RPC and push) carries the key.
    for written in (proto.task_to_proto(task), translate.task_to_v03(task)):
        assert [m.get("metadata") for m in written["history"]] == [{"k": 1}, None]


def test_files_out_writes_the_sdk_form() -> None:
    document = files_out(file_doc(CONTENT), "base64")
    assert base64.b64decode(bytes_of(document)) == SDK_FORM


def test_data_parts_and_metadata_are_never_rewritten() -> None:
    document = {"data": {"data": {"fileWithBytes": "!!"}}, "metadata": {"fileWithBytes": "!!"}}
    assert files_in(document, "base64") is None
    assert files_out(document, "base64") == document


def test_bad_settings_say_what_is_valid() -> None:
    with pytest.raises(FileBytesSettingError, match="'auto', 'content', 'base64'"):
        create_app(mirror_agent(), v03_file_bytes="hex")
    with pytest.raises(FileBytesSettingError, match="'jsonrpc'"):
        create_app(mirror_agent(), v03_file_bytes={"jsonrpc": "base64"})


# --- the server over HTTP+JSON and gRPC ---------------------------------------------------------


def proto_send(proto_bytes: bytes, task: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "content": [
            {"file": {"fileWithBytes": b64(proto_bytes), "mimeType": "application/octet-stream"}}
        ],
    }
    if task is not None:
        message.update(taskId=task["id"], contextId=task["contextId"])
    return {"message": message}


def answered_bytes(task: dict[str, Any]) -> bytes:
    [artifact] = task["artifacts"]
    [part] = artifact["parts"]
    return base64.b64decode(part["file"]["fileWithBytes"])


@contextlib.asynccontextmanager
async def rest(**options: Any) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    async with (
        live_server(mirror_agent(), shutdown_grace=1.0, **options) as url,
        httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http,
    ):
        yield http, url + "/rest/v1"


async def rest_send(http: httpx.AsyncClient, base: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await http.post(base + "/message:send", json=body)
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    return task


async def rest_get(http: httpx.AsyncClient, base: str, task_id: str) -> dict[str, Any]:
    response = await http.get(f"{base}/tasks/{task_id}")
    assert response.status_code == 200, response.text
    task: dict[str, Any] = response.json()
    return task


async def test_rest_answers_each_caller_in_the_form_its_files_arrived_in() -> None:
    async with rest() as (http, base):
        sdk_task = await rest_send(http, base, proto_send(SDK_FORM))
        assert answered_bytes(sdk_task) == base64.b64encode(b"got:" + CONTENT)
        js_task = await rest_send(http, base, proto_send(CONTENT))
        assert answered_bytes(js_task) == b"got:" + CONTENT

        for task, answer in ((sdk_task, SDK_FORM), (js_task, CONTENT)):
            got = await rest_get(http, base, task["id"])
            assert answered_bytes(got) == (
                base64.b64encode(b"got:" + CONTENT) if answer is SDK_FORM else b"got:" + CONTENT
            )
            # The form is kept in the history, but a 0.3 caller never sees the key.
            assert all(FORM_KEY not in m.get("metadata", {}) for m in got["history"])

        # A streamed answer is in the caller's form too.
        body = proto_send(SDK_FORM)
        async with http.stream("POST", base + "/message:stream", json=body) as response:
            text = (await response.aread()).decode()
        assert b64(base64.b64encode(b"got:" + CONTENT)) in text


async def test_the_form_survives_a_restart(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'tasks.db'}"
    async with rest(store=store) as (http, base):
        task = await rest_send(http, base, proto_send(SDK_FORM))
    async with rest(store=store) as (http, base):
        got = await rest_get(http, base, task["id"])
        assert answered_bytes(got) == base64.b64encode(b"got:" + CONTENT)


async def test_a_binding_can_be_told_one_form() -> None:
    async with rest(v03_file_bytes={"rest": "content"}) as (http, base):
        # Read as content, a2a-sdk's text is the content; answered as content.
        task = await rest_send(http, base, proto_send(SDK_FORM))
        assert answered_bytes(task) == b"got:" + SDK_FORM


def grpc_url(app: A2AApp) -> str:
    [interface] = [
        i for i in app.dispatcher.card().supported_interfaces if i.protocol_binding == Binding.GRPC
    ]
    return interface.url


async def grpc_unary(channel: grpc.aio.Channel, rpc: str, request: Any, answer: Any) -> Any:
    call = channel.unary_unary(
        GRPC + rpc,
        request_serializer=type(request).SerializeToString,
        response_deserializer=answer.FromString,
    )
    return await call(request, timeout=TIMEOUT_S)


def grpc_send(proto_bytes: bytes) -> Any:
    file = pb.FilePart(file_with_bytes=proto_bytes, mime_type="application/octet-stream")
    message = pb.Message(
        message_id=str(uuid.uuid4()), role=pb.ROLE_USER, content=[pb.Part(file=file)]
    )
    return pb.SendMessageRequest(request=message)


async def test_grpc_answers_each_caller_in_the_form_its_files_arrived_in() -> None:
    app = create_app(mirror_agent(), store="memory", grpc_port=0, shutdown_grace=1.0)
    async with app.lifespan(), grpc.aio.insecure_channel(grpc_url(app)) as channel:
        for sent, answer in (
            (SDK_FORM, base64.b64encode(b"got:" + CONTENT)),
            (CONTENT, b"got:" + CONTENT),
        ):
            reply = await grpc_unary(
                channel, "SendMessage", grpc_send(sent), pb.SendMessageResponse
            )
            assert reply.task.artifacts[0].parts[0].file.file_with_bytes == answer
            name = pb.GetTaskRequest(name=f"tasks/{reply.task.id}")
            got = await grpc_unary(channel, "GetTask", name, pb.Task)
            assert got.artifacts[0].parts[0].file.file_with_bytes == answer


# --- the client ---------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", [Binding.HTTP_JSON, Binding.GRPC])
@pytest.mark.parametrize("setting", ["auto", "base64"])
async def test_the_client_sends_either_form_and_reads_both(binding: str, setting: str) -> None:
    # The server is told the form the client sends, so what it read shows what was sent.
    server_form = "base64" if setting == "base64" else "content"

    def build(url: str) -> Any:
        app = create_app(
            mirror_agent(),
            public_url=url,
            grpc_port=0,
            shutdown_grace=1.0,
            v03_file_bytes=server_form,
        )
        return V03CardOnly(app, (binding,))

    async with (
        live_server(build) as url,
        Client.connect(
            url, bindings=[binding], card_cache=CardCache(), v03_file_bytes=setting
        ) as client,
    ):
        assert client.interface.protocol_version == "0.3"
        part = Part(raw=CONTENT, media_type="application/octet-stream")
        task = await client.send(part)
        assert isinstance(task, Task)
        assert task.artifacts[0].parts[0].raw == b"got:" + CONTENT


# --- a subscription and a continuation without files --------------------------------------------


def asking_agent() -> Agent:
    agent = Agent("Asking Mirror", description="Takes a file, asks, then answers with a file")

    @agent.skill(input_modes=["*/*"], output_modes=["*/*"])
    async def mirror_later(ctx: TaskContext) -> Part:
        """Asks to go on, then completes with "got:" and the file's bytes."""
        [raw] = [p.raw for p in ctx.message.parts if p.raw is not None]
        await ctx.ask("Go on?")
        return Part(raw=b"got:" + raw, media_type="application/octet-stream")

    return agent


async def test_a_subscription_and_a_text_follow_up_answer_in_the_tasks_form() -> None:
    async with (
        live_server(asking_agent(), shutdown_grace=1.0) as url,
        httpx.AsyncClient(trust_env=False, timeout=TIMEOUT_S) as http,
    ):
        base = url + "/rest/v1"
        response = await http.post(base + "/message:send", json=proto_send(SDK_FORM))
        asked = response.json()["task"]
        assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", asked
        events: list[dict[str, Any]] = []
        parser = SSEParser()

        async def subscribe(started: anyio.Event) -> None:
            async with http.stream("GET", f"{base}/tasks/{asked['id']}:subscribe") as stream:
                assert stream.status_code == 200
                async for chunk in stream.aiter_raw():
                    events.extend(json.loads(d) for d in parser.feed(chunk))
                    started.set()

        with anyio.fail_after(TIMEOUT_S):
            async with anyio.create_task_group() as group:
                started = anyio.Event()
                group.start_soon(subscribe, started)
                await started.wait()  # the snapshot came: the subscription is on
                # A follow-up with text only: its answer is in the form the task's file came in.
                follow_up = {
                    "message": {
                        "messageId": str(uuid.uuid4()),
                        "role": "ROLE_USER",
                        "taskId": asked["id"],
                        "contextId": asked["contextId"],
                        "content": [{"text": "yes"}],
                    }
                }
                response = await http.post(base + "/message:send", json=follow_up)
                done = response.json()["task"]
                assert done["status"]["state"] == "TASK_STATE_COMPLETED", done
                assert answered_bytes(done) == base64.b64encode(b"got:" + CONTENT)
        updates = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
        [file] = [p["file"] for u in updates for p in u["artifact"]["parts"]]
        assert base64.b64decode(file["fileWithBytes"]) == base64.b64encode(b"got:" + CONTENT)


@pytest.mark.services
async def test_another_replica_answers_in_the_same_form() -> None:
    # Two replicas sharing one PostgreSQL store: the form is read from the task's history.
    async with fresh_schema() as schema:
        store = f"{PG_DSN}?schema={schema}"
        async with rest(store=store) as (http, first), rest(store=store) as (_, second):
            task = await rest_send(http, first, proto_send(SDK_FORM))
            got = await rest_get(http, second, task["id"])
            assert answered_bytes(got) == base64.b64encode(b"got:" + CONTENT)
