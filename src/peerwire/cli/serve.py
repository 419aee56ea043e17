"""``peerwire serve MODULE:ATTR``: serve an agent over HTTP."""

from __future__ import annotations

import importlib
import os
import sys
from datetime import timedelta
from typing import Annotated

import typer

from ..server import Agent, serve
from ..server.app import INTERFACE_NAMES
from ..server.stores import TaskStore, open_store
from ._app import app


def load_agent(target: str) -> Agent:
    """Import ``module:attribute`` (the current directory is importable) and check it."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise typer.BadParameter(f"expected MODULE:ATTR, got {target!r}", param_hint="TARGET")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise typer.BadParameter(
            f"cannot import {module_name!r}: {exc}", param_hint="TARGET"
        ) from None
    agent = getattr(module, attribute, None)
    if not isinstance(agent, Agent):
        raise typer.BadParameter(
            f"{target!r} is not a peerwire Agent (found {type(agent).__name__})",
            param_hint="TARGET",
        )
    return agent


@app.command("serve")
def serve_command(
    target: Annotated[str, typer.Argument(help="The agent to serve, as MODULE:ATTR.")],
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    public_url: Annotated[
        str | None, typer.Option(help="Base URL the card advertises (default http://HOST:PORT).")
    ] = None,
    store: Annotated[
        str,
        typer.Option(
            help="Task store: sqlite:PATH (durable: survives kill -9) or memory (lost on exit)."
        ),
    ] = "sqlite:./peerwire.db",
    retain_finished: Annotated[
        float | None,
        typer.Option(help="Delete finished tasks after this many days (default: keep them)."),
    ] = None,
    max_working: Annotated[
        int, typer.Option(help="Most tasks working at once; more are refused as busy.")
    ] = 10_000,
    shutdown_grace: Annotated[
        float, typer.Option(help="Seconds running tasks get to finish on shutdown.")
    ] = 10.0,
    max_body_bytes: Annotated[int, typer.Option(help="Largest request body accepted.")] = 10
    * 1024
    * 1024,
    lenient_version: Annotated[
        bool, typer.Option(help="Take requests without A2A-Version as 1.0 (not 0.3).")
    ] = False,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "warning",
    grpc: Annotated[bool, typer.Option(help="Also serve gRPC (when grpcio is installed).")] = True,
    grpc_port: Annotated[
        int, typer.Option(help="gRPC port on HOST; 0 picks a free one (the card lists it).")
    ] = 0,
    interfaces: Annotated[
        str,
        typer.Option(help="The card's interfaces in preference order, comma-separated."),
    ] = "jsonrpc,rest,grpc",
) -> None:
    """Serve an agent: its card, JSON-RPC endpoint and streams."""
    task_store = _store(store, retain_finished)
    agent = load_agent(target)
    serve(
        agent,
        host=host,
        port=port,
        public_url=public_url,
        log_level=log_level,
        store=task_store,
        max_working=max_working,
        shutdown_grace=shutdown_grace,
        max_body_bytes=max_body_bytes,
        lenient_version=lenient_version,
        grpc=grpc,
        grpc_port=grpc_port,
        interface_order=_interface_names(interfaces),
    )


def _store(spec: str, retain_days: float | None) -> TaskStore:
    if retain_days is not None and retain_days <= 0:
        raise typer.BadParameter(
            "must be a positive number of days", param_hint="--retain-finished"
        )
    retain = None if retain_days is None else timedelta(days=retain_days)
    try:
        return open_store(spec, retain_finished=retain)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--store") from None


def _interface_names(text: str) -> list[str]:
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in INTERFACE_NAMES]
    if unknown:
        known = ",".join(INTERFACE_NAMES)
        raise typer.BadParameter(
            f"unknown interface(s) {', '.join(unknown)} (known: {known})",
            param_hint="--interfaces",
        )
    return names
