"""``.ci/run``'s ``ensure_node``: a machine without Node.js gets Debian's ``nodejs`` and ``npm``.

The function is taken from the script as it is and run by bash with a ``PATH`` of one folder:
bash's tools, and an ``apt-get`` standing in for Debian's (the test must not install or
remove packages on the machine). The stand-in records its arguments and, when told to, puts a
``node`` and an ``npm`` of the given version on that ``PATH``, as the real packages would.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = ("chmod", "cp", "dirname", "sh")


def _function(name: str) -> str:
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    start = lines.index(f"{name}() {{")
    end = lines.index("}", start)
    return "\n".join(lines[start : end + 1])


def _machine(tmp_path: Path, installs: str | None) -> Path:
    """A PATH folder with no node or npm, whose apt-get installs Node.js ``installs``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found is not None, tool
        (bin_dir / tool).symlink_to(found)
    pool = tmp_path / "pool"  # what the stand-in's "packages" put on PATH
    pool.mkdir()
    if installs is not None:
        major = installs.split(".")[0]
        (pool / "node").write_text(
            f'#!/bin/sh\ncase "$1" in -p) echo {major};; *) echo v{installs};; esac\n'
        )
        (pool / "npm").write_text("#!/bin/sh\necho 10.0.0\n")
    install = f'cp "{pool}"/node "{pool}"/npm "$here"/ && chmod +x "$here"/node "$here"/npm'
    (bin_dir / "apt-get").write_text(
        f"""#!/bin/sh
here="$(dirname "$0")"
echo "$*" >> "$here/apt-get.calls"
case "$*" in update*) exit 0;; esac
{install if installs is not None else "exit 100"}
"""
    )
    (bin_dir / "apt-get").chmod(0o755)
    return bin_dir


def _ensure_node(bin_dir: Path) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    assert bash is not None
    return subprocess.run(
        [bash, "-c", _function("ensure_node") + "\nensure_node"],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _calls(bin_dir: Path) -> list[str]:
    return (bin_dir / "apt-get.calls").read_text().splitlines()


def test_missing_node_is_installed_with_apt(tmp_path: Path) -> None:
    bin_dir = _machine(tmp_path, installs="20.19.2")
    ran = _ensure_node(bin_dir)
    assert ran.returncode == 0, ran.stderr
    assert "installing nodejs and npm (apt)" in ran.stderr
    assert _calls(bin_dir) == ["install -y -q nodejs npm"]


@pytest.mark.parametrize("installs", [None, "18.19.0"])
def test_when_apt_cannot_help_it_says_why(tmp_path: Path, installs: str | None) -> None:
    bin_dir = _machine(tmp_path, installs=installs)
    ran = _ensure_node(bin_dir)
    assert ran.returncode == 1
    if installs is None:
        assert "could not be installed with apt" in ran.stderr
        assert _calls(bin_dir) == [
            "install -y -q nodejs npm",
            "update -q",
            "install -y -q nodejs npm",
        ]
    else:
        assert "Node.js >= 20 is needed" in ran.stderr and "found v18.19.0" in ran.stderr
