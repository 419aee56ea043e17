"""Generate peerwire's gRPC modules from src/peerwire/bindings/grpc/a2a.proto.

    python scripts/gen_grpc.py            # rewrite src/peerwire/bindings/grpc/_gen/
    python scripts/gen_grpc.py --out DIR  # write the same files into DIR instead

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
PROTO = "a2a.proto"
DEFAULT_OUT = PROTO_DIR / "_gen"
GENERATED = ("__init__.py", "a2a_pb2.py", "a2a_pb2.pyi", "a2a_pb2_grpc.py")

_PACKAGE_DOC = (
    '"""Generated from ../a2a.proto by scripts/gen_grpc.py: do not edit, regenerate.\n\n'
    "Importing a2a_pb2 registers the package ``lf.a2a.v1`` in protobuf's default descriptor pool,\n"
    "as a2a-sdk's generated module does: the two cannot be imported into one process.\n"
    '"""\n'
)
_ABSOLUTE_IMPORT = "import a2a_pb2 as a2a__pb2"
_RELATIVE_IMPORT = "from . import a2a_pb2 as a2a__pb2"


def generate(out: Path) -> list[Path]:
    """Write the generated modules into ``out`` (created if needed); return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    well_known = resources.files("grpc_tools") / "_proto"
    args = [
        "grpc_tools.protoc",
        f"--proto_path={PROTO_DIR}",
        f"--proto_path={well_known}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        PROTO,
    ]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed on {PROTO_DIR / PROTO}")
    service = out / "a2a_pb2_grpc.py"
    text = service.read_text()
    if _ABSOLUTE_IMPORT not in text:
        raise SystemExit(f"{service}: protoc's import line changed; update gen_grpc.py")
    service.write_text(text.replace(_ABSOLUTE_IMPORT, _RELATIVE_IMPORT))
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
