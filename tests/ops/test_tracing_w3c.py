"""peerwire's own reading and writing of W3C trace context agrees with OpenTelemetry's.

While OpenTelemetry's default propagator is the global one, peerwire reads a plain
``traceparent`` and writes the ``Client``'s itself (docs/OPERATIONS.md, "Traces"). Here every
kind of carrier (valid, malformed, all-zero ids, another version, padded, with
``tracestate`` or ``baggage``, repeated) is given to a server span and to the propagator, and
the parent each finds must be the same; a client's headers must be the propagator's, with and
without baggage, and once another propagator is installed it is the one used. In a child
process: the global TracerProvider can be set only once per process, and a traced process
would trace every other test's calls.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import json

    from opentelemetry import baggage, context, propagate, trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from peerwire import Agent
    from peerwire.ops import tracing
    from peerwire.server import create_app

    # Every span recorded, whatever its parent's flags: each keeps the parent it was given.
    trace.set_tracer_provider(TracerProvider(sampler=ALWAYS_ON))
    assert tracing.refresh()
    agent = Agent("W3C", description="Reads trace context.")

    @agent.skill("echo", name="echo", description="Echo.")
    async def echo(text: str) -> str:
        return text

    card = create_app(agent, store="memory").dispatcher.card
    spans = tracing.ServerSpans("JSONRPC", "1.0", card)

    ID, PARENT = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    values = [
        f"00-{ID}-{PARENT}-01",
        f"00-{ID}-{PARENT}-00",
        f"00-{ID}-{PARENT}-03",
        f"00-{'0' * 32}-{PARENT}-01",
        f"00-{ID}-{'0' * 16}-01",
        f"00-{ID.upper()}-{PARENT}-01",
        f" 00-{ID}-{PARENT}-01",
        f"01-{ID}-{PARENT}-01-later",
        f"00-{ID}-{PARENT}-01-extra",
        f"ff-{ID}-{PARENT}-01",
        f"00-{ID[:-1]}_-{PARENT}-01",
        "garbage",
        "",
    ]
    carriers = []
    for value in values:
        raw = value.encode()
        carriers += [
            [(b"traceparent", raw)],
            [("traceparent", value)],  # gRPC metadata: str names
            [(b"traceparent", raw), (b"tracestate", b"k=v")],
            [(b"traceparent", raw), (b"baggage", b"user=u1")],
            [(b"traceparent", raw), (b"traceparent", raw)],
        ]

    def expected(carrier):
        sent = {}
        for name, value in carrier:
            key = name.decode() if isinstance(name, bytes) else name
            text = value.decode() if isinstance(value, bytes) else value
            sent[key] = f"{sent[key]},{text}" if key in sent else text
        found = trace.get_current_span(propagate.extract(sent)).get_span_context()
        if not found.is_valid:
            return None
        return [found.trace_id, found.span_id, found.trace_flags, found.is_remote]

    def parent_of(carrier):
        call = spans.start("send_message", carrier, None)
        parent = call.span.parent
        call.span.end()
        if parent is None:
            return None
        return [parent.trace_id, parent.span_id, parent.trace_flags, parent.is_remote]

    server = [[parent_of(c), expected(c)] for c in carriers]

    def injected(call):
        carrier = {"x": "1"}
        propagate.inject(carrier, context=trace.set_span_in_context(call.span))
        return carrier

    tracer = trace.get_tracer("test")
    calls = [
        tracing.ClientCall(tracer.start_span("recorded")),
        tracing.ClientCall(TracerProvider(sampler=ALWAYS_OFF).get_tracer("t").start_span("out")),
        tracing.ClientCall(trace.INVALID_SPAN),
        tracing.ClientCall(
            trace.NonRecordingSpan(
                trace.SpanContext(5, 6, True, trace.TraceFlags(1), trace.TraceState([("k", "v")]))
            )
        ),
    ]
    client = [[call.headers({"x": "1"}), injected(call)] for call in calls]
    token = context.attach(baggage.set_baggage("user", "u1"))
    client += [[call.headers({"x": "1"}), injected(call)] for call in calls]
    context.detach(token)

    # Another propagator installed after the provider was found: it is the one used.
    class Marking(TraceContextTextMapPropagator):
        def inject(self, carrier, context=None, setter=None):
            carrier["marked"] = "yes"

    propagate.set_global_textmap(Marking())
    marked = calls[0].headers({})
    print(json.dumps({"server": server, "client": client, "marked": marked}))
    """
)


def test_peerwire_reads_and_writes_w3c_trace_context_as_opentelemetry_does() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    found = json.loads(done.stdout)
    for mine, theirs in found["server"]:
        assert mine == theirs
    # The carriers covered both outcomes: a remote parent, and a new trace.
    assert any(theirs is not None for _, theirs in found["server"])
    assert any(theirs is None for _, theirs in found["server"])
    for mine, theirs in found["client"]:
        assert mine == theirs
    assert any("baggage" in theirs for _, theirs in found["client"])
    assert any("tracestate" in theirs for _, theirs in found["client"])
    assert found["marked"] == {"marked": "yes"}
