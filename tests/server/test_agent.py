"""The Agent API: what a skill's signature receives, what its return value becomes, routing.

Declaration rules are checked directly on ``Agent``; what parameters receive and what return
values become is checked through the app in process (``peerwire.testing.in_process``).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from peerwire import Agent, Message, Part, Role, TaskContext
from peerwire.errors import InvalidParamsError
from peerwire.testing import in_process

from ._rpc import HEADERS, envelope, user_message


def message(text: str = "", skill: str | None = None, **fields: Any) -> Message:
    return Message(
        message_id="m",
        role=Role.USER,
        parts=[Part(text=text)],
        metadata=None if skill is None else {"skill": skill},
        **fields,
    )


async def call(http: httpx.AsyncClient, method: str, params: Any) -> Any:
    response = await http.post("/", json=envelope(method, params), headers=HEADERS)
    return response.json()


async def send(http: httpx.AsyncClient, msg: dict[str, Any]) -> dict[str, Any]:
    answer = await call(http, "SendMessage", {"message": msg})
    assert "result" in answer, answer
    return answer["result"]  # type: ignore[no-any-return]


# -- declaring skills --------------------------------------------------------------------------


def test_parameters_are_injected_by_annotation() -> None:
    agent = Agent("A")

    @agent.skill()
    async def everything(
        ctx: TaskContext, text: str, payload: dict[str, Any], msg: Message, again: str
    ) -> str:
        return text

    skill = agent.get_skill("everything")
    assert skill is not None
    assert skill.arguments == ("context", "text", "data", "message", "text")
    assert skill.replies_with_message is False


def test_a_skill_returning_message_is_a_message_skill() -> None:
    agent = Agent("A")

    @agent.skill()
    async def answer(text: str) -> Message:
        return Message(message_id="x", role=Role.AGENT, parts=[Part(text=text)])

    skill = agent.get_skill("answer")
    assert skill is not None and skill.replies_with_message


@pytest.mark.parametrize("annotation", ["set", "list", "str | None", "Any"])
def test_a_parameter_that_cannot_be_injected_is_a_declaration_error(annotation: str) -> None:
    agent = Agent("A")
    namespace: dict[str, Any] = {}
    exec(f"async def bad(value: {annotation}) -> str:\n    return ''", {"Any": Any}, namespace)
    with pytest.raises(TypeError, match="'value' of skill bad must be annotated str, dict"):
        agent.skill()(namespace["bad"])
    assert agent.skills == ()


def test_an_unannotated_parameter_is_a_declaration_error() -> None:
    agent = Agent("A")

    async def bare(value) -> str:  # type: ignore[no-untyped-def]
        return ""

    with pytest.raises(TypeError, match="'value'"):
        agent.skill()(bare)


def test_a_skill_must_be_async() -> None:
    agent = Agent("A")

    def sync(text: str) -> str:
        return text

    with pytest.raises(TypeError, match="must be an async function"):
        agent.skill()(sync)  # type: ignore[arg-type]


def test_a_skill_id_is_declared_once() -> None:
    agent = Agent("A")

    @agent.skill("same")
    async def one(text: str) -> str:
        return text

    async def two(text: str) -> str:
        return text

    with pytest.raises(ValueError, match="'same' is declared twice"):
        agent.skill("same")(two)


def test_card_entries_come_from_the_declaration() -> None:
    agent = Agent("Glossary", description="Defines terms")

    @agent.skill(tags=["java"], examples=["record"])
    async def define_term(text: str) -> str:
        """Defines a term.

        Longer text that is not part of the card."""
        return text

    @agent.skill("other", name="Other one", description="Explicit", input_modes=["text/plain"])
    async def other(text: str) -> str:
        return text

    card = agent.card([])
    assert [(s.id, s.name, s.description, s.tags, s.examples) for s in card.skills] == [
        ("define_term", "define term", "Defines a term.", ["java"], ["record"]),
        ("other", "Other one", "Explicit", ["other"], []),
    ]
    assert card.skills[1].input_modes == ["text/plain"]
    assert card.capabilities.streaming is True
    assert card.description == "Defines terms"


def test_on_cancel_attaches_a_hook_to_a_declared_skill() -> None:
    agent = Agent("A")

    @agent.skill()
    async def work(text: str) -> str:
        return text

    @agent.on_cancel("work")
    async def cleanup(ctx: TaskContext) -> None:
        return None

    skill = agent.get_skill("work")
    assert skill is not None and skill.on_cancel is cleanup
    with pytest.raises(ValueError, match="no skill 'missing'"):
        agent.on_cancel("missing")(cleanup)


# -- routing -------------------------------------------------------------------------------------


def two_skills(router: Any = None) -> Agent:
    agent = Agent("A", router=router)

    @agent.skill()
    async def first(text: str) -> str:
        return "first"

    @agent.skill()
    async def second(text: str) -> str:
        return "second"

    return agent


def test_one_skill_gets_every_message() -> None:
    agent = Agent("A")

    @agent.skill()
    async def only(text: str) -> str:
        return text

    assert agent.route(message("x")).id == "only"
    assert agent.route(message("x", skill="something-else")).id == "only"


def test_the_default_router_reads_the_skill_metadata() -> None:
    agent = two_skills()
    assert agent.route(message(skill="second")).id == "second"
    with pytest.raises(InvalidParamsError, match="skill 'third' is not one of first, second"):
        agent.route(message(skill="third"))
    with pytest.raises(InvalidParamsError, match="no skill was chosen"):
        agent.route(message())


def test_a_custom_router_chooses_by_any_rule() -> None:
    agent = two_skills(router=lambda m: "second" if m.text.startswith("2") else "first")
    assert agent.route(message("2 please")).id == "second"
    assert agent.route(message("anything", skill="second")).id == "first"

    decorated = two_skills()

    @decorated.router
    def by_length(m: Message) -> str | None:
        return None if not m.text else "first"

    assert decorated.route(message("x")).id == "first"
    with pytest.raises(InvalidParamsError):
        decorated.route(message(""))


def test_an_agent_without_skills_accepts_nothing() -> None:
    with pytest.raises(InvalidParamsError, match="no skills"):
        Agent("A").route(message("x"))


async def test_routing_over_the_wire() -> None:
    agent = two_skills()
    async with in_process(agent) as http:
        routed = await send(http, user_message("x", metadata={"skill": "second"}))
        assert routed["task"]["artifacts"][0]["parts"] == [{"text": "second"}]
        answer = await call(http, "SendMessage", {"message": user_message("x")})
        assert answer["error"]["code"] == -32602
        assert "first, second" in answer["error"]["message"]
        listed = await call(http, "ListTasks", {})
        assert listed["result"]["totalSize"] == 1, "a refused message creates no task"


async def test_a_follow_up_stays_with_the_skill_that_started_the_task() -> None:
    agent = Agent("A")

    @agent.skill()
    async def asker(ctx: TaskContext) -> str:
        return (await ctx.ask("name?")).text

    @agent.skill()
    async def other(text: str) -> str:
        return "wrong skill"

    async with in_process(agent) as http:
        task = (await send(http, user_message(metadata={"skill": "asker"})))["task"]
        follow_up = user_message("Ada", taskId=task["id"], metadata={"skill": "other"})
        done = (await send(http, follow_up))["task"]
        assert done["artifacts"][0]["parts"] == [{"text": "Ada"}]


# -- what parameters receive and what return values become ---------------------------------------


async def test_parameters_receive_the_message() -> None:
    agent = Agent("A")
    seen: dict[str, Any] = {}

    @agent.skill()
    async def look(text: str, data: dict[str, Any], msg: Message, ctx: TaskContext) -> None:
        seen.update(text=text, data=data, msg=msg, ctx=ctx)

    sent = user_message(
        parts=[{"text": "one "}, {"data": {"k": 1}}, {"text": "two"}, {"data": {"k": 2}}]
    )
    async with in_process(agent) as http:
        task = (await send(http, sent))["task"]
    assert seen["text"] == "one two"
    assert seen["data"] == {"k": 1}
    assert seen["msg"].message_id == sent["messageId"] and seen["msg"].task_id == task["id"]
    assert seen["ctx"].task_id == task["id"] and seen["ctx"].skill_id == "look"


async def test_data_is_empty_without_a_data_part() -> None:
    agent = Agent("A")

    @agent.skill()
    async def look(data: dict[str, Any]) -> dict[str, Any]:
        return {"received": data}

    async with in_process(agent) as http:
        task = (await send(http, user_message("no data here")))["task"]
    assert task["artifacts"][0]["parts"][0]["data"] == {"received": {}}


@pytest.mark.parametrize(
    ("result", "part"),
    [
        ("text", {"text": "text"}),
        ({"a": 1}, {"data": {"a": 1}, "mediaType": "application/json"}),
        ([1, "b"], {"data": [1, "b"], "mediaType": "application/json"}),
        ([], {"data": [], "mediaType": "application/json"}),
    ],
)
async def test_a_returned_value_becomes_the_result_artifact(result: Any, part: Any) -> None:
    agent = Agent("A")

    @agent.skill()
    async def produce() -> Any:
        return result

    async with in_process(agent) as http:
        task = (await send(http, user_message()))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    [artifact] = task["artifacts"]
    assert artifact["name"] == "result" and artifact["parts"] == [part]


async def test_returning_none_completes_unless_the_context_moved_the_task() -> None:
    agent = Agent("A")

    @agent.skill()
    async def nothing(ctx: TaskContext) -> None:
        if ctx.message.text == "pause":
            await ctx.require_input("more?")
        elif ctx.message.text == "reject":
            await ctx.reject("not for me")

    async with in_process(agent) as http:
        states = {}
        for text in ("quiet", "pause", "reject"):
            task = (await send(http, user_message(text)))["task"]
            states[text] = task["status"]["state"]
            assert "artifacts" not in task
    assert states == {
        "quiet": "TASK_STATE_COMPLETED",
        "pause": "TASK_STATE_INPUT_REQUIRED",
        "reject": "TASK_STATE_REJECTED",
    }


async def test_a_message_skill_replies_in_the_callers_context() -> None:
    agent = Agent("A")

    @agent.skill()
    async def answer(text: str) -> Message:
        return Message(message_id="r", role=Role.USER, parts=[Part(text=text.upper())])

    async with in_process(agent) as http:
        reply = (await send(http, user_message("hi", contextId="c-1")))["message"]
    assert reply == {
        "messageId": "r",
        "contextId": "c-1",
        "role": "ROLE_AGENT",
        "parts": [{"text": "HI"}],
    }


async def test_a_failing_message_skill_is_an_internal_error() -> None:
    agent = Agent("A")

    @agent.skill()
    async def answer(text: str) -> Message:
        raise ValueError("no answer today")

    async with in_process(agent) as http:
        error = (await call(http, "SendMessage", {"message": user_message("x")}))["error"]
    # The exception's text stays in the server's log: it may hold anything.
    assert error["code"] == -32603 and error["message"] == "The skill 'answer' failed"


async def test_an_executor_drives_its_task() -> None:
    class Shouter:
        async def execute(self, ctx: TaskContext) -> None:
            await ctx.start_work("listening")
            await ctx.add_artifact(ctx.message.text.upper(), name="loud")
            await ctx.complete()

    agent = Agent("A", executor=Shouter())
    async with in_process(agent) as http:
        task = (await send(http, user_message("hey")))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"] == [{"text": "HEY"}]
    assert [m["parts"][0]["text"] for m in task["history"]] == ["hey", "listening"]


async def test_a_returned_part_is_the_result_artifact() -> None:
    agent = Agent("A")

    @agent.skill()
    async def produce() -> Part:
        return Part(url="https://example.test/report.pdf", media_type="application/pdf")

    async with in_process(agent) as http:
        task = (await send(http, user_message()))["task"]
    assert task["artifacts"][0]["parts"] == [
        {"url": "https://example.test/report.pdf", "mediaType": "application/pdf"}
    ]


async def test_returning_something_else_fails_the_task_saying_what_was_wrong() -> None:
    agent = Agent("A")

    @agent.skill()
    async def produce() -> Any:  # an unchecked return: only the value can be refused
        return {42}

    async with in_process(agent) as http:
        task = (await send(http, user_message()))["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["status"]["message"]["parts"][0]["text"] == (
        "skill 'produce' returned a value of type set; a skill returns str, dict, list, Part, "
        "Message, None or a typed value (a pydantic model, a dataclass, a msgspec Struct, int, "
        "float, bool, bytes or File)"
    )


async def test_a_message_returned_by_a_task_skill_is_its_final_status_message() -> None:
    agent = Agent("A")

    @agent.skill()
    async def finish(text: str) -> Any:
        return Message(message_id="done-1", role=Role.AGENT, parts=[Part(text="all done")])

    async with in_process(agent) as http:
        task = (await send(http, user_message("go")))["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    status = task["status"]["message"]
    assert status["parts"] == [{"text": "all done"}]
    assert (status["taskId"], status["contextId"]) == (task["id"], task["contextId"])
    assert task["history"][-1] == status
