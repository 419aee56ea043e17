"""The Delivery Scheduling Agent: reserves dock time for confirmed purchase orders.

An OpenID Connect-protected card, signed, with a skill that stops to ask which dock
(INPUT_REQUIRED) and one that stops for a warehouse manager's approval (AUTH_REQUIRED). It
needs the ``peerwire[security]`` extra. Run it against your OpenID provider::

    DELIVERY_ISSUER=https://sso.contoh.co.id python -m peerwire.samples.delivery --port 8004

then, with a token for ``--audience`` (default: the public URL) carrying the scopes
``openid delivery.write``::

    peerwire send http://127.0.0.1:8004 \\
        "Book the earliest slot for PO-2026-0184 at the Semarang DC." \\
        --header "Authorization: Bearer $TOKEN"

What it does:

* **Security.** The card's one scheme, ``partner-oidc``, points at the issuer's discovery
  document; every call on every binding needs a bearer token from that issuer, for this
  agent's audience, with ``openid`` and ``delivery.write`` (``OIDCVerifier``).
* **Signed card.** The card is signed at startup with the key in ``$DELIVERY_SIGNING_KEY``
  (a PEM file) or, without one, a P-256 key generated for this run. The public key is served
  at ``/.well-known/card-jwks.json``, the signature's ``jku``: clients verify with
  ``Client.connect(url, trust=Trust(jku_allowlist=[<that URL>]))``.
* **book-delivery-slot.** "Book the earliest slot for PO-2026-0184 at the Semarang DC."
  (or data ``{"purchaseOrder", "distributionCentre"}``): finds the free docks and asks
  "Two docks are free on 11 Sep. Which one, and is a tail lift needed?" (INPUT_REQUIRED).
  The answer on the same task ("Dock 2, tail lift required.") completes it with a
  ``booking`` artifact (JSON).
* **book-after-hours-slot.** A slot outside opening hours needs a warehouse manager's
  approval. The task moves to AUTH_REQUIRED saying so, and waits. The approval arrives out of
  band, not through A2A: a manager ``POST``\\ s to ``/approvals/{taskId}`` with their *own*
  bearer token carrying ``delivery.approve`` (the side channel this sample adds). Then the
  task goes on and completes with the booking, naming the approver. The AUTH_REQUIRED state
  itself grants nothing: the partner's later messages are authenticated as always and do not
  move the task, and the partner's token cannot approve.

Messages go to a skill by ``metadata["skill"]``, else by their words ("after hours",
"overnight", "night" mean the after-hours skill). Schedules, bookings and pending approvals
live in memory (a sample); a restart forgets them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from peerwire import Agent, Message, TaskContext, create_app
from peerwire.errors import A2AError, AuthenticationError, PermissionDeniedError
from peerwire.security import (
    Authenticator,
    CardSigner,
    OIDCVerifier,
    Principal,
    RequestCredentials,
)
from peerwire.server import A2AApp
from peerwire.types import (
    AgentProvider,
    OpenIdConnectSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)

__all__ = [
    "APPROVALS_PATH",
    "CARD_JWKS_PATH",
    "Approval",
    "Approvals",
    "Booking",
    "DeliveryApp",
    "DockSchedule",
    "make_agent",
    "make_app",
    "parse_dock_answer",
    "parse_request",
]

log = logging.getLogger("peerwire.samples.delivery")  # also under python -m

SCHEME = "partner-oidc"
REQUIRED_SCOPES = ("openid", "delivery.write")
APPROVER_SCOPE = "delivery.approve"
CARD_JWKS_PATH = "/.well-known/card-jwks.json"
APPROVALS_PATH = "/approvals/"
MAX_QUESTIONS = 3


# -- the yard ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Booking:
    purchase_order: str
    distribution_centre: str
    dock: int
    day: str
    window: str
    tail_lift: bool
    approved_by: str | None = None

    def as_json(self) -> dict[str, Any]:
        booked: dict[str, Any] = {
            "purchaseOrder": self.purchase_order,
            "distributionCentre": self.distribution_centre,
            "dock": self.dock,
            "day": self.day,
            "window": self.window,
            "tailLift": self.tail_lift,
        }
        if self.approved_by is not None:
            booked["approvedBy"] = self.approved_by
        return booked


@dataclass
class DockSchedule:
    """Free docks per distribution centre on the next delivery day, and what was booked."""

    day: str = "11 Sep"
    opening_hours: str = "08:00-10:00"
    after_hours: str = "22:00-00:00"
    free: dict[str, list[int]] = field(
        default_factory=lambda: {"Semarang": [1, 2], "Surabaya": [3]}
    )
    bookings: list[Booking] = field(default_factory=list)

    def docks(self, centre: str) -> list[int]:
        return list(self.free.get(centre, ()))

    def book(
        self,
        order: str,
        centre: str,
        dock: int,
        *,
        tail_lift: bool,
        after_hours: bool = False,
        approved_by: str | None = None,
    ) -> Booking:
        booking = Booking(
            purchase_order=order,
            distribution_centre=centre,
            dock=dock,
            day=self.day,
            window=self.after_hours if after_hours else self.opening_hours,
            tail_lift=tail_lift,
            approved_by=approved_by,
        )
        if not after_hours:
            self.free[centre].remove(dock)
        self.bookings.append(booking)
        return booking


# -- understanding the partner -----------------------------------------------------------------

_ORDER = re.compile(r"\bPO-\d{4}-\d{3,6}\b", re.IGNORECASE)
_CENTRE = re.compile(r"\b(?:at|to|for)\s+(?:the\s+)?([A-Z][\w-]*)\s+(?:DC|distribution centre)\b")
_DOCK = re.compile(r"\bdock\s*#?\s*(\d+)\b", re.IGNORECASE)
_NO_TAIL_LIFT = re.compile(
    r"\b(?:no|without(?: a)?)\s+tail[- ]?lift\b|\btail[- ]?lift\s+(?:is\s+)?not\b",
    re.IGNORECASE,
)
_TAIL_LIFT = re.compile(r"\btail[- ]?lift\b", re.IGNORECASE)
_AFTER_HOURS = re.compile(r"\b(?:after[- ]hours|overnight|night)\b", re.IGNORECASE)


@dataclass(frozen=True)
class DeliveryRequest:
    purchase_order: str | None
    distribution_centre: str | None


def parse_request(text: str, data: Any = None) -> DeliveryRequest:
    """The purchase order and distribution centre a request names (data wins over words)."""
    fields = data if isinstance(data, dict) else {}
    order = fields.get("purchaseOrder")
    centre = fields.get("distributionCentre")
    if not isinstance(order, str):
        found = _ORDER.search(text)
        order = found.group(0).upper() if found else None
    if not isinstance(centre, str):
        found = _CENTRE.search(text)
        centre = found.group(1) if found else None
    return DeliveryRequest(order, centre)


def parse_dock_answer(text: str, docks: Sequence[int]) -> tuple[int, bool] | None:
    """The dock (one of ``docks``) and whether a tail lift is needed, or None if unclear."""
    found = _DOCK.search(text)
    if found is None or int(found.group(1)) not in docks:
        return None
    tail_lift = _TAIL_LIFT.search(text) is not None and _NO_TAIL_LIFT.search(text) is None
    return int(found.group(1)), tail_lift


def route(message: Message) -> str | None:
    """``metadata["skill"]`` when given, else the after-hours skill when the words say so."""
    named = (message.metadata or {}).get("skill")
    if isinstance(named, str):
        return named
    return "book-after-hours-slot" if _AFTER_HOURS.search(message.text) else "book-delivery-slot"


def _docks_phrase(docks: Sequence[int]) -> str:
    words = {1: "One dock is", 2: "Two docks are", 3: "Three docks are"}
    return words.get(len(docks), f"{len(docks)} docks are")


# -- approvals, out of band --------------------------------------------------------------------


@dataclass(frozen=True)
class Approval:
    task_id: str
    approver: str


class Approvals:
    """Manager approvals for after-hours bookings: expected by the handler, given by a manager
    through the side channel (``DeliveryApp``), never through A2A."""

    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[Approval]] = {}

    def expect(self, task_id: str) -> asyncio.Future[Approval]:
        """Register before the task asks, so an approval cannot arrive too early."""
        waiting = self._pending.get(task_id)
        if waiting is None or waiting.done():
            waiting = self._pending[task_id] = asyncio.get_running_loop().create_future()
        return waiting

    def approve(self, task_id: str, approver: Principal) -> bool:
        """Record a manager's approval; False when no task waits for one under that id."""
        waiting = self._pending.pop(task_id, None)
        if waiting is None or waiting.done():
            return False
        waiting.set_result(Approval(task_id, approver.id))
        return True

    def forget(self, task_id: str) -> None:
        waiting = self._pending.pop(task_id, None)
        if waiting is not None:
            waiting.cancel()


