"""The ``peerwire`` command line (typer + rich). Each command lives in its own module."""

from __future__ import annotations

# Importing a command module registers its command on the app.
from . import cancel as _cancel  # noqa: F401
from . import card as _card  # noqa: F401
from . import check as _check  # noqa: F401
from . import db as _db  # noqa: F401
from . import delegations as _delegations  # noqa: F401
from . import demo as _demo  # noqa: F401
from . import get as _get  # noqa: F401
from . import inspect_ as _inspect  # noqa: F401
from . import list_ as _list  # noqa: F401
from . import send as _send  # noqa: F401
from . import serve as _serve  # noqa: F401
from . import subscribe as _subscribe  # noqa: F401
from . import worker as _worker  # noqa: F401
from ._app import app
from ._logs import exits_logged

__all__ = ["app", "main"]


def main() -> None:
    with exits_logged():
        app()
