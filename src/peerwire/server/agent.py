"""What a user writes: an ``Agent`` with skills (async functions) or an executor class.

A skill's parameters say what it receives, by annotation: ``str`` the message's joined text,
``dict`` its first data part, ``Message`` the message itself, ``TaskContext`` the context;
one parameter may be *typed* (a pydantic model, a dataclass, a msgspec ``Struct``,
``int``/``float``/``bool``, ``bytes`` or ``File``: ``server._typed``), decoded from the
message and refused before a task exists when it does not match.
Its return value is its result: ``str`` a text artifact, ``dict``/``list`` a data artifact,
a typed value a data (or file) artifact, ``None`` when the skill finished the task itself
through the context. With ``Agent(lifespan=...)``, a parameter annotated with the type the
lifespan yields receives the app state (``server.app_state``). A skill annotated to
return ``Message`` is a *message skill*: it answers with a direct message and creates no task.
Raising fails the task with the exception's message. A message skill has no task to fail:
one that raises an ``A2AError`` (``raise InvalidParamsError("...")``) answers with that error;
any other exception answers ``InternalError``, its text logged but not sent.

Validators (``Agent(validate=...)``, ``@agent.validate``, ``max_text_chars``) check every
incoming message before anything happens: before a task is created or a follow-up recorded,
before a message skill runs. One that raises an ``A2AError`` refuses the message with it.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..errors import ContentTypeNotSupportedError, FieldViolation, InvalidParamsError
from ..protocol.extensions import ANSWERABLE_BY_EXTENSION
from ..protocol.media import uncovered_parts
from ..protocol.typed import TypedValue
from ..types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    Message,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from . import _typed
from .app_state import AppState, AppStateUnavailableError, Lifespan
from .context import Caller, TaskContext

__all__ = ["Agent", "AgentExecutor", "Router", "Skill", "Validator", "default_router"]

Router = Callable[[Message], str | None]
RestartPolicy = Literal["fail", "resume"]

Validator = Callable[[Message, Caller], Awaitable[None] | None]
"""``validate(message, caller)``, a plain or an async function: returns to accept the
message, raises an ``A2AError`` (``InvalidParamsError``, ``ContentTypeNotSupportedError``,
``PermissionDeniedError``, ...) to refuse it with that error."""


class AgentExecutor(Protocol):
    """Full control: ``execute`` drives the task through the context from start to end."""

    async def execute(self, ctx: TaskContext) -> None: ...


@dataclass(frozen=True)
class Skill:
    """A declared skill and the function that performs it."""

    id: str
    name: str
    description: str
    tags: tuple[str, ...]
    examples: tuple[str, ...]
    input_modes: tuple[str, ...]
    output_modes: tuple[str, ...]
    function: Callable[..., Awaitable[Any]] | None
    arguments: tuple[str, ...] = ()
    replies_with_message: bool = False
    executor: AgentExecutor | None = None
    on_cancel: Callable[[TaskContext], Awaitable[None]] | None = field(default=None)
    scopes: tuple[str, ...] = ()
    """Scopes a caller needs for this skill (enforced by the dispatcher)."""
    answerable_by: tuple[str, ...] = ()
    """Scopes that let a principal other than the task's owner (of the same tenant) answer
    the skill's questions (``Agent.skill(answerable_by=...)``); empty: only the owner."""
    input_type: TypedValue | None = None
    """The typed parameter's type (the argument kind ``"typed"``), if the skill has one."""
    output_type: TypedValue | None = None
    """The typed return annotation, published on the card with ``input_type``."""

    def card_entry(self, requirements: Sequence[SecurityRequirement] = ()) -> AgentSkill:
        return AgentSkill(
            id=self.id,
            name=self.name,
            description=self.description,
            tags=list(self.tags),
            examples=list(self.examples),
            input_modes=list(self.input_modes),
            output_modes=list(self.output_modes),
            security_requirements=list(requirements),
        )


def default_router(message: Message) -> str | None:
    """The documented default: the skill id named by ``message.metadata["skill"]``."""
    if message.metadata is not None:
        named = message.metadata.get("skill")
        if isinstance(named, str):
            return named
    return None