# -- the agent ---------------------------------------------------------------------------------


def make_agent(
    discovery_url: str,
    *,
    schedule: DockSchedule | None = None,
    approvals: Approvals | None = None,
    approvals_url: str = APPROVALS_PATH,
) -> Agent:
    """The agent, protected by the OpenID provider whose discovery document is at
    ``discovery_url``; ``approvals_url`` is where managers approve (said in AUTH_REQUIRED)."""
    yard = schedule if schedule is not None else DockSchedule()
    pending = approvals if approvals is not None else Approvals()
    agent = Agent(
        "Delivery Scheduling Agent",
        description="Reserves dock time against warehouse capacity for a confirmed purchase order.",
        version="1.4.0",
        provider=AgentProvider(organization="Contoh Logistik", url="https://erp.contoh.co.id"),
        default_input_modes=("application/json", "text/plain"),
        default_output_modes=("application/json",),
        security_schemes={
            SCHEME: SecurityScheme(
                open_id_connect_security_scheme=OpenIdConnectSecurityScheme(
                    open_id_connect_url=discovery_url
                )
            )
        },
        security_requirements=[
            SecurityRequirement(schemes={SCHEME: StringList(list=list(REQUIRED_SCOPES))})
        ],
        router=route,
    )

    @agent.skill(
        "book-delivery-slot",
        name="Book a delivery slot",
        description="Reserves a dock and a time window for a confirmed purchase order.",
        tags=["logistics", "scheduling", "erp"],
        examples=["Book the earliest slot for PO-2026-0184 at the Semarang DC."],
        input_modes=["application/json", "text/plain"],
        output_modes=["application/json"],
    )
    async def book(ctx: TaskContext) -> dict[str, Any] | None:
        request = await _complete_request(ctx)
        docks = yard.docks(request.distribution_centre or "")
        if request.purchase_order is None or request.distribution_centre is None or not docks:
            await ctx.reject(_cannot_book(request, docks))
            return None
        question = (
            f"{_docks_phrase(docks)} free on {yard.day}. Which one, and is a tail lift needed?"
        )
        for _ in range(MAX_QUESTIONS):
            choice = parse_dock_answer((await ctx.ask(question)).text, docks)
            if choice is not None:
                dock, tail_lift = choice
                booking = yard.book(
                    request.purchase_order, request.distribution_centre, dock, tail_lift=tail_lift
                )
                await ctx.add_artifact(booking.as_json(), name="booking", artifact_id="booking")
                await ctx.complete(f"Dock {dock} is booked for {request.purchase_order}.")
                return None
            listed = ", ".join(f"Dock {d}" for d in docks)
            question = f"Please name one of {listed}, and say whether a tail lift is needed."
        await ctx.reject("No free dock was chosen; send a new request to start again.")
        return None

    @agent.skill(
        "book-after-hours-slot",
        name="Book an after-hours delivery slot",
        description=(
            "Reserves a dock outside opening hours for a confirmed purchase order; a "
            "warehouse manager must approve it first."
        ),
        tags=["logistics", "scheduling", "erp", "approval"],
        examples=["Book an after-hours slot for PO-2026-0190 at the Semarang DC."],
        input_modes=["application/json", "text/plain"],
        output_modes=["application/json"],
    )
    async def book_after_hours(ctx: TaskContext) -> dict[str, Any] | None:
        request = await _complete_request(ctx)
        docks = yard.docks(request.distribution_centre or "")
        if request.purchase_order is None or request.distribution_centre is None or not docks:
            await ctx.reject(_cannot_book(request, docks))
            return None
        approval = pending.expect(ctx.task_id)
        try:
            await ctx.require_auth(
                f"A delivery at {yard.after_hours} needs a warehouse manager's approval. A "
                f"manager approves task {ctx.task_id} with their own credentials at "
                f"{approvals_url}{ctx.task_id}; this task goes on once they have."
            )
            approved = await approval
        finally:
            pending.forget(ctx.task_id)
        await ctx.start_work(f"Approved by {approved.approver}")
        booking = yard.book(
            request.purchase_order,
            request.distribution_centre,
            docks[0],
            tail_lift=False,
            after_hours=True,
            approved_by=approved.approver,
        )
        await ctx.add_artifact(booking.as_json(), name="booking", artifact_id="booking")
        await ctx.complete(
            f"Dock {booking.dock} is booked at {booking.window} for {request.purchase_order}, "
            f"approved by {approved.approver}."
        )
        return None

    return agent


