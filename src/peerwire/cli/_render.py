"""What the commands print: A2A objects for people (rich) and for programs (``--json``).

Human output goes through a rich ``Console`` that never wraps lines (ids and URLs stay whole
for copying and grepping) and never interprets the agent's text as markup. ``--json`` output
bypasses rich: one ProtoJSON document per line, exactly the A2A object, so it can be piped.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import anyio
import msgspec
from rich.console import Console
from rich.text import Text

from ..client import Payload, Settling
from ..protocol import ACTIVE, TaskRecord, closes_stream
from ..types import (
    AgentCard,
    Artifact,
    Message,
    OAuthFlows,
    Part,
    Role,
    SecurityRequirement,
    SecurityScheme,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    encode,
)
from ._states import state_name

__all__ = [
    "Silent",
    "StreamView",
    "console",
    "follow",
    "follow_hint",
    "parts_text",
    "print_card",
    "print_json",
    "print_message",
    "print_task",
    "print_task_line",
    "requirements_text",
    "scheme_text",
    "spinner",
    "state_label",
    "stream_response",
]

_STATE_STYLES = {
    TaskState.SUBMITTED: "blue",
    TaskState.WORKING: "cyan",
    TaskState.COMPLETED: "bold green",
    TaskState.INPUT_REQUIRED: "bold magenta",
    TaskState.AUTH_REQUIRED: "bold magenta",
    TaskState.FAILED: "bold red",
    TaskState.REJECTED: "bold red",
    TaskState.CANCELED: "bold yellow",
}
# How the status message of a task in each state reads: the agent's question, its reason...
_MESSAGE_LABELS = {
    TaskState.INPUT_REQUIRED: "question",
    TaskState.AUTH_REQUIRED: "needs",
    TaskState.FAILED: "reason",
    TaskState.REJECTED: "reason",
}


def console() -> Console:
    """A console on stdout for human output."""
    return Console(soft_wrap=True, highlight=False, emoji=False)


def print_json(value: Any) -> None:
    """One A2A object as one line of ProtoJSON on stdout."""
    sys.stdout.write(encode(value).decode() + "\n")
    sys.stdout.flush()


def stream_response(payload: Payload) -> StreamResponse:
    """A stream event back in the wrapper it travelled in."""
    if isinstance(payload, Task):
        return StreamResponse(task=payload)
    if isinstance(payload, Message):
        return StreamResponse(message=payload)
    if isinstance(payload, TaskStatusUpdateEvent):
        return StreamResponse(status_update=payload)
    return StreamResponse(artifact_update=payload)


@contextlib.contextmanager
def spinner(out: Console, text: str, *, enabled: bool = True) -> Iterator[Any]:
    """A live spinner while waiting, on a terminal only (a pipe gets just the results)."""
    if not enabled or not out.is_terminal:
        yield None
        return
    with out.status(Text(text), spinner="dots") as status:
        yield status


# -- pieces ---------------------------------------------------------------------------------


def state_label(state: TaskState) -> Text:
    """``completed``, styled by how it went."""
    return Text(state_name(state), style=_STATE_STYLES.get(state, ""))


def parts_text(parts: Sequence[Part]) -> str:
    """Parts as text: text parts joined as written, others on their own lines."""
    pieces: list[str] = []
    text_run = False
    for part in parts:
        if part.text is not None:
            if text_run:
                pieces[-1] += part.text
            else:
                pieces.append(part.text)
            text_run = True
            continue
        text_run = False
        if part.data is not msgspec.UNSET:
            pieces.append(encode(part.data).decode())
        elif part.raw is not None:
            name = part.filename or "unnamed file"
            pieces.append(f"[{name}: {part.media_type or 'bytes'}, {len(part.raw)} bytes]")
        elif part.url is not None:
            pieces.append(f"[{part.filename or 'file'}: {part.url}]")
    return "\n".join(pieces)


def _labelled(out: Console, label: str, text: str, *, indent: str = "  ") -> None:
    """``label: text``, or a block under the label when the text has several lines."""
    lines = text.splitlines() or [""]
    if len(lines) == 1:
        out.print(Text.assemble(indent, (f"{label}: ", "bold"), lines[0]))
        return
    out.print(Text.assemble(indent, (f"{label}:", "bold")))
    for line in lines:
        out.print(Text(indent + "  " + line))


def _artifact_label(artifact: Artifact) -> str:
    return artifact.name or artifact.artifact_id


# -- whole objects ----------------------------------------------------------------------------


def print_task(
    out: Console,
    task: Task,
    *,
    url: str | None = None,
    streaming: bool = True,
    history: bool = False,
    artifacts: bool = True,
) -> None:
    """A task: its state, its status message (a question, a reason), its artifacts.

    ``url``: the agent's, to show how to answer a task that asks for input, or to follow one
    that still runs (with ``subscribe`` if the agent ``streaming``, else ``get``).
    """
    out.print(Text.assemble(("Task ", "bold"), task.id, "  ", state_label(task.status.state)))
    if task.context_id:
        out.print(Text.assemble("  ", ("context: ", "bold"), task.context_id))
    status_message = task.status.message
    state = task.status.state
    if status_message is not None:
        _labelled(out, _MESSAGE_LABELS.get(state, "message"), parts_text(status_message.parts))
    if artifacts:
        for artifact in task.artifacts:
            _labelled(out, _artifact_label(artifact), parts_text(artifact.parts))
    if history and task.history:
        out.print(Text.assemble("  ", ("history:", "bold")))
        for message in task.history:
            who = "user " if message.role is Role.USER else "agent"
            out.print(Text(f"    {who}  " + " ".join(parts_text(message.parts).splitlines())))
    if state is TaskState.INPUT_REQUIRED and url is not None:
        hint = f'peerwire send {url} "<your answer>" --task {task.id}'
        out.print(Text.assemble("  ", ("answer with: ", "dim"), (hint, "dim")))
    elif state in ACTIVE and url is not None:
        out.print(
            Text.assemble(
                "  ", ("follow with: ", "dim"), (follow_hint(url, task.id, streaming), "dim")
            )
        )


def follow_hint(url: str, task_id: str, streaming: bool = True) -> str:
    """The commands that follow a task that still runs."""
    get = f"peerwire get {url} {task_id}"
    return f"peerwire subscribe {url} {task_id} (or: {get})" if streaming else get


def print_task_line(out: Console, task: Task) -> None:
    """One line of a task list: id, state, time, context, status message."""
    said = ""
    if task.status.message is not None:
        said = " ".join(parts_text(task.status.message.parts).split())
    label = state_label(task.status.state)
    label.pad_right(15 - len(label.plain))
    out.print(
        Text.assemble(
            task.id,
            "  ",
            label,
            (task.status.timestamp or "-", "dim"),
            "  ",
            ("context ", "dim"),
            task.context_id or "-",
            ("  " + said) if said else "",
        )
    )


def print_message(out: Console, message: Message) -> None:
    """A direct message reply."""
    who = "agent" if message.role is Role.AGENT else "user"
    _labelled(out, who, parts_text(message.parts), indent="")


def print_card(out: Console, card: AgentCard) -> None:
    """The card: who the agent is, what it can do, where to reach it."""
    out.print(Text.assemble((card.name, "bold"), "  ", (card.version, "dim")))
    if card.description:
        out.print(Text(card.description))
    if card.provider is not None:
        out.print(Text(f"provider: {card.provider.organization} ({card.provider.url})"))
    capabilities = card.capabilities
    flags = [
        ("streaming", capabilities.streaming),
        ("push notifications", capabilities.push_notifications),
        ("extended card", capabilities.extended_agent_card),
    ]
    out.print(Text("capabilities: " + ", ".join(f"{n} {'yes' if v else 'no'}" for n, v in flags)))
    for extension in capabilities.extensions:
        required = " (required)" if extension.required else ""
        out.print(Text(f"extension: {extension.uri}{required} {extension.description}".rstrip()))
    out.print(
        Text(
            f"input: {', '.join(card.default_input_modes) or '-'}   "
            f"output: {', '.join(card.default_output_modes) or '-'}"
        )
    )
    out.print(Text("interfaces (preferred first):", style="bold"))
    width = max((len(i.protocol_binding) for i in card.supported_interfaces), default=0)
    for interface in card.supported_interfaces:
        tenant = f"  tenant {interface.tenant}" if interface.tenant else ""
        out.print(
            Text(
                f"  {interface.protocol_binding:<{width}}  {interface.protocol_version or '?':<4}"
                f"  {interface.url}{tenant}"
            )
        )
    _print_security(out, card)
    out.print(Text(f"skills ({len(card.skills)}):", style="bold"))
    for skill in card.skills:
        named = f"{skill.name}: " if skill.name != skill.id else ""
        out.print(Text.assemble("  ", (skill.id, "bold"), f"  {named}{skill.description}"))
        details = []
        if skill.tags:
            details.append("tags: " + ", ".join(skill.tags))
        if skill.examples:
            details.append("examples: " + ", ".join(f'"{e}"' for e in skill.examples))
        if details:
            out.print(Text("    " + "   ".join(details), style="dim"))
        if skill.security_requirements:
            out.print(
                Text.assemble(
                    "    ", ("requires: ", "bold"), requirements_text(skill.security_requirements)
                )
            )
    if card.signatures:
        out.print(Text(f"signed: {len(card.signatures)} signature(s)"))


def _print_security(out: Console, card: AgentCard) -> None:
    """The card's security schemes (what each is) and what a call requires of them."""
    if card.security_schemes:
        out.print(Text("security schemes:", style="bold"))
        width = max(len(name) for name in card.security_schemes)
        for name, scheme in card.security_schemes.items():
            out.print(Text(f"  {name:<{width}}  {scheme_text(scheme)}"))
    if card.security_requirements:
        out.print(
            Text.assemble(("requires: ", "bold"), requirements_text(card.security_requirements))
        )


