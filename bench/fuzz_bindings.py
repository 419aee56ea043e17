"""Fuzz the three bindings of a real peerwire server: N mutated requests each, seeded.

    .venv/bin/python bench/fuzz_bindings.py                     # 100,000 per binding, seed 1
    .venv/bin/python bench/fuzz_bindings.py --count 2000 --seed 7 --bindings jsonrpc,grpc
    .venv/bin/python bench/fuzz_bindings.py --seed 7 --bindings rest --only 1234   # one case

The server runs in a child process (``peerwire.testing.live_server``: peerwire's HTTP server
on 127.0.0.1, gRPC beside it, push notifications on), logging to a file. This process fires
the requests of ``bench/fuzz_cases.py`` at it: raw HTTP/1.1 over keep-alive connections for
JSON-RPC and REST (the bytes as generated, nothing normalised by a client library), a
``grpc.aio`` channel with default options for gRPC. Case ``i`` of a binding depends only on
the seed, the binding and ``i``, so ``--only i`` replays it.

Every answer is checked (``check_jsonrpc``, ``check_rest``, ``check_grpc``) and counted by
what it was. The run fails (exit status 1) on any answer that is not a spec error or a valid
result (a 5xx or an internal error, a malformed body, an unbounded message, gRPC's
RESOURCE_EXHAUSTED), on a request without an answer, and on any traceback or ERROR record in
the server's log. Not part of the test suite (tests/bindings/test_fuzz_*.py run a few hundred
of the same cases in process).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import logging
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httptools

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.fuzz_cases import (  # noqa: E402
    BadAnswer,
    GrpcCase,
    HttpCase,
    check_grpc,
    check_jsonrpc,
    check_rest,
    describe,
    fuzz_agent,
    fuzz_app_options,
    grpc_case,
    jsonrpc_case,
    rest_case,
)

BINDINGS = ("jsonrpc", "rest", "grpc")
CALL_TIMEOUT_S = 30.0
SHOWN_FAILURES = 20


# -- the server (child process) ------------------------------------------------------------------


async def _serve() -> None:
    import httpx

    from peerwire.server.card import CARD_PATH
    from peerwire.testing import live_server

    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    async with live_server(fuzz_agent(), grpc_port=0, **fuzz_app_options()) as url:
        async with httpx.AsyncClient() as http:  # the card says where gRPC listens
            card = (await http.get(url + CARD_PATH)).json()
        grpc_url = next(
            i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"
        )
        print(json.dumps({"url": url, "grpc": grpc_url}), flush=True)
        # Serve until the parent closes stdin.
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


# -- raw HTTP/1.1 --------------------------------------------------------------------------------


class _Response:
    def __init__(self) -> None:
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.complete = False
        self.headers_complete = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_headers_complete(self) -> None:
        self.headers_complete = True

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True


class RawHttp:
    """One keep-alive connection sending requests exactly as generated."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, case: HttpCase) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        lines = [b"%b %b HTTP/1.1" % (case.method.encode(), case.target), b"host: fuzz.test"]
        lines += [b"%b: %b" % (name, value) for name, value in case.headers]
        lines.append(b"content-length: %d" % len(case.body))
        self.writer.write(b"\r\n".join(lines) + b"\r\n\r\n" + case.body)
        response = _Response()
        parser = httptools.HttpResponseParser(response)
        try:
            while not response.complete:
                if case.method == "HEAD" and response.headers_complete:
                    break  # no body follows; the connection is not reused (see below)
                chunk = await self.reader.read(65536)
                if not chunk:
                    raise BadAnswer(f"the server closed the connection: {describe(case)}")
                parser.feed_data(chunk)
        except BaseException:
            self.close()
            raise
        keep = parser.should_keep_alive() and case.method != "HEAD"
        if not keep:
            self.close()
        return parser.get_status_code(), response.headers, b"".join(response.body)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


# -- the run -------------------------------------------------------------------------------------


class Tally:
    def __init__(self, binding: str) -> None:
        self.binding = binding
        self.answers: collections.Counter[str] = collections.Counter()
        self.failures: list[tuple[int, str]] = []
        self.started = time.perf_counter()
        self.elapsed = 0.0

    def fail(self, index: int, why: str) -> None:
        self.failures.append((index, why))
        if len(self.failures) <= SHOWN_FAILURES:
            print(f"  FAIL {self.binding} #{index}: {why}", file=sys.stderr)


async def _first_task(http: RawHttp) -> str:
    message = {"messageId": "fuzz-0", "role": "ROLE_USER", "parts": [{"text": "first"}]}
    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    ).encode()
    headers = ((b"content-type", b"application/json"), (b"a2a-version", b"1.0"))
    _, _, answer = await http.request(HttpCase("POST", b"/", headers, body))
    return str(json.loads(answer)["result"]["task"]["id"])


def _rng(seed: int, binding: str, index: int) -> random.Random:
    return random.Random(f"{seed}:{binding}:{index}")


async def _run_http(
    binding: str,
    url: str,
    indices: list[int],
    seed: int,
    concurrency: int,
    task_ids: list[str],
) -> Tally:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    make: Callable[[random.Random], HttpCase]
    check: Callable[..., str]
    if binding == "jsonrpc":
        make, check = (lambda rng: jsonrpc_case(rng, task_ids)), check_jsonrpc
    else:
        make, check = (lambda rng: rest_case(rng, task_ids)), check_rest
    tally = Tally(binding)
    pending = iter(indices)

    async def worker() -> None:
        http = RawHttp(host, int(port))
        try:
            for index in pending:
                case = make(_rng(seed, binding, index))
                try:
                    async with asyncio.timeout(CALL_TIMEOUT_S):
                        status, headers, body = await http.request(case)
                    tally.answers[check(case, status, headers, body)] += 1
                except BadAnswer as bad:
                    tally.fail(index, f"{bad}\n    request: {describe(case)}")
                except (OSError, TimeoutError) as exc:
                    tally.fail(index, f"no answer ({exc!r})\n    request: {describe(case)}")
        finally:
            http.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    tally.elapsed = time.perf_counter() - tally.started
    return tally