async def _complete_request(ctx: TaskContext) -> DeliveryRequest:
    """The request, asking for what it lacks (at most ``MAX_QUESTIONS`` times)."""
    request = parse_request(ctx.message.text, ctx.message.data)
    for _ in range(MAX_QUESTIONS):
        if request.purchase_order is not None and request.distribution_centre is not None:
            break
        missing = (
            "Which purchase order (PO-YYYY-NNNN)?"
            if request.purchase_order is None
            else "At which distribution centre (e.g. the Semarang DC)?"
        )
        answer = await ctx.ask(missing)
        more = parse_request(answer.text, answer.data)
        request = DeliveryRequest(
            request.purchase_order or more.purchase_order,
            request.distribution_centre or more.distribution_centre or _bare_centre(answer.text),
        )
    return request


def _bare_centre(text: str) -> str | None:
    words = text.strip().rstrip(".").split()
    return words[0] if len(words) == 1 and words[0][:1].isupper() else None


def _cannot_book(request: DeliveryRequest, docks: Sequence[int]) -> str:
    if request.purchase_order is None:
        return "No purchase order was named; a delivery slot is booked for a confirmed one."
    if request.distribution_centre is None:
        return f"No distribution centre was named for {request.purchase_order}."
    return f"No dock is free at the {request.distribution_centre} DC."


