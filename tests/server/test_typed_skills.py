"""Typed skills on real servers, on every binding: a typed input decoded from a data part (or
a text part holding JSON), a typed output as a data or file part, the schemas on the card, a
bad input refused before a task exists with the field named, and bad annotations refused at
decoration."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pydantic
import pytest
import pytest_asyncio

from peerwire import Agent, Message, Part, Role, Task, TaskContext, TaskState
from peerwire.client import CardCache, Client
from peerwire.errors import InvalidParamsError, InvalidResponseError, TaskNotCompletedError
from peerwire.protocol.extensions import SKILL_SCHEMAS_EXTENSION
from peerwire.testing import live_server
from peerwire.types import AgentCard, Binding, File

ASYNC = pytest.mark.asyncio(loop_scope="module")

BINDINGS = pytest.mark.parametrize(
    "binding", [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC], ids=["jsonrpc", "rest", "grpc"]
)


@dataclasses.dataclass
class Order:
    sku: str
    quantity: int


class Quote(pydantic.BaseModel):
    sku: str
    total_cents: int


class Line(msgspec.Struct):
    text: str
    words: int


def typed_agent() -> tuple[Agent, list[str]]:
    ran: list[str] = []
    agent = Agent("Typed")

    @agent.skill()
    async def quote(order: Order) -> Quote:
        """Price an order."""
        ran.append("quote")
        return Quote(sku=order.sku, total_cents=order.quantity * 250)

    @agent.skill()
    async def count(line: Quote, ctx: TaskContext) -> Line:
        ran.append("count")
        return Line(text=f"{line.sku} in {ctx.task_id != ''}", words=line.total_cents)

    @agent.skill()
    async def upper(file: File) -> File:
        ran.append("upper")
        assert file.data is not None
        return File(data=file.data.upper(), name=f"upper-{file.name}", media_type=file.media_type)

    @agent.skill()
    async def size(blob: bytes) -> int:
        return len(blob)

    @agent.skill()
    async def confirm(order: Order) -> Message:
        ran.append("confirm")
        text = f"{order.quantity} x {order.sku}"
        return Message(message_id=str(uuid.uuid4()), role=Role.AGENT, parts=[Part(text=text)])

    return agent, ran


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def served() -> AsyncIterator[tuple[str, list[str]]]:
    agent, ran = typed_agent()
    async with live_server(agent, grpc_port=0, shutdown_grace=1.0) as url:
        yield url, ran


def connect(url: str, binding: str) -> Any:
    return Client.connect(url, bindings=[binding], card_cache=CardCache())


def only_part(task: Any) -> Part:
    assert isinstance(task, Task) and task.status.state is TaskState.COMPLETED, task
    (artifact,) = task.artifacts
    (part,) = artifact.parts
    return part


@ASYNC
@BINDINGS
async def test_a_data_part_is_decoded_and_a_model_returned_as_data(
    served: tuple[str, list[str]], binding: str
) -> None:
    url, _ = served
    async with connect(url, binding) as client:
        part = only_part(
            await client.send([Part(data={"sku": "A-1", "quantity": 3})], skill="quote")
        )
        assert part.data == {"sku": "A-1", "total_cents": 750}
        assert part.media_type == "application/json"
        # A text part holding JSON is read the same way; a pydantic model as input too.
        part = only_part(await client.send('{"sku": "B", "total_cents": 4}', skill="count"))
        assert part.data == {"text": "B in True", "words": 4}
        reply = await client.send([Part(data={"sku": "C", "quantity": 2})], skill="confirm")
        assert isinstance(reply, Message) and reply.parts[0].text == "2 x C"


@ASYNC
@BINDINGS
async def test_files_and_bytes_travel_as_file_parts(
    served: tuple[str, list[str]], binding: str
) -> None:
    url, _ = served
    async with connect(url, binding) as client:
        sent = Part(raw=b"hello", filename="a.txt", media_type="text/plain")
        part = only_part(await client.send([sent], skill="upper"))
        assert (part.raw, part.filename, part.media_type) == (b"HELLO", "upper-a.txt", "text/plain")
        part = only_part(await client.send([Part(raw=b"12345")], skill="size"))
        assert part.data == 5
        with pytest.raises(InvalidParamsError, match="inline bytes"):
            await client.send([Part(url="https://example.com/x.bin")], skill="size")


@ASYNC
@BINDINGS
async def test_a_bad_input_is_refused_naming_the_field_and_creates_no_task(
    served: tuple[str, list[str]], binding: str
) -> None:
    url, ran = served
    context = f"typed-{uuid.uuid4()}"
    before = list(ran)
    async with connect(url, binding) as client:
        with pytest.raises(InvalidParamsError) as raised:
            await client.send(
                [Part(data={"sku": "A", "quantity": "many"})], skill="quote", context_id=context
            )
        assert "message.parts[0].data.quantity" in str(raised.value)
        assert [v.field for v in raised.value.field_violations] == [
            "message.parts[0].data.quantity"
        ]
        with pytest.raises(InvalidParamsError, match=r"message\.parts\[0\]\.data\.sku"):
            async for _ in client.stream(
                [Part(data={"quantity": 1})], skill="quote", context_id=context
            ):
                raise AssertionError("a refused stream has no events")
        # pydantic's own errors name the field the same way.
        with pytest.raises(InvalidParamsError, match=r"message\.parts\[0\]\.text\.total_cents"):
            await client.send('{"sku": "B"}', skill="count", context_id=context)
        with pytest.raises(InvalidParamsError, match=r"message\.parts\[0\]\.text is not JSON"):
            await client.send("three of A", skill="quote", context_id=context)
        with pytest.raises(InvalidParamsError, match="holds no file part"):
            await client.send("text", skill="upper", context_id=context)
        with pytest.raises(InvalidParamsError, match=r"message\.parts\[0\]\.data\.quantity"):
            await client.send(
                [Part(data={"sku": "A", "quantity": None})], skill="confirm", context_id=context
            )
        assert await client.list_tasks(context_id=context) == []
    assert ran == before, "no skill ran"


@ASYNC
async def test_the_card_publishes_each_typed_skills_schemas(
    served: tuple[str, list[str]],
) -> None:
    url, _ = served
    async with connect(url, Binding.JSONRPC) as client:
        card: AgentCard = client.card
    (extension,) = [e for e in card.capabilities.extensions if e.uri == SKILL_SCHEMAS_EXTENSION]
    assert extension.required is False
    assert extension.params is not None
    skills = extension.params["skills"]
    assert set(skills) == {"quote", "count", "upper", "size", "confirm"}
    quote = skills["quote"]
    assert quote["input"]["part"] == "data"
    order = quote["input"]["schema"]["$defs"]["Order"]
    assert order["required"] == ["sku", "quantity"]
    assert order["properties"]["quantity"] == {"type": "integer"}
    assert quote["output"]["schema"]["required"] == ["sku", "total_cents"]
    assert skills["upper"] == {"input": {"part": "file"}, "output": {"part": "file"}}
    assert skills["size"]["output"]["schema"] == {"type": "integer"}
    assert "output" not in skills["confirm"]
    modes = {s.id: (s.input_modes, s.output_modes) for s in card.skills}
    assert modes["quote"] == (["application/json", "text/plain"], ["application/json"])
    assert modes["upper"] == (["*/*"], [])


def test_an_untyped_agent_declares_no_schemas() -> None:
    agent = Agent("Plain")

    @agent.skill()
    async def echo(text: str) -> str:
        return text

    card = agent.card([])
    assert [e.uri for e in card.capabilities.extensions] == []


@pytest.mark.parametrize(
    ("source", "match"),
    [
        ("async def bad(value: set) -> str: ...", "'value' of skill bad must be annotated"),
        ("async def bad(a: Order, b: Order) -> str: ...", "more than one typed parameter"),
        ("async def bad(text: str) -> set: ...", "annotated to return <class 'set'>"),
        ("async def bad(text: str) -> object: ...", "annotated to return <class 'object'>"),
        ("async def bad(text: str) -> Order | set: ...", "annotated to return <class 'set'>"),
    ],
)
def test_an_unsupported_annotation_is_refused_at_decoration(source: str, match: str) -> None:
    agent = Agent("A")
    namespace: dict[str, Any] = {}
    exec(source, {"Order": Order}, namespace)
    with pytest.raises(TypeError, match=match):
        agent.skill()(namespace["bad"])
    assert agent.skills == ()


def test_supported_returns_are_accepted() -> None:
    agent = Agent("A")
    for index, annotation in enumerate(
        ["str", "dict[str, int]", "list[str]", "None", "Order | None", "str | None", "int", "File"]
    ):
        namespace: dict[str, Any] = {}
        exec(
            f"async def ok{index}(text: str) -> {annotation}: ...",
            {"Order": Order, "File": File},
            namespace,
        )
        agent.skill()(namespace[f"ok{index}"])
    assert len(agent.skills) == 8


def test_a_file_carries_exactly_one_of_data_or_url() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        File()
    with pytest.raises(ValueError, match="exactly one"):
        File(data=b"x", url="https://example.com/x")


@ASYNC
@BINDINGS
async def test_client_call_returns_the_typed_result(
    served: tuple[str, list[str]], binding: str
) -> None:
    url, _ = served
    async with connect(url, binding) as client:
        quote = await client.call("quote", Order(sku="Z", quantity=4), returns=Quote)
        assert quote == Quote(sku="Z", total_cents=1000)
        line = await client.call("count", quote, returns=Line)
        assert line == Line(text="Z in True", words=1000)
        # bytes and files go as file parts, a plain dict as a data part.
        assert await client.call("size", b"abc", returns=int) == 3
        upper = await client.call("upper", File(data=b"ab", name="f"), returns=File)
        assert upper == File(data=b"AB", name="upper-f")
        with pytest.raises(InvalidParamsError, match=r"data\.quantity"):
            await client.call("quote", {"sku": "Z"}, returns=Quote)


@ASYNC
async def test_a_result_that_does_not_decode_or_a_task_that_fails_is_an_error() -> None:
    agent = Agent("Loose")

    @agent.skill()
    async def loose(text: str) -> dict[str, Any]:
        return {"sku": "Q"}

    @agent.skill()
    async def broken(order: Order) -> Quote:
        raise RuntimeError("the price list is gone")

    @agent.skill()
    async def asks(ctx: TaskContext) -> str:
        return (await ctx.ask("which one?")).text

    async with live_server(agent, shutdown_grace=1.0) as url, connect(url, "JSONRPC") as client:
        with pytest.raises(InvalidResponseError) as raised:
            await client.call("loose", "x", returns=Quote)
        assert [v.field for v in raised.value.field_violations] == [
            "task.artifacts.parts[0].data.total_cents"
        ]
        with pytest.raises(TaskNotCompletedError, match="FAILED: the price list is gone") as failed:
            await client.call("broken", Order(sku="A", quantity=1), returns=Quote)
        assert failed.value.task.status.state is TaskState.FAILED
        with pytest.raises(TaskNotCompletedError, match="INPUT_REQUIRED: which one"):
            await client.call("asks", "go", returns=Quote)
        with pytest.raises(TypeError, match="returns= takes"):
            await client.call("loose", "x", returns=set)
