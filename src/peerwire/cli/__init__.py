"""The ``peerwire`` command line (typer + rich). Each command lives in its own module."""

from __future__ import annotations

from . import serve as _serve  # noqa: F401  (registers the command)
from ._app import app

__all__ = ["app", "main"]


def main() -> None:
    app()