# -- the application: the agent, its signed card's JWKS, and the approvals side channel -------


class DeliveryApp:
    """The agent's ``A2AApp`` with two routes beside it: the card signature's JWKS
    (``CARD_JWKS_PATH``) and the approvals side channel (``POST APPROVALS_PATH{taskId}``,
    authenticated with the same OpenID provider, requiring ``delivery.approve``)."""

    def __init__(
        self, a2a: A2AApp, *, jwks: dict[str, Any], approvals: Approvals, approvers: Authenticator
    ) -> None:
        self.a2a = a2a
        self.dispatcher = a2a.dispatcher  # what the HTTP server drains on shutdown
        self.approvals = approvals
        self._approvers = approvers
        self._jwks = json.dumps(jwks).encode()

    def lifespan(self) -> Any:
        return self.a2a.lifespan()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            if path == CARD_JWKS_PATH:
                await _answer(send, 200, self._jwks, [(b"cache-control", b"max-age=300")])
                return
            if path.startswith(APPROVALS_PATH):
                await self._approve(scope, send, path[len(APPROVALS_PATH) :])
                return
        await self.a2a(scope, receive, send)

    async def _approve(self, scope: dict[str, Any], send: Any, task_id: str) -> None:
        if scope["method"] != "POST":
            await _answer(send, 405, _problem("use POST"), [(b"allow", b"POST")])
            return
        try:
            approver = await self._approvers.authenticate(RequestCredentials.from_asgi(scope))
        except (AuthenticationError, PermissionDeniedError) as refused:
            status = 401 if isinstance(refused, AuthenticationError) else 403
            challenge = refused.www_authenticate or self._approvers.challenge()
            headers = [(b"www-authenticate", challenge.encode("latin-1"))]
            await _answer(send, status, _problem(refused.message), headers)
            return
        except A2AError as unavailable:  # the issuer cannot be reached: try again later
            await _answer(send, 503, _problem(unavailable.message))
            return
        if not self.approvals.approve(task_id, approver):
            await _answer(send, 404, _problem(f"No task {task_id!r} is waiting for approval"))
            return
        log.info("delivery: %s approved task %s", approver.id, task_id)
        await _answer(
            send, 200, json.dumps({"taskId": task_id, "approvedBy": approver.id}).encode()
        )


