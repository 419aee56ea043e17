"""Generate peerwire's gRPC modules from the protos in src/peerwire/bindings/grpc/.

    python scripts/gen_grpc.py            # rewrite src/peerwire/bindings/grpc/_gen/
    python scripts/gen_grpc.py --out DIR  # write the same files into DIR instead

Two protos: ``a2a.proto`` (A2A 1.0, package ``lf.a2a.v1``) and ``a2a_v03.proto`` (A2A 0.3,
package ``a2a.v1``), each into modules named after it (``a2a_pb2``, ``a2a_v03_pb2``, ...).

Uses grpc_tools.protoc (the pinned ``grpcio-tools`` of the ``test`` extra, so the output is
reproducible; a test regenerates into a temporary directory and compares byte for byte). protoc
writes ``import a2a_pb2`` into the service module, which only works with the output directory on
``sys.path``; it is rewritten to a package-relative import.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parents[1]
PROTO_DIR = ROOT / "src" / "peerwire" / "bindings" / "grpc"
PROTOS = ("a2a.proto", "a2a_v03.proto")
DEFAULT_OUT = PROTO_DIR / "_gen"
GENERATED = (
    "__init__.py",
    *(
        f"{Path(proto).stem}{suffix}"
        for proto in PROTOS
        for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")
    ),
)

_PACKAGE_DOC = (
    '"""Generated from ../a2a.proto and ../a2a_v03.proto by scripts/gen_grpc.py: do not edit,\n'
    "regenerate.\n\n"
    "Importing a2a_pb2 registers the package ``lf.a2a.v1`` (A2A 1.0) in protobuf's default\n"
    "descriptor pool, as a2a-sdk 1.x's generated module does; importing a2a_v03_pb2 registers\n"
    "``a2a.v1`` (A2A 0.3), as a2a-sdk 0.3's does. Neither SDK can be imported into a process\n"
    "that imported the matching module here.\n"
    '"""\n'
)


def _protoc(proto: str, out: Path) -> None:
    well_known = resources.files("grpc_tools") / "_proto"
    args = [
        "grpc_tools.protoc",
        f"--proto_path={PROTO_DIR}",
        f"--proto_path={well_known}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        proto,
    ]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed on {PROTO_DIR / proto}")
    stem = Path(proto).stem
    service = out / f"{stem}_pb2_grpc.py"
    alias = stem.replace("_", "__") + "__pb2"  # protoc's alias for the messages module
    absolute = f"import {stem}_pb2 as {alias}"
    text = service.read_text()
    if absolute not in text:
        raise SystemExit(f"{service}: protoc's import line changed; update gen_grpc.py")
    service.write_text(text.replace(absolute, f"from . import {stem}_pb2 as {alias}"))


def generate(out: Path) -> list[Path]:
    """Write the generated modules into ``out`` (created if needed); return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    for proto in PROTOS:
        _protoc(proto, out)
    (out / "__init__.py").write_text(_PACKAGE_DOC)
    return [out / name for name in GENERATED]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
