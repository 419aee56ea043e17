"""The gRPC binding (A2A spec §10): our own ``a2a.proto`` (package ``lf.a2a.v1``), the modules
generated from it in ``_gen/``, converters to and from ``peerwire.types`` (``convert``), the rpc
table (``service``) and the error status codec (``status``).

``a2a_v03.proto`` is our A2A 0.3 proto (package ``a2a.v1``), generated into the same ``_gen/``;
its rpcs are translated onto the 1.0 operations by ``peerwire.compat.v03.grpc``.

Needs the ``grpc`` extra. Importing the generated modules registers ``lf.a2a.v1`` and
``a2a.v1`` in protobuf's default descriptor pool, exactly as a2a-sdk's do, so peerwire's gRPC
binding and a2a-sdk (1.x, or 0.3) cannot be imported into the same process.
"""