def requirements_text(requirements: Sequence[SecurityRequirement]) -> str:
    """``oauth (scopes a b) or key``: the alternatives, each the schemes it needs together."""
    alternatives = []
    for requirement in requirements:
        if not requirement.schemes:
            alternatives.append("no credentials")
            continue
        alternatives.append(
            " and ".join(
                f"{name} (scopes {' '.join(scopes.list)})" if scopes.list else name
                for name, scopes in requirement.schemes.items()
            )
        )
    return " or ".join(alternatives)


def scheme_text(scheme: SecurityScheme) -> str:
    """What kind of credential a scheme takes, and where it goes."""
    if (key := scheme.api_key_security_scheme) is not None:
        kind, description = f"API key in {key.location} {key.name}", key.description
    elif (http := scheme.http_auth_security_scheme) is not None:
        shown = (
            http.scheme.capitalize() if http.scheme.lower() in ("bearer", "basic") else http.scheme
        )
        bearer_format = f" ({http.bearer_format})" if http.bearer_format else ""
        kind, description = f"HTTP {shown}{bearer_format}", http.description
    elif (oauth := scheme.oauth2_security_scheme) is not None:
        kind = "OAuth 2.0 " + _flow_text(oauth.flows)
        if oauth.oauth2_metadata_url:
            kind += f", metadata {oauth.oauth2_metadata_url}"
        description = oauth.description
    elif (oidc := scheme.open_id_connect_security_scheme) is not None:
        kind, description = f"OpenID Connect ({oidc.open_id_connect_url})", oidc.description
    elif (mtls := scheme.mtls_security_scheme) is not None:
        kind, description = "mutual TLS (a client certificate)", mtls.description
    else:  # a SecurityScheme holds exactly one of the above
        kind, description = "unknown", ""
    return f"{kind}: {description}" if description else kind


