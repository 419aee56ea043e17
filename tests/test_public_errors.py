"""Every exception class peerwire makes public is a ``PeerwireError``.

``except PeerwireError`` is the one catch a user needs for anything peerwire raises. Where an
error is also a kind Python already has (``OSError`` for an address that cannot be bound,
``ValueError`` for a refused URL, ``ImportError`` for a missing extra), it keeps that base too,
so code catching the built-in still catches it.
"""

from __future__ import annotations

import importlib
import pickle
import pkgutil
from types import ModuleType

import pytest

import peerwire
from peerwire.errors import PeerwireError


def public_modules() -> list[ModuleType]:
    """Every module of the package whose dotted name has no private part."""
    modules = [peerwire]
    for info in pkgutil.walk_packages(peerwire.__path__, "peerwire."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        modules.append(importlib.import_module(info.name))
    return modules


def public_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for module in public_modules():
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                found[f"{module.__name__}.{name}"] = value
    return found


def test_the_walk_finds_the_exceptions_outside_errors_py() -> None:
    found = {cls.__name__ for cls in public_exceptions().values()}
    # A walk that missed the subpackages would pass vacuously.
    assert {"CannotListenError", "WebhookRefused", "SSEEventTooLarge"} <= found
    assert len(found) > 40


def test_every_public_exception_is_a_peerwire_error() -> None:
    outside = sorted(
        f"{where} ({', '.join(base.__name__ for base in cls.__mro__[1:-1])})"
        for where, cls in public_exceptions().items()
        if not issubclass(cls, PeerwireError)
    )
    assert outside == []


@pytest.mark.parametrize(
    ("module", "name", "builtin"),
    [
        ("peerwire.httpd.server", "CannotListenError", OSError),
        ("peerwire.server.ssrf", "WebhookRefused", ValueError),
        ("peerwire.server.ssrf", "UnresolvableHost", OSError),
        ("peerwire.bindings.sse", "SSEEventTooLarge", ValueError),
        ("peerwire.cluster", "RedisUnavailableError", ConnectionError),
        ("peerwire.ops.metrics", "MetricsUnavailableError", ImportError),
        ("peerwire.server._uvicorn", "UvicornStartError", RuntimeError),
    ],
)
def test_each_keeps_its_builtin_base_and_pickles(
    module: str, name: str, builtin: type[BaseException]
) -> None:
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, PeerwireError)
    assert issubclass(cls, builtin)
    error = cls("what went wrong") if name != "SSEEventTooLarge" else cls("too large", [b"x"])
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is cls
    assert str(again) == str(error)