class Agent:
    """An A2A agent: its card metadata and its skills.

    >>> agent = Agent("Echo", description="Repeats what it is told")
    >>> @agent.skill()
    ... async def echo(text: str) -> str:
    ...     return text
    """

    def __init__(
        self,
        name: str,
        *,
        description: str = "",
        version: str = "1.0.0",
        provider: AgentProvider | None = None,
        documentation_url: str | None = None,
        icon_url: str | None = None,
        default_input_modes: Sequence[str] = ("text/plain", "application/json"),
        default_output_modes: Sequence[str] = ("text/plain", "application/json"),
        streaming: bool = True,
        extensions: Sequence[AgentExtension] = (),
        security_schemes: dict[str, SecurityScheme] | None = None,
        security_requirements: Sequence[SecurityRequirement] = (),
        executor: AgentExecutor | None = None,
        router: Router | None = None,
        task_timeout: float | None = None,
        on_restart: RestartPolicy = "fail",
        validate: Validator | None = None,
        max_text_chars: int | None = None,
        enforce_input_modes: bool = True,
        lifespan: Lifespan | None = None,
    ) -> None:
        """``task_timeout``: seconds a skill may work on a task (not counting waits in
        ``ctx.ask``) before the task fails (its ``on_cancel`` hook runs first); for a
        message skill, before the send answers ``InternalError``.

        ``validate`` checks every incoming message before a task is created or a follow-up
        recorded (a ``Validator``; ``@agent.validate`` adds more). ``max_text_chars``
        refuses a message with more characters of text than that, in all its text parts
        together, with ``InvalidParamsError`` (checked first, through the same hook).

        ``enforce_input_modes``: refuse, with ``ContentTypeNotSupportedError`` and before a
        task exists, a message with a part whose media type the routed skill's
        ``input_modes`` (or, when it declares none, ``default_input_modes``) do not cover
        (``protocol.media``: ``*/*`` and ``text/*`` are honoured). ``False`` hands every
        part to the skill, whatever the card declares.

        ``lifespan``: ``lifespan(agent)``, an async context manager opening what the skills
        share and yielding it (the app state), entered once per process before the first
        task runs and exited on shutdown (``server.app_state``).
        """
        self.name = name
        self.description = description or name
        self.version = version
        self.provider = provider
        self.documentation_url = documentation_url
        self.icon_url = icon_url
        self.default_input_modes = tuple(default_input_modes)
        self.default_output_modes = tuple(default_output_modes)
        self.enforce_input_modes = enforce_input_modes
        self.streaming = streaming
        # Every binding activates the requested ones it finds here, echoes them, and refuses
        # requests that do not ask for a required one (ExtensionSupportRequiredError).
        self.extensions = tuple(extensions)
        self.security_schemes = dict(security_schemes or {})
        self.security_requirements = tuple(security_requirements)
        self.task_timeout = task_timeout
        self.on_restart: RestartPolicy = on_restart
        self._router: Router | None = router
        self.lifespan: AppState | None = None if lifespan is None else AppState(lifespan, name)
        """The agent's lifespan, which the runners of its server or worker enter."""
        self._skills: dict[str, Skill] = {}
        self.validators: tuple[Validator, ...] = ()
        """What ``validate`` added, run in that order on every incoming message."""
        if max_text_chars is not None:
            self.validate(_text_limit(max_text_chars))
        if validate is not None:
            self.validate(validate)
        if executor is not None:
            self.add_executor(executor)

    # -- declaring skills ---------------------------------------------------------------

    def skill(
        self,
        id: str | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        tags: Sequence[str] = (),
        examples: Sequence[str] = (),
        input_modes: Sequence[str] = (),
        output_modes: Sequence[str] = (),
        scopes: Sequence[str] = (),
        answerable_by: str | Sequence[str] = (),
    ) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
        """Declare an async function as a skill (see the module docstring for its signature).

        ``scopes``: what a caller must be granted to use the skill (OAuth scopes, or roles an
        API key or certificate maps to); a message routed here without them is refused with
        ``PermissionDeniedError``. The card publishes them as the skill's
        ``securityRequirements``.

        ``answerable_by``: a scope (or scopes, all needed) with which a principal other than
        the task's owner, of the same tenant, may answer the skill's questions: while a task
        of the skill is INPUT_REQUIRED, GetTask shows such a principal the question only, and
        its message with the task's id is the answer (``ctx.caller`` is who answered; the
        answer in the history says so). Everything else about the task stays the owner's.
        The card lists it under ``ANSWERABLE_BY_EXTENSION`` (docs/SECURITY.md).
        """
        answerers = _scopes_of(answerable_by, "answerable_by")

        def register(function: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
            if not inspect.iscoroutinefunction(function):
                raise TypeError(f"skill {function.__name__} must be an async function")
            state_type = None if self.lifespan is None else self.lifespan.state_type
            typed = _typed.signature(function, state_type)
            skill_id = id or function.__name__
            doc = inspect.getdoc(function) or ""
            self._add(
                Skill(
                    id=skill_id,
                    name=name or skill_id.replace("_", " "),
                    description=description or doc.split("\n\n")[0] or skill_id,
                    tags=tuple(tags) or (skill_id,),
                    examples=tuple(examples),
                    input_modes=tuple(input_modes)
                    or (() if typed.input_type is None else _typed.input_modes(typed.input_type)),
                    output_modes=tuple(output_modes)
                    or (
                        () if typed.output_type is None else _typed.output_modes(typed.output_type)
                    ),
                    function=function,
                    arguments=typed.arguments,
                    replies_with_message=typed.replies_with_message,
                    scopes=tuple(scopes),
                    answerable_by=answerers,
                    input_type=typed.input_type,
                    output_type=typed.output_type,
                )
            )
            return function

        return register

    def add_executor(
        self,
        executor: AgentExecutor,
        *,
        id: str = "default",
        name: str | None = None,
        description: str | None = None,
        tags: Sequence[str] = (),
        examples: Sequence[str] = (),
        scopes: Sequence[str] = (),
        answerable_by: str | Sequence[str] = (),
    ) -> None:
        """Serve a skill with an executor object whose ``execute(ctx)`` drives the task
        (``scopes`` and ``answerable_by`` as for ``skill``)."""
        answerers = _scopes_of(answerable_by, "answerable_by")
        self._add(
            Skill(
                id=id,
                name=name or id,
                description=description or self.description,
                tags=tuple(tags) or (id,),
                examples=tuple(examples),
                input_modes=(),
                output_modes=(),
                function=None,
                executor=executor,
                scopes=tuple(scopes),
                answerable_by=answerers,
            )
        )

    def on_cancel(
        self, skill_id: str
    ) -> Callable[
        [Callable[[TaskContext], Awaitable[None]]], Callable[[TaskContext], Awaitable[None]]
    ]:
        """Register a cleanup hook, run once when the skill's handler is stopped before it
        finished: by CancelTask (then the task is CANCELED) or by the agent's
        ``task_timeout`` (then it FAILED). It runs after the handler stopped, before that
        state is recorded, within 5 s; it may still emit through the context."""

        def register(
            hook: Callable[[TaskContext], Awaitable[None]],
        ) -> Callable[[TaskContext], Awaitable[None]]:
            skill = self._skills.get(skill_id)
            if skill is None:
                raise ValueError(
                    f"on_cancel: no skill {skill_id!r} is declared (yet); declare it first"
                )
            if skill.replies_with_message:
                raise ValueError(
                    f"on_cancel: {skill_id!r} is a message skill; it creates no task to cancel"
                )
            self._skills[skill_id] = _replace(skill, on_cancel=hook)
            return hook

        return register

    def validate(self, function: Validator) -> Validator:
        """Add a validator (usable as ``@agent.validate``): ``function(message, caller)``
        runs before any task is created or follow-up recorded, on every binding, and refuses
        the message by raising an ``A2AError``, which the caller gets as it is; nothing is
        stored then. ``caller`` is the ``Caller`` sending it (principal, scopes, tenant,
        extensions); ``message.task_id`` is set on a follow-up. Any other exception is a bug:
        the caller gets ``InternalError`` and the server logs it."""
        if not callable(function):
            raise TypeError(f"a validator must be callable, not {type(function).__name__}")
        self.validators = (*self.validators, function)
        return function

    def router(self, function: Router) -> Router:
        """Set the router: a function of the message returning a skill id (or ``None``)."""
        self._router = function
        return function

    def _add(self, skill: Skill) -> None:
        if skill.id in self._skills:
            raise ValueError(f"skill {skill.id!r} is declared twice")
        if skill.answerable_by and not self.requires_authentication:
            # Anonymous callers are all one principal: there would be no one else to answer.
            raise ValueError(
                f"skill {skill.id!r} sets answerable_by, but the agent requires no "
                "authentication that could tell its answerers apart"
            )
        self._skills[skill.id] = skill

    # -- using them ----------------------------------------------------------------------

    @property
    def app_state(self) -> Any:
        """What the running lifespan yielded (``AppStateUnavailableError`` when it is not
        running, or the agent has none)."""
        if self.lifespan is None:
            raise AppStateUnavailableError(f"agent {self.name!r} has no lifespan (lifespan=)")
        return self.lifespan.value

    @property
    def skills(self) -> tuple[Skill, ...]:
        return tuple(self._skills.values())

    def get_skill(self, skill_id: str) -> Skill | None:
        return self._skills.get(skill_id)

    def route(self, message: Message) -> Skill:
        """The skill that handles ``message``; ``InvalidParamsError`` if none accepts it."""
        if not self._skills:
            raise InvalidParamsError("this agent declares no skills")
        if len(self._skills) == 1 and self._router is None:
            return next(iter(self._skills.values()))
        chosen = (self._router or default_router)(message)
        skill = self._skills.get(chosen) if chosen is not None else None
        if skill is None:
            known = ", ".join(sorted(self._skills))
            detail = f"skill {chosen!r} is not one of" if chosen else "no skill was chosen among"
            raise InvalidParamsError(
                f"No skill accepts this message: {detail} {known} "
                '(name one in message.metadata["skill"])'
            )
        return skill

    def input_modes(self, skill: Skill) -> tuple[str, ...]:
        """The media types ``skill`` accepts: its own, else the agent's defaults."""
        return skill.input_modes or self.default_input_modes

    def check_input_modes(self, skill: Skill, message: Message) -> None:
        """Refuse ``message`` (``ContentTypeNotSupportedError``) when one of its parts has a
        media type ``skill`` does not accept, unless ``enforce_input_modes`` is off."""
        if not self.enforce_input_modes:
            return
        modes = self.input_modes(skill)
        uncovered = uncovered_parts(modes, message.parts)
        if not uncovered:
            return
        index, media_type = uncovered[0]
        raise ContentTypeNotSupportedError(
            f"message.parts[{index}] has media type {media_type!r}, which the skill "
            f"{skill.id!r} does not accept (its input modes: {', '.join(modes)})",
            metadata={"mediaType": media_type, "inputModes": " ".join(modes)},
            field_violations=[
                FieldViolation(
                    field=f"message.parts[{i}].mediaType",
                    description=f"{kind} is not one of the accepted input modes",
                )
                for i, kind in uncovered
            ],
        )

    def check_typed_input(self, skill: Skill, message: Message) -> None:
        """Refuse (``InvalidParamsError`` naming the field) the first message of a task of a
        typed skill whose input does not decode to the skill's typed parameter."""
        if skill.input_type is not None:
            _typed.decode_input(skill.input_type, skill.id, message)

    @property
    def requires_authentication(self) -> bool:
        """Whether the card asks callers for credentials (a requirement naming a scheme), so
        a server must be given a verifier for each scheme it names."""
        return any(r.schemes for r in self.security_requirements)

    def card(
        self,
        interfaces: Sequence[AgentInterface],
        *,
        push_notifications: bool = False,
        extended_agent_card: bool = False,
        server_extensions: Sequence[AgentExtension] = (),
    ) -> AgentCard:
        """The agent card advertising ``interfaces`` (in preference order); the
        ``server_extensions`` (behaviours of the server, such as idempotent sends) follow the
        agent's own extensions, unless it declares the same URI itself."""
        return AgentCard(
            name=self.name,
            description=self.description,
            supported_interfaces=list(interfaces),
            provider=self.provider,
            version=self.version,
            documentation_url=self.documentation_url,
            capabilities=AgentCapabilities(
                streaming=self.streaming,
                push_notifications=push_notifications,
                extensions=[
                    *self.extensions,
                    *_not_declared(
                        [
                            *server_extensions,
                            *self._answerable_extension(),
                            *_typed.schemas_extension(
                                (s.id, s.input_type, s.output_type) for s in self._skills.values()
                            ),
                        ],
                        self.extensions,
                    ),
                ],
                extended_agent_card=extended_agent_card,
            ),
            security_schemes=self.security_schemes,
            security_requirements=list(self.security_requirements),
            default_input_modes=list(self.default_input_modes),
            default_output_modes=list(self.default_output_modes),
            skills=[s.card_entry(self.skill_requirements(s)) for s in self._skills.values()],
            icon_url=self.icon_url,
        )

    @property
    def answering_scopes(self) -> tuple[frozenset[str], ...]:
        """Each skill's ``answerable_by`` that is not empty: a caller holding none of them
        answers no one else's task (and the dispatcher looks for none)."""
        return tuple(frozenset(s.answerable_by) for s in self._skills.values() if s.answerable_by)

    def _answerable_extension(self) -> list[AgentExtension]:
        """The card's entry for ``answerable_by`` (none when no skill sets it)."""
        skills = {s.id: list(s.answerable_by) for s in self._skills.values() if s.answerable_by}
        if not skills:
            return []
        return [
            AgentExtension(
                uri=ANSWERABLE_BY_EXTENSION,
                description=(
                    "While a task of one of these skills waits for input, a principal of its "
                    "tenant holding the skill's scopes may see its question and answer it"
                ),
                required=False,
                params={"skills": skills},
            )
        ]

    def skill_requirements(self, skill: Skill) -> list[SecurityRequirement]:
        """A skill's ``securityRequirements``: the card's alternatives, each asking for the
        skill's scopes on its OAuth2/OpenID Connect schemes (on its first scheme when it has
        none, where scopes act as roles)."""
        if not skill.scopes:
            return []
        if not self.security_schemes:
            raise ValueError(
                f"skill {skill.id!r} requires scopes, but the agent declares no security "
                "schemes that could grant them"
            )
        alternatives = [r for r in self.security_requirements if r.schemes] or [
            SecurityRequirement(schemes={name: StringList()}) for name in self.security_schemes
        ]
        scoped: list[SecurityRequirement] = []
        for alternative in alternatives:
            names = [n for n in alternative.schemes if _grants_scopes(self.security_schemes.get(n))]
            targets = names or list(alternative.schemes)[:1]
            scoped.append(
                SecurityRequirement(
                    schemes={
                        name: StringList(list=_union(needed.list, skill.scopes))
                        if name in targets
                        else needed
                        for name, needed in alternative.schemes.items()
                    }
                )
            )
        return scoped


def _scopes_of(scopes: str | Sequence[str], name: str) -> tuple[str, ...]:
    """``scopes`` as a tuple (a bare string is one scope), each a non-empty string."""
    found = (scopes,) if isinstance(scopes, str) else tuple(scopes)
    for scope in found:
        if not isinstance(scope, str) or not scope:
            raise TypeError(f"{name} takes scope names (non-empty str), not {scope!r}")
    return found


def _grants_scopes(scheme: SecurityScheme | None) -> bool:
    return scheme is not None and (
        scheme.oauth2_security_scheme is not None
        or scheme.open_id_connect_security_scheme is not None
    )


def _union(first: Sequence[str], then: Sequence[str]) -> list[str]:
    return [*first, *(scope for scope in then if scope not in first)]


def _text_limit(limit: int) -> Validator:
    """The validator of ``max_text_chars``: at most ``limit`` characters of text."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"max_text_chars must be a positive int, not {limit!r}")

    def check_text_size(message: Message, caller: Caller) -> None:
        size = sum(len(part.text) for part in message.parts if part.text is not None)
        if size > limit:
            raise InvalidParamsError(
                f"The message has {size} characters of text; this agent accepts at most {limit}",
                field_violations=(
                    FieldViolation(
                        field="message.parts", description=f"more than {limit} characters"
                    ),
                ),
            )

    return check_text_size


def _replace(skill: Skill, **changes: Any) -> Skill:
    from dataclasses import replace

    return replace(skill, **changes)


def _not_declared(
    extensions: Sequence[AgentExtension], declared: Sequence[AgentExtension]
) -> list[AgentExtension]:
    """``extensions`` whose URI the agent does not declare itself (its own entry wins)."""
    uris = {e.uri for e in declared}
    return [e for e in extensions if e.uri not in uris]