def _flow_text(flows: OAuthFlows) -> str:
    if (code := flows.authorization_code) is not None:
        text, scopes = f"authorization code (token URL {code.token_url})", code.scopes
    elif (client := flows.client_credentials) is not None:
        text, scopes = f"client credentials (token URL {client.token_url})", client.scopes
    elif (device := flows.device_code) is not None:
        text, scopes = f"device code (token URL {device.token_url})", device.scopes
    elif (implicit := flows.implicit) is not None:
        text, scopes = f"implicit (authorization URL {implicit.authorization_url})", implicit.scopes
    elif (password := flows.password) is not None:
        text, scopes = f"password (token URL {password.token_url})", password.scopes
    else:
        return "(no flow)"
    return text + (f", scopes {' '.join(scopes)}" if scopes else "")


class StreamView:
    """Prints a stream event by event, and folds it to show the assembled result at the end.

    ``quiet``: fold only (``--json`` prints the events itself but needs the final state).
    ``settling``: tells when the task settled (the stream of a continuation: ``Settling``).
    """

    def __init__(
        self,
        out: Console,
        *,
        url: str | None = None,
        quiet: bool = False,
        settling: Settling | None = None,
    ) -> None:
        self.out = out
        self.url = url
        self.quiet = quiet
        self.record: TaskRecord | None = None
        self.settling = Settling() if settling is None else settling

    @property
    def state(self) -> TaskState | None:
        return None if self.record is None else self.record.state

    @property
    def settled(self) -> bool:
        """The task is terminal, or interrupted by what the agent made of the message."""
        return self.settling.settled

    def show(self, payload: Payload) -> None:
        self.settling.see(payload)
        if isinstance(payload, Task):
            self.record = TaskRecord.from_task(payload)
        elif self.record is not None and not isinstance(payload, Message):
            self.record.apply(payload)
        elif isinstance(payload, TaskStatusUpdateEvent):
            self.record = TaskRecord.from_update(payload)  # a continuation's stream may begin so
        if self.quiet:
            return
        out = self.out
        if isinstance(payload, Message):
            print_message(out, payload)
        elif isinstance(payload, Task):
            out.print(
                Text.assemble(
                    ("Task ", "bold"),
                    payload.id,
                    ("  context ", "dim"),
                    (payload.context_id or "-", "dim"),
                )
            )
            self._status_line(payload.status.state, payload.status.message)
        elif isinstance(payload, TaskStatusUpdateEvent):
            self._status_line(payload.status.state, payload.status.message)
        else:
            self._artifact_line(payload)

    def finish(self) -> None:
        """After the stream: the task as it stands, its chunks assembled."""
        if self.record is None or self.quiet:
            return
        task = self.record.snapshot()
        if task.artifacts:
            self.out.print(Text("result:", style="bold"))
            for artifact in task.artifacts:
                _labelled(self.out, _artifact_label(artifact), parts_text(artifact.parts))
        if task.status.state is TaskState.INPUT_REQUIRED and self.url is not None:
            hint = f'peerwire send {self.url} "<your answer>" --task {task.id}'
            self.out.print(Text.assemble(("answer with: ", "dim"), (hint, "dim")))

    def _status_line(self, state: TaskState, message: Message | None) -> None:
        said = "" if message is None else " ".join(parts_text(message.parts).splitlines())
        label = _MESSAGE_LABELS.get(state)
        prefix = f"{label}: " if label and said else ""
        self.out.print(
            Text.assemble("  ", state_label(state), ("  " + prefix + said) if said else "")
        )

    def _artifact_line(self, event: TaskArtifactUpdateEvent) -> None:
        flags = [n for n, on in (("append", event.append), ("last chunk", event.last_chunk)) if on]
        shown = f" ({', '.join(flags)})" if flags else ""
        text = parts_text(event.artifact.parts)
        self.out.print(
            Text.assemble(
                "  ",
                ("artifact ", "bold"),
                _artifact_label(event.artifact),
                (shown, "dim"),
                ": ",
                _quoted(text),
            )
        )