async def _run_grpc(
    address: str, indices: list[int], seed: int, concurrency: int, task_ids: list[str]
) -> Tally:
    import grpc
    import grpc.aio

    from peerwire.bindings.grpc.service import RPCS, SERVICE

    tally = Tally("grpc")
    pending = iter(indices)

    async with grpc.aio.insecure_channel(address) as channel:

        async def call(case: GrpcCase) -> str:
            path = f"/{SERVICE}/{case.rpc}"
            responses: list[bytes] = []
            try:
                if case.rpc in RPCS and RPCS[case.rpc].streaming:
                    stream = channel.unary_stream(path)(
                        case.payload, metadata=case.metadata, timeout=CALL_TIMEOUT_S
                    )
                    responses.extend([response async for response in stream])
                else:
                    responses.append(
                        await channel.unary_unary(path)(
                            case.payload, metadata=case.metadata, timeout=CALL_TIMEOUT_S
                        )
                    )
                code, message, trailers = 0, "", ()
            except grpc.aio.AioRpcError as error:
                code = error.code().value[0]
                message = error.details() or ""
                trailers = tuple(error.trailing_metadata() or ())
            return check_grpc(case, code, message, trailers, responses)

        async def worker() -> None:
            for index in pending:
                case = grpc_case(_rng(seed, "grpc", index), task_ids)
                try:
                    tally.answers[await call(case)] += 1
                except BadAnswer as bad:
                    tally.fail(index, f"{bad}\n    request: {describe(case)}")

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    tally.elapsed = time.perf_counter() - tally.started
    return tally


def _server_log_problems(log: Path) -> list[str]:
    """Tracebacks and ERROR records in the server's log."""
    problems = []
    for line in log.read_text(errors="replace").splitlines():
        if "Traceback" in line or " ERROR " in line or " CRITICAL " in line:
            problems.append(line)
    return problems


def _report(tallies: list[Tally], problems: list[str], seed: int) -> bool:
    print(f"\nseed {seed}")
    ok = not problems
    for tally in tallies:
        total = sum(tally.answers.values()) + len(tally.failures)
        rate = total / tally.elapsed if tally.elapsed else 0.0
        print(f"\n{tally.binding}: {total} requests in {tally.elapsed:.1f} s ({rate:.0f}/s)")
        for label, count in sorted(tally.answers.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {count:8d}  {label}")
        print(f"  {len(tally.failures):8d}  FAILED")
        ok = ok and not tally.failures
    print(f"\nserver log: {len(problems)} tracebacks or ERROR records")
    for line in problems[:SHOWN_FAILURES]:
        print(f"  {line[:300]}")
    print("\nOK" if ok else "\nFAILED")
    return ok


def _start_server(log_path: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with log_path.open("wb") as log:
        return subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
        )


def _stop_server(server: subprocess.Popen[bytes]) -> None:
    assert server.stdin is not None
    server.stdin.close()  # the server's signal to shut down
    try:
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


async def _fuzz(args: argparse.Namespace, where: dict[str, str]) -> list[Tally]:
    http = RawHttp(*where["url"].removeprefix("http://").rsplit(":", 1))
    task_ids = [await _first_task(http)]
    http.close()
    indices = [args.only] if args.only is not None else list(range(args.count))
    tallies = []
    for binding in args.bindings:
        print(f"fuzzing {binding}: {len(indices)} requests ...", file=sys.stderr, flush=True)
        if binding == "grpc":
            tally = await _run_grpc(where["grpc"], indices, args.seed, args.concurrency, task_ids)
        else:
            tally = await _run_http(
                binding, where["url"], indices, args.seed, args.concurrency, task_ids
            )
        tallies.append(tally)
    return tallies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100_000, help="requests per binding")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bindings", default=",".join(BINDINGS))
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight")
    parser.add_argument("--only", type=int, default=None, help="replay the case of this index")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve())
        return
    args.bindings = [b.strip() for b in args.bindings.split(",") if b.strip()]
    unknown = set(args.bindings) - set(BINDINGS)
    if unknown:
        parser.error(f"unknown bindings: {', '.join(sorted(unknown))}")
    if args.only is not None:
        for binding in args.bindings:
            rng = _rng(args.seed, binding, args.only)
            task_ids = ["(the first task)"]
            case: HttpCase | GrpcCase = (
                grpc_case(rng, task_ids)
                if binding == "grpc"
                else jsonrpc_case(rng, task_ids)
                if binding == "jsonrpc"
                else rest_case(rng, task_ids)
            )
            print(f"{binding} #{args.only}: {describe(case, 4000)}")
    with tempfile.TemporaryDirectory(prefix="peerwire-fuzz-") as folder:
        log_path = Path(folder) / "server.log"
        server = _start_server(log_path)
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            if not line:
                raise SystemExit(f"the server did not start:\n{log_path.read_text()}")
            tallies = asyncio.run(_fuzz(args, json.loads(line)))
        finally:
            _stop_server(server)
        ok = _report(tallies, _server_log_problems(log_path), args.seed)
        if not ok:
            kept = Path(tempfile.gettempdir()) / f"peerwire-fuzz-server-{os.getpid()}.log"
            with contextlib.suppress(OSError):
                kept.write_bytes(log_path.read_bytes())
                print(f"server log kept at {kept}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
