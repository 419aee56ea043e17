"""peerwire.protocol is sans-I/O: importing it pulls in no event loop, network or database code.

Checked twice: dynamically, in fresh interpreters (a baseline that imports only what the protocol
layer builds on, ``peerwire.types`` and ``peerwire.errors``, against one that also imports every
protocol module), and statically, by reading the import statements of every module's source.

The package root ``peerwire/__init__.py`` re-exports the server (``Agent``, ``serve``), so a plain
``import peerwire.types`` already loads asyncio, anyio and socket. Against that baseline the
dynamic comparison could not see the protocol layer importing them. The decisive probe therefore
registers a bare ``peerwire`` package (its ``__init__`` not run) before importing the submodules;
the probe through the real package root is kept, and is only meaningful for modules the root
does not already load (httpx, starlette, uvicorn, grpc, sqlite3 today).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import peerwire.protocol

FORBIDDEN = ("asyncio", "httpx", "starlette", "uvicorn", "grpc", "anyio", "sqlite3", "socket")
PROTOCOL_DIR = Path(peerwire.protocol.__file__).resolve().parent
MODULES = sorted(
    f"peerwire.protocol.{p.stem}" for p in PROTOCOL_DIR.glob("*.py") if p.stem != "__init__"
)

_PROBE = """
import importlib, importlib.util, json, sys, types
isolated, names = sys.argv[1] == "isolated", sys.argv[2:]
if isolated:  # a bare package: submodules import, peerwire/__init__.py does not run
    spec = importlib.util.find_spec("peerwire")
    package = types.ModuleType("peerwire")
    package.__path__ = list(spec.submodule_search_locations)
    package.__spec__ = spec
    sys.modules["peerwire"] = package
for name in names:
    importlib.import_module(name)
print(json.dumps(sorted(sys.modules)))
"""


def _modules_after_importing(*names: str, isolated: bool = True) -> set[str]:
    mode = "isolated" if isolated else "package"
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, mode, *names],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return set(json.loads(result.stdout))


def _forbidden(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in FORBIDDEN}


def test_there_are_protocol_modules_to_check() -> None:
    assert {
        "peerwire.protocol.continuation",
        "peerwire.protocol.fold",
        "peerwire.protocol.history",
        "peerwire.protocol.negotiation",
        "peerwire.protocol.paging",
        "peerwire.protocol.states",
    } <= set(MODULES)


BASE = ("peerwire.types", "peerwire.errors")


def test_importing_the_protocol_layer_adds_no_io_modules() -> None:
    baseline = _modules_after_importing(*BASE)
    loaded = _modules_after_importing(*BASE, "peerwire.protocol", *MODULES)
    assert set(MODULES) <= loaded  # the probe really imported them
    assert "peerwire.server" not in loaded
    assert _forbidden(loaded - baseline) == set()


def test_the_baseline_itself_is_free_of_io_modules() -> None:
    # msgspec, peerwire.types and peerwire.errors load none of them; were that to change, the
    # comparison above would silently excuse the protocol layer too, so it is pinned here.
    assert _forbidden(_modules_after_importing(*BASE)) == set()


def test_protocol_adds_no_io_modules_through_the_real_package_root() -> None:
    baseline = _modules_after_importing(*BASE, isolated=False)
    loaded = _modules_after_importing(*BASE, "peerwire.protocol", *MODULES, isolated=False)
    assert set(MODULES) <= loaded
    assert _forbidden(loaded - baseline) == set()


def _imports(path: Path) -> list[tuple[int, str]]:
    """(level, module) of every import statement; level > 0 is a relative import."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((0, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or ""))
    return found


def test_sources_import_no_io_module() -> None:
    offending = [
        f"{path.name}: {module}"
        for path in sorted(PROTOCOL_DIR.glob("*.py"))
        for level, module in _imports(path)
        if level == 0 and module.split(".")[0] in FORBIDDEN
    ]
    assert offending == []


def test_relative_imports_stay_inside_types_errors_and_protocol() -> None:
    siblings = {p.stem for p in PROTOCOL_DIR.glob("*.py")}
    offending = []
    for path in sorted(PROTOCOL_DIR.glob("*.py")):
        for level, module in _imports(path):
            head = module.split(".")[0]
            if level == 1 and head not in siblings | {""}:
                offending.append(f"{path.name}: .{module}")
            if level == 2 and head not in {"types", "errors"}:
                offending.append(f"{path.name}: ..{module}")
            if level > 2:
                offending.append(f"{path.name}: {'.' * level}{module}")
    assert offending == []


def test_sources_do_not_import_dynamically() -> None:
    offending = []
    for path in sorted(PROTOCOL_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name in {"__import__", "import_module"}:
                    offending.append(f"{path.name}:{node.lineno}")
    assert offending == []