def _problem(message: str) -> bytes:
    return json.dumps({"error": message}).encode()


async def _answer(
    send: Any, status: int, body: bytes, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    start = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": [*start, *headers]})
    await send({"type": "http.response.body", "body": body})


def make_app(
    public_url: str,
    *,
    issuer: str,
    audience: str | None = None,
    signing_key: Any = None,
    schedule: DockSchedule | None = None,
    oidc_options: dict[str, Any] | None = None,
    **create_app_options: Any,
) -> DeliveryApp:
    """The delivery agent served at ``public_url``, trusting tokens of the OpenID provider
    ``issuer`` for ``audience`` (default ``public_url``). ``signing_key`` signs the card (a
    PEM, JWK or joserfc key; default: a P-256 key made now). ``oidc_options`` go to the
    ``OIDCVerifier``, the rest to ``create_app``."""
    base = public_url.rstrip("/")
    discovery_url = issuer.rstrip("/") + "/.well-known/openid-configuration"
    approvals = Approvals()
    agent = make_agent(
        discovery_url,
        schedule=schedule,
        approvals=approvals,
        approvals_url=base + APPROVALS_PATH,
    )
    verifier = OIDCVerifier(audience=audience or base, **(oidc_options or {}))
    signer = CardSigner(_signing_key(signing_key), jku=base + CARD_JWKS_PATH)
    a2a = create_app(
        agent,
        public_url=base,
        auth={SCHEME: verifier},
        signing_key=signer,
        **create_app_options,
    )
    approvers = Authenticator(
        agent.security_schemes,
        [SecurityRequirement(schemes={SCHEME: StringList(list=[APPROVER_SCOPE])})],
        {SCHEME: verifier},
        realm="Delivery approvals",
    )
    return DeliveryApp(a2a, jwks=signer.public_jwks(), approvals=approvals, approvers=approvers)


def _signing_key(key: Any) -> Any:
    if key is not None:
        return key
    from joserfc.jwk import ECKey

    return ECKey.generate_key("P-256")


# -- running it --------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m peerwire.samples.delivery", description=__doc__
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8004)
    parser.add_argument("--public-url", help="the base URL the card advertises")
    parser.add_argument("--issuer", default=os.environ.get("DELIVERY_ISSUER"))
    parser.add_argument("--audience", default=os.environ.get("DELIVERY_AUDIENCE"))
    parser.add_argument("--signing-key", default=os.environ.get("DELIVERY_SIGNING_KEY"))
    parser.add_argument("--grpc-port", type=int, default=0, help="0: a free port")
    options = parser.parse_args(argv)
    if not options.issuer:
        parser.error("name the OpenID provider: --issuer or $DELIVERY_ISSUER")
    public_url = options.public_url or f"http://{options.host}:{options.port}"
    key = Path(options.signing_key).read_text() if options.signing_key else None
    app = make_app(
        public_url,
        issuer=options.issuer,
        audience=options.audience,
        signing_key=key,
        grpc_host=options.host,
        grpc_port=options.grpc_port,
    )
    from peerwire.httpd import HTTPServer

    HTTPServer(app).run(host=options.host, port=options.port)


if __name__ == "__main__":
    main()