def _quoted(text: str) -> str:
    """A chunk in quotes, so its leading and trailing spaces show."""
    return '"' + text.replace("\n", "\\n") + '"'


class Silent(Exception):
    """A stream brought no event for ``seconds``: its task, if it named one, still runs."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no event for {seconds:g} s")
        self.seconds = seconds


async def follow(
    view: StreamView,
    events: AsyncIterator[Payload],
    agent_name: str,
    *,
    as_json: bool,
    idle: float | None = None,
) -> None:
    """Show a stream to its end: events as they come (or as JSON lines), a spinner between.

    ``idle``: seconds the stream may go without an event (keep-alives do not count) before
    ``Silent`` is raised, whatever the client does meanwhile to follow the task.
    """
    with spinner(view.out, f"Waiting for {agent_name}…", enabled=not as_json) as status:
        try:
            while True:
                with anyio.move_on_after(math.inf if idle is None else idle) as waiting:
                    try:
                        payload = await anext(events)
                    except StopAsyncIteration:
                        break
                if waiting.cancelled_caught:
                    raise Silent(math.inf if idle is None else idle)
                if as_json:
                    print_json(stream_response(payload))
                view.show(payload)
                if view.state is not None and view.settled and closes_stream(view.state):
                    # Servers close here; one may keep a subscription to an interrupted task
                    # open (waiting for someone's answer), but the caller is done.
                    break
                if status is not None and view.state is not None:
                    status.update(Text(f"{agent_name}: {state_name(view.state)}…"))
        finally:
            close = getattr(events, "aclose", None)  # the client's streams are generators
            if close is not None:
                await close()
    view.finish()
