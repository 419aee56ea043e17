"""Push notifications that arrive: a real webhook receiver on 127.0.0.1 (allow-listed, since
the SSRF guard refuses loopback otherwise) gets every event of a task, in order, over each
binding; failed attempts are retried with backoff and given up after the configured number;
bad configs are refused with the spec's errors and store nothing.

The restart guarantees (SIGKILL with undelivered rows) are in ``test_push_restart``; the SSRF
address classes one by one in ``test_ssrf``; the receiver's checks in ``tests/push``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from joserfc.jwk import ECKey

from peerwire import Client, create_app
from peerwire.client.transports.base import CallOptions
from peerwire.client.transports.grpc import GrpcTransport
from peerwire.errors import (
    AuthenticationError,
    InvalidParamsError,
    PermissionDeniedError,
    PushNotificationNotSupportedError,
    TaskNotFoundError,
)
from peerwire.protocol import list_query
from peerwire.push import JWKS_PATH, NotificationVerifier, verify_notification
from peerwire.server import A2AApp
from peerwire.server.dispatch import CallContext
from peerwire.server.push import PushSettings
from peerwire.server.stores import MemoryTaskStore, TaskStore
from peerwire.server.stores.base import OutboxRow
from peerwire.testing import live_server
from peerwire.types import (
    AuthenticationInfo,
    Binding,
    Encoded,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SendMessageResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    to_builtins,
)

from ._rpc import HEADERS, Rpc, user_message
from ._webhook import Received, Receiver, receiving
from .push_agent import STEPS, build
from .push_agent import step_of as push_step

WAIT_S = 30.0
BINDINGS = [Binding.JSONRPC, Binding.HTTP_JSON, Binding.GRPC]
# Fast retries, so failing-then-recovering receivers take a fraction of a second.
FAST = {"allow": ("127.0.0.1",), "retry_delay": 0.05, "poll_interval": 0.2}


@dataclass
class Pushing:
    """A served push agent, its webhook receiver, and ways to call the agent."""

    url: str
    receiver: Receiver
    http: httpx.AsyncClient
    store: TaskStore

    @property
    def rpc(self) -> Rpc:
        return Rpc(self.http, self.url)

    def hook(self, path: str = "/hook") -> str:
        return self.receiver.url + path


@contextlib.asynccontextmanager
async def pushing(
    receiver: Receiver | None = None, *, grpc: bool = False, **settings: Any
) -> AsyncIterator[Pushing]:
    receiver = receiver or Receiver()
    store = MemoryTaskStore()
    options: dict[str, Any] = {"grpc_port": 0} if grpc else {}
    async with (
        receiving(receiver),
        live_server(
            build(), store=store, push=PushSettings(**{**FAST, **settings}), **options
        ) as url,
        httpx.AsyncClient(trust_env=False, timeout=WAIT_S) as http,
    ):
        yield Pushing(url, receiver, http, store)


def step_of(received: Received) -> tuple[str, str]:
    return push_step(received.json)


def steps_message(**configuration: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"message": user_message("go", metadata={"skill": "steps"})}
    if configuration:
        params["configuration"] = configuration
    return params


async def delivered(pushing: Pushing, count: int) -> list[Received]:
    await pushing.receiver.until(lambda r: len(r.accepted) >= count)
    return pushing.receiver.accepted


# -- every event, in order, over each binding ------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_registered_webhook_gets_every_later_event_in_order(binding: str) -> None:
    async with (
        pushing(grpc=binding == Binding.GRPC) as served,
        Client.connect(served.url, bindings=[binding]) as client,
    ):
        waiting = await client.send("report", skill="question")
        assert isinstance(waiting, Task) and waiting.status.state is TaskState.INPUT_REQUIRED
        config = await client.create_push_config(
            waiting.id,
            served.hook(),
            token="per-task-token",
            authentication=AuthenticationInfo(scheme="Bearer", credentials="hook-secret"),
        )
        assert config.id and config.task_id == waiting.id and config.url == served.hook()
        assert await client.get_push_config(waiting.id, config.id) == config
        assert await client.list_push_configs(waiting.id) == [config]

        done = await client.send("the yearly one", task_id=waiting.id)
        assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
        received = await delivered(served, len(STEPS))

        for _ in range(2):  # idempotent
            await client.delete_push_config(waiting.id, config.id)
        assert await client.list_push_configs(waiting.id) == []
        with pytest.raises(TaskNotFoundError):
            await client.get_push_config(waiting.id, config.id)
        with pytest.raises(TaskNotFoundError):
            await client.create_push_config("no-such-task", served.hook())

    assert [step_of(r) for r in received] == STEPS
    assert len({r.notification_id for r in received}) == len(STEPS)
    assert all(count == 1 for count in served.receiver.acks.values())
    for notification in received:
        assert notification.path == "/hook"
        assert notification.headers["content-type"] == "application/a2a+json"
        assert notification.headers["x-a2a-notification-token"] == "per-task-token"
        assert notification.headers["authorization"] == "Bearer hook-secret"
        update = await verify_notification(
            notification.headers,
            notification.body,
            token="per-task-token",
            authorization="Bearer hook-secret",
            expected_task_ids={waiting.id},
        )
        assert update.payload.task_id == waiting.id
    # What arrived folds into the task GetTask shows: nothing missing, nothing extra.
    assert received[-1].event["status"]["state"] == "TASK_STATE_COMPLETED"
    assert fold_artifacts(received) == [to_builtins(a) for a in done.artifacts]


@pytest.mark.parametrize("binding", [Binding.JSONRPC, Binding.HTTP_JSON])
async def test_an_inline_config_is_registered_before_the_task_starts(binding: str) -> None:
    async with pushing() as served:
        params = steps_message(taskPushNotificationConfig={"url": served.hook(), "token": "t"})
        if binding == Binding.JSONRPC:
            task = (await served.rpc.result("SendMessage", params))["task"]
        else:
            response = await served.http.post(
                served.url + "/rest/message:send", json=params, headers=HEADERS
            )
            assert response.status_code == 200, response.text
            task = response.json()["task"]
        received = await delivered(served, len(STEPS))
        configs = await served.store.list_push_configs(task["id"])
    assert [step_of(r) for r in received] == STEPS, "the first WORKING is pushed too"
    assert {r.event["taskId"] for r in received} == {task["id"]}
    assert [(c.task_id, c.url, c.token) for c in configs] == [(task["id"], served.hook(), "t")]


async def test_an_inline_config_over_grpc() -> None:
    async with pushing(grpc=True) as served, Client.connect(served.url) as client:
        grpc_url = next(
            i.url for i in client.card.supported_interfaces if i.protocol_binding == Binding.GRPC
        )
        transport = GrpcTransport(grpc_url)
        try:
            request = SendMessageRequest(
                message=Message(
                    message_id="m-grpc",
                    role=Role.USER,
                    parts=[Part(text="go")],
                    metadata={"skill": "steps"},
                ),
                configuration=SendMessageConfiguration(
                    task_push_notification_config=TaskPushNotificationConfig(url=served.hook())
                ),
            )
            answer = await transport.call(
                "SendMessage", request, SendMessageResponse, CallOptions(headers=HEADERS)
            )
        finally:
            await transport.aclose()
        received = await delivered(served, len(STEPS))
    assert isinstance(answer.payload, Task)
    assert [step_of(r) for r in received] == STEPS
    assert {r.event["taskId"] for r in received} == {answer.payload.id}


async def test_each_config_of_a_task_gets_its_own_copy_in_order() -> None:
    async with pushing() as served:
        waiting = await served.rpc.send(user_message("x", metadata={"skill": "question"}))
        for path in ("/a", "/b"):
            await served.rpc.result(
                "CreateTaskPushNotificationConfig",
                {"taskId": waiting["id"], "url": served.hook(path)},
            )
        await served.rpc.send(user_message("y", taskId=waiting["id"]))
        await delivered(served, 2 * len(STEPS))
    for path in ("/a", "/b"):
        assert [step_of(r) for r in served.receiver.accepted if r.path == path] == STEPS, path
    ids = [r.notification_id for r in served.receiver.accepted]
    assert len(set(ids)) == len(ids) == 2 * len(STEPS), "one notification per event and config"


# -- retries, backoff, giving up -------------------------------------------------------------


async def test_failed_attempts_are_retried_until_the_receiver_takes_them() -> None:
    tries: dict[str, int] = {}

    def flaky(request: Received) -> int:
        """Every notification fails twice (503, then 500) before it is accepted."""
        tries[request.notification_id] = tries.get(request.notification_id, 0) + 1
        return {1: 503, 2: 500}.get(tries[request.notification_id], 200)

    async with pushing(Receiver(flaky), max_attempts=5) as served:
        task = (
            await served.rpc.result(
                "SendMessage", steps_message(taskPushNotificationConfig={"url": served.hook()})
            )
        )["task"]
        received = await delivered(served, len(STEPS))
        rows = await outbox_until(
            served.store, task["id"], lambda rows: all(r.state == "delivered" for r in rows)
        )
    assert [step_of(r) for r in received] == STEPS
    assert all(count == 1 for count in served.receiver.acks.values())
    # In order even while retrying: nothing of a later event arrives before an earlier one is
    # taken (each notification's three attempts are contiguous).
    ids = [r.notification_id for r in served.receiver.received]
    assert ids == [i for i in dict.fromkeys(ids) for _ in range(3)]
    assert [(r.state, r.attempts, r.last_error) for r in rows] == [("delivered", 3, "")] * len(
        STEPS
    )


async def test_a_notification_is_given_up_after_max_attempts_with_the_reason() -> None:
    async with pushing(Receiver(lambda _: 500), max_attempts=2) as served:
        task = (
            await served.rpc.result(
                "SendMessage", steps_message(taskPushNotificationConfig={"url": served.hook()})
            )
        )["task"]
        rows = await outbox_until(
            served.store, task["id"], lambda rows: all(r.state == "failed" for r in rows)
        )
    assert len(rows) == len(STEPS)
    assert [(r.state, r.attempts) for r in rows] == [("failed", 2)] * len(STEPS)
    assert {r.last_error for r in rows} == {"gave up after 2 attempts: HTTP 500"}
    # Giving up on one notification does not stop the next: every one had its two attempts.
    assert len(served.receiver.received) == 2 * len(STEPS)


async def test_an_attempt_that_takes_too_long_is_cut_and_retried() -> None:
    async with pushing(attempt_timeout=0.3, max_attempts=5) as served:
        held = asyncio.Event()
        served.receiver.hold = held  # the receiver sits on requests until released
        task = (
            await served.rpc.result(
                "SendMessage", steps_message(taskPushNotificationConfig={"url": served.hook()})
            )
        )["task"]
        await outbox_until(
            served.store, task["id"], lambda rows: rows[0].last_error == "no answer within 0.3 s"
        )
        served.receiver.hold = None
        held.set()
        rows = await outbox_until(
            served.store, task["id"], lambda rows: all(r.state == "delivered" for r in rows)
        )
    assert rows[0].attempts >= 2, "the first notification was cut and sent again"
    # The receiver may have taken the cut attempt too (at-least-once): by id, all in order.
    ids = list(dict.fromkeys(r.notification_id for r in served.receiver.accepted))
    assert ids == [r.id for r in rows]


async def test_redirects_are_not_followed() -> None:
    async with pushing(
        Receiver(lambda r: 302 if r.path == "/hook" else 200), max_attempts=1
    ) as served:
        task = (
            await served.rpc.result(
                "SendMessage", steps_message(taskPushNotificationConfig={"url": served.hook()})
            )
        )["task"]
        rows = await outbox_until(
            served.store, task["id"], lambda rows: all(r.state == "failed" for r in rows)
        )
    assert {r.path for r in served.receiver.received} == {"/hook"}, "never went elsewhere"
    assert {r.last_error for r in rows} == {
        "gave up after 1 attempt: HTTP 302 (redirects are not followed)"
    }


async def test_nothing_is_sent_to_a_deleted_config() -> None:
    refusing = Receiver(lambda r: 503 if r.path == "/gone" else 200)
    async with pushing(refusing, max_attempts=50) as served:
        task = (
            await served.rpc.result(
                "SendMessage",
                steps_message(taskPushNotificationConfig={"url": served.hook("/gone")}),
            )
        )["task"]
        await served.receiver.until(lambda r: len(r.received) >= 2)
        [config] = await served.store.list_push_configs(task["id"])
        params = {"taskId": task["id"], "id": config.id}
        for _ in range(2):  # idempotent
            assert await served.rpc.result("DeleteTaskPushNotificationConfig", params) == {}
        error = await served.rpc.error("GetTaskPushNotificationConfig", params)
        assert error["code"] == -32001  # TaskNotFoundError: there is no "config not found"
        assert [r for r in await served.store.outbox(task["id"]) if r.state == "pending"] == []
        attempts_then = sum(r.path == "/gone" for r in served.receiver.received)
        # Another task's notifications flow meanwhile; none for the deleted config.
        await served.rpc.result(
            "SendMessage", steps_message(taskPushNotificationConfig={"url": served.hook("/next")})
        )
        await served.receiver.until(lambda r: len([x for x in r.accepted]) >= len(STEPS))
    # At most the one attempt that was in flight at the deletion can still have landed.
    assert sum(r.path == "/gone" for r in served.receiver.received) <= attempts_then + 1


async def test_a_graceful_restart_leaves_no_tasks_and_loses_no_notification(
    tmp_path: Path,
) -> None:
    receiver = Receiver(lambda _: 503)
    settings = PushSettings(**{**FAST, "retry_delay": 1.0, "max_attempts": 10})
    async with receiving(receiver):
        app = create_app(build(), store=f"sqlite:{tmp_path / 'tasks.db'}", push=settings)
        async with app.lifespan():
            request = SendMessageRequest(
                message=Message(
                    message_id="m-restart",
                    role=Role.USER,
                    parts=[Part(text="go")],
                    metadata={"skill": "steps"},
                ),
                configuration=SendMessageConfiguration(
                    task_push_notification_config=TaskPushNotificationConfig(
                        url=receiver.url + "/hook"
                    )
                ),
            )
            answer = await app.dispatcher.send_message(request)
            task = (answer.decode() if isinstance(answer, Encoded) else answer).payload
            await receiver.until(lambda r: len(r.received) >= 1)
        leftovers = [t for t in asyncio.all_tasks() if t.get_name().startswith("peerwire push")]
        assert leftovers == [], "the deliverer left tasks behind"

        receiver.answer = lambda _: 200
        again = create_app(build(), store=f"sqlite:{tmp_path / 'tasks.db'}", push=settings)
        async with again.lifespan():
            await receiver.until(lambda r: len(r.acks) >= len(STEPS))
            rows = await outbox_until(
                again.dispatcher.store,
                task.id,
                lambda rows: all(r.state == "delivered" for r in rows),
            )
    assert [step_of(r) for r in receiver.accepted] == STEPS
    assert rows[0].attempts >= 2, "refused before the restart, delivered after it"
    assert [r.attempts for r in rows[1:]] == [1] * (len(STEPS) - 1), "held back until then"


# -- the SSRF guard at registration and at delivery --------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://10.1.2.3/hook",
        "http://172.16.0.9/hook",
        "http://192.168.1.20/hook",
        "http://169.254.10.10/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://224.0.0.251/hook",
        "http://0.0.0.0/hook",
        "http://[::1]/hook",
        "http://[fc00::1]/hook",
        "http://[fe80::1]/hook",
        "http://[ff02::1]/hook",
        "http://[fd00:ec2::254]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://localhost/hook",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://internal.test/hook",  # resolves to 10.0.0.7 (the test's resolver)
        "ftp://files.test/hook",
        "file:///etc/passwd",
        "http://user:password@public.test/hook",
    ],
)
async def test_internal_or_odd_urls_are_refused_at_registration(url: str) -> None:
    async def resolve(host: str, port: int) -> list[str]:
        return {"internal.test": ["10.0.0.7"], "public.test": ["93.184.216.34"]}[host]

    app = create_app(build(), push=PushSettings(resolver=resolve))
    async with app.lifespan():
        task = await _waiting_task(app)
        with pytest.raises(InvalidParamsError) as refused:
            await app.dispatcher.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task.id, url=url)
            )
        assert refused.value.field_violations[0].field == "url"
        assert await app.dispatcher.store.list_push_configs(task.id) == []


async def test_the_address_is_checked_again_at_delivery() -> None:
    """DNS rebinding: public when registered, loopback when delivered: refused, not sent."""
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])

    async def rebinding(host: str, port: int) -> list[str]:
        return next(answers, ["127.0.0.1"])

    async with pushing(allow=(), resolver=rebinding) as served:
        waiting = await served.rpc.send(user_message("x", metadata={"skill": "question"}))
        hook = served.hook().replace("127.0.0.1", "rebind.test")
        await served.rpc.result(
            "CreateTaskPushNotificationConfig", {"taskId": waiting["id"], "url": hook}
        )
        await served.rpc.send(user_message("y", taskId=waiting["id"]))
        rows = await outbox_until(
            served.store, waiting["id"], lambda rows: all(r.state == "failed" for r in rows)
        )
    assert served.receiver.received == []
    assert rows and all(r.state == "failed" for r in rows)
    assert "refused" in rows[0].last_error and "loopback" in rows[0].last_error


async def test_delivery_connects_to_the_checked_address_with_the_original_host() -> None:
    async def resolve(host: str, port: int) -> list[str]:
        assert host == "hooks.example"
        return ["127.0.0.1"]

    async with pushing(resolver=resolve) as served:
        port = served.receiver.url.rsplit(":", 1)[1]
        hook = f"http://hooks.example:{port}/hook"
        await served.rpc.result(
            "SendMessage", steps_message(taskPushNotificationConfig={"url": hook})
        )
        received = await delivered(served, len(STEPS))
    assert {r.headers["host"] for r in received} == {f"hooks.example:{port}"}


# -- signed notifications --------------------------------------------------------------------


async def test_a_signed_notification_verifies_with_the_published_jwks() -> None:
    key = ECKey.generate_key("P-256", private=True)
    async with pushing(signing_key=key, signing_kid="push-1") as served:
        jwks = await served.http.get(served.url + JWKS_PATH)
        assert jwks.status_code == 200 and jwks.headers["content-type"] == "application/json"
        assert [k["kid"] for k in jwks.json()["keys"]] == ["push-1"]
        assert "d" not in jwks.json()["keys"][0], "only the public key is published"
        task = (
            await served.rpc.result(
                "SendMessage", steps_message(taskPushNotificationConfig={"url": served.hook()})
            )
        )["task"]
        received = await delivered(served, len(STEPS))
        verifier = NotificationVerifier(
            jwks_url=served.url + JWKS_PATH,
            issuer=served.url,
            audience=served.hook(),
            expected_task_ids={task["id"]},
        )
        for notification in received:
            update = await verifier.verify(notification.headers, notification.body)
            assert update.payload.task_id == task["id"]
        first = received[0]
        tampered = first.body.replace(b"TASK_STATE_WORKING", b"TASK_STATE_FAILED")
        with pytest.raises(AuthenticationError, match="body"):
            await verifier.verify(first.headers, tampered)
        token = first.headers["x-a2a-notification-jwt"]
        head, claims, signature = token.split(".")
        forged = {**first.headers, "x-a2a-notification-jwt": f"{head}.{claims}.{signature[::-1]}"}
        with pytest.raises(AuthenticationError, match="signature"):
            await verifier.verify(forged, first.body)
        elsewhere = NotificationVerifier(
            jwks_url=served.url + JWKS_PATH,
            issuer=served.url,
            audience=served.hook("/other"),
            expected_task_ids={task["id"]},
        )
        with pytest.raises(AuthenticationError, match="audience"):
            await elsewhere.verify(first.headers, first.body)
        with pytest.raises(PermissionDeniedError):
            await verify_notification(
                first.headers,
                first.body,
                jwks=jwks.json(),
                issuer=served.url,
                audience=served.hook(),
                expected_task_ids={"another-task"},
            )


# -- the four operations: bad input, scoping, the capability gate -----------------------------


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"url": "https://public.test/h", "token": "a\r\nX-Injected: 1"}, "token"),
        ({"url": "https://public.test/h", "token": "t" * 2000}, "token"),
        ({"url": "https://public.test/h", "id": "has/slash"}, "id"),
        ({"url": "https://public.test/h", "authentication": {"scheme": "Bear er"}}, "scheme"),
        (
            {
                "url": "https://public.test/h",
                "authentication": {"scheme": "Bearer", "credentials": "x\ny"},
            },
            "credentials",
        ),
        ({"url": "https://public.test/" + "p" * 3000}, "url"),
        (
            {
                "url": "https://public.test/h",
                "authentication": {"scheme": "B", "credentials": "c" * 17000},
            },
            "config",
        ),
        ({"url": "gopher://public.test/h"}, "url"),
        ({"url": ""}, "url"),
    ],
)
async def test_malformed_or_oversized_configs_are_refused(
    config: dict[str, Any], field: str
) -> None:
    async def resolve(host: str, port: int) -> list[str]:
        return ["93.184.216.34"]

    app = create_app(build(), push=PushSettings(resolver=resolve))
    async with app.lifespan():
        task = await _waiting_task(app)
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")
        async with http:
            rpc = Rpc(http, "http://t")
            error = await rpc.error(
                "CreateTaskPushNotificationConfig", {"taskId": task.id, **config}
            )
            assert error["code"] == -32602, error
            assert field in json.dumps(error["data"]) or field in error["message"], error
            inline = await rpc.error(
                "SendMessage",
                steps_message(taskPushNotificationConfig=config),
            )
            assert inline["code"] == -32602, inline
        assert await app.dispatcher.store.list_push_configs(task.id) == []
        _, _, total = await app.dispatcher.store.list_tasks(
            list_query(ListTasksRequest()), tenant="", owner=None
        )
        assert total == 1, "a refused inline config starts no task"


async def test_unknown_and_foreign_tasks_are_not_found_and_nothing_is_stored() -> None:
    app = create_app(build(), push=PushSettings(allow=("127.0.0.1",)))
    async with app.lifespan():
        dispatcher = app.dispatcher
        alice, bob = CallContext(owner="alice"), CallContext(owner="bob")
        task = await _waiting_task(app, alice)
        config = TaskPushNotificationConfig(task_id=task.id, url="http://127.0.0.1:9/hook")
        with pytest.raises(TaskNotFoundError):
            await dispatcher.create_task_push_notification_config(config, bob)
        ghost = TaskPushNotificationConfig(task_id="no-such-task", url="http://127.0.0.1:9/h")
        with pytest.raises(TaskNotFoundError):
            await dispatcher.create_task_push_notification_config(ghost, alice)
        assert await dispatcher.store.list_push_configs(task.id) == []

        stored = await dispatcher.create_task_push_notification_config(config, alice)
        get = GetTaskPushNotificationConfigRequest(task_id=task.id, id=stored.id)
        assert await dispatcher.get_task_push_notification_config(get, alice) == stored
        for operation, request in (
            (dispatcher.get_task_push_notification_config, get),
            (
                dispatcher.list_task_push_notification_configs,
                ListTaskPushNotificationConfigsRequest(task_id=task.id),
            ),
        ):
            with pytest.raises(TaskNotFoundError):
                await operation(request, bob)  # type: ignore[operator]
        unknown = GetTaskPushNotificationConfigRequest(task_id=task.id, id="no-such-config")
        with pytest.raises(TaskNotFoundError):
            await dispatcher.get_task_push_notification_config(unknown, alice)


async def test_configs_per_task_are_capped() -> None:
    app = create_app(build(), push=PushSettings(allow=("127.0.0.1",), max_configs_per_task=2))
    async with app.lifespan():
        task = await _waiting_task(app)
        create = app.dispatcher.create_task_push_notification_config
        for n in range(2):
            await create(TaskPushNotificationConfig(task_id=task.id, url=f"http://127.0.0.1/{n}"))
        with pytest.raises(InvalidParamsError, match="already has 2"):
            await create(TaskPushNotificationConfig(task_id=task.id, url="http://127.0.0.1/3"))
        assert len(await app.dispatcher.store.list_push_configs(task.id)) == 2


async def test_rest_routes_and_answers() -> None:
    async with pushing() as served:
        waiting = await served.rpc.send(user_message("x", metadata={"skill": "question"}))
        base = f"{served.url}/rest/tasks/{waiting['id']}/pushNotificationConfigs"
        created = await served.http.post(
            base, json={"url": served.hook(), "id": "mine"}, headers=HEADERS
        )
        assert created.status_code == 200, created.text
        assert created.json() == {"id": "mine", "taskId": waiting["id"], "url": served.hook()}
        listed = await served.http.get(base, headers=HEADERS)
        assert listed.json() == {"configs": [created.json()]}
        got = await served.http.get(f"{base}/mine", headers=HEADERS)
        assert got.json() == created.json()
        for _ in range(2):  # idempotent
            deleted = await served.http.delete(f"{base}/mine", headers=HEADERS)
            assert (deleted.status_code, deleted.json()) == (200, {})
        missing = await served.http.get(f"{base}/mine", headers=HEADERS)
        assert missing.status_code == 404
        assert missing.json()["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
        refused = await served.http.post(base, json={"url": "http://10.0.0.1/"}, headers=HEADERS)
        assert refused.status_code == 400


async def test_without_push_the_card_says_so_and_every_operation_refuses() -> None:
    app = create_app(build())
    async with app.lifespan():
        assert not app.dispatcher.card().capabilities.push_notifications
        task = await _waiting_task(app)
        with pytest.raises(PushNotificationNotSupportedError):
            await app.dispatcher.create_task_push_notification_config(
                TaskPushNotificationConfig(task_id=task.id, url="https://public.test/")
            )
    served = create_app(build(), push=True)
    assert served.dispatcher.card().capabilities.push_notifications is True


# -- helpers ---------------------------------------------------------------------------------


async def _waiting_task(app: A2AApp, call: CallContext | None = None) -> Task:
    """A task of ``question`` waiting for input (so it has room for configs and events)."""
    request = SendMessageRequest(
        message=Message(
            message_id="m-wait",
            role=Role.USER,
            parts=[Part(text="report")],
            metadata={"skill": "question"},
        )
    )
    answer = await app.dispatcher.send_message(request, call or CallContext())
    if isinstance(answer, Encoded):
        answer = answer.decode()
    assert isinstance(answer.payload, Task)
    return answer.payload


async def outbox_until(
    store: TaskStore, task_id: str, done: Callable[[list[OutboxRow]], bool]
) -> list[OutboxRow]:
    """The task's outbox rows once ``done`` holds for them (and there are some).

    Outcomes are recorded inside the deliverer, which announces nothing a test could await:
    this polls the store, bounded in count and time.
    """
    with anyio.fail_after(WAIT_S):
        for _ in range(10_000):
            rows = await store.outbox(task_id)
            if rows and done(rows):
                return rows
            await anyio.sleep(0.02)
    raise AssertionError("unreachable")


def fold_artifacts(received: list[Received]) -> list[dict[str, Any]]:
    """The artifacts the notifications add up to (chunks appended), in first-seen order."""
    artifacts: dict[str, dict[str, Any]] = {}
    for notification in received:
        if notification.kind != "artifactUpdate":
            continue
        update = notification.event
        artifact = update["artifact"]
        if update.get("append"):
            artifacts[artifact["artifactId"]]["parts"] += artifact["parts"]
        else:
            artifacts[artifact["artifactId"]] = dict(artifact)
    return list(artifacts.values())
