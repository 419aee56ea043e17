"""Generated from ../a2a.proto by scripts/gen_grpc.py: do not edit, regenerate.

Importing a2a_pb2 registers the package ``lf.a2a.v1`` in protobuf's default descriptor pool,
as a2a-sdk's generated module does: the two cannot be imported into one process.
"""
