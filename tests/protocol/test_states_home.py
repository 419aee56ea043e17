"""The task state sets have one home, protocol/states.py: no module spells them out again.

A copy drifts the day a state is added or moved; the code base imports ``TERMINAL``,
``INTERRUPTED`` and ``ACTIVE`` (or asks ``is_terminal`` and friends) instead. The inspector's
page, which cannot import them, holds the same sets by name and is compared with them here.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import peerwire
from peerwire.inspect.timeline import short_state
from peerwire.protocol import INTERRUPTED, TERMINAL
from peerwire.types import TaskState

SRC = Path(peerwire.__file__).parent
HOME = SRC / "protocol" / "states.py"
GENERATED = SRC / "bindings" / "grpc" / "_gen"
MEMBERS = frozenset(TaskState.__members__)


def _aliases(tree: ast.Module) -> set[str]:
    """``TaskState`` and the names a module binds to it (``S = TaskState``)."""
    names = {"TaskState"}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id == "TaskState"
        ):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _members_in(node: ast.expr, aliases: set[str]) -> list[str]:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id in {"frozenset", "set", "tuple", "list"} and node.args:
            return _members_in(node.args[0], aliases)
        return []
    if not isinstance(node, ast.Set | ast.Tuple | ast.List):
        return []
    return [
        element.attr
        for element in node.elts
        if isinstance(element, ast.Attribute)
        and isinstance(element.value, ast.Name)
        and element.value.id in aliases
        and element.attr in MEMBERS
    ]


def redeclared_state_sets(source: str) -> list[tuple[int, list[str]]]:
    """Each collection of two or more TaskState members a module writes out: (line, names)."""
    tree = ast.parse(source)
    aliases = _aliases(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.expr):
            members = _members_in(node, aliases)
            if len(members) >= 2:
                found.append((node.lineno, members))
    return found


def test_the_detector_sees_each_way_of_writing_a_set() -> None:
    samples = [
        "X = frozenset({TaskState.COMPLETED, TaskState.FAILED})",
        "X = (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED)",
        "S = TaskState\nX = {S.SUBMITTED, S.WORKING}",
        "def f(s):\n    return s in [TaskState.CANCELED, TaskState.REJECTED]",
    ]
    for sample in samples:
        assert redeclared_state_sets(sample), sample
    # One state, or a set built from the home's own, is no copy.
    assert not redeclared_state_sets("X = TERMINAL - {TaskState.COMPLETED}")
    assert not redeclared_state_sets("X = {1: TaskState.COMPLETED, 2: TaskState.FAILED}")


def test_no_module_outside_states_py_spells_out_a_state_set() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path == HOME or GENERATED in path.parents:
            continue
        for line, members in redeclared_state_sets(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(SRC)}:{line}: {', '.join(members)}")
    assert offenders == [], "import the set from peerwire.protocol.states instead"


def _js_set(source: str, name: str) -> set[str]:
    match = re.search(rf"const {name} = new Set\(\[([^\]]*)\]\);", source)
    assert match is not None, f"conversation.js declares no {name} set"
    return set(re.findall(r'"([A-Z_]+)"', match.group(1)))


def test_the_inspector_page_holds_the_same_sets_as_the_backend() -> None:
    source = (SRC / "inspect" / "static" / "conversation.js").read_text(encoding="utf-8")
    assert _js_set(source, "FINAL") == {short_state(state) for state in TERMINAL}
    assert _js_set(source, "WAITING") == {short_state(state) for state in INTERRUPTED}
    # The page asks the sets, never a state by name, whether a task waits or is over.
    assert '=== "INPUT_REQUIRED"' not in source
    assert '=== "AUTH_REQUIRED"' not in source
