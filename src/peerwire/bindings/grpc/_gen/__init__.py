"""Generated from ../a2a.proto and ../a2a_v03.proto by scripts/gen_grpc.py: do not edit,
regenerate.

Importing a2a_pb2 registers the package ``lf.a2a.v1`` (A2A 1.0) in protobuf's default
descriptor pool, as a2a-sdk 1.x's generated module does; importing a2a_v03_pb2 registers
``a2a.v1`` (A2A 0.3), as a2a-sdk 0.3's does. Neither SDK can be imported into a process
that imported the matching module here.
"""
