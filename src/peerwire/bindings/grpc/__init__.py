"""The gRPC binding (facts §6.3): our own ``a2a.proto`` (package ``lf.a2a.v1``), the modules
generated from it in ``_gen/``, converters to and from ``peerwire.types`` (``convert``), the rpc
table (``service``) and the error status codec (``status``).

Needs the ``grpc`` extra. Importing the generated module registers ``lf.a2a.v1`` in protobuf's
default descriptor pool, exactly as a2a-sdk's does, so peerwire's gRPC binding and a2a-sdk cannot
be imported into the same process.
"""
