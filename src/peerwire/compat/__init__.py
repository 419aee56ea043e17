"""Other versions of the A2A protocol, translated at the edge onto the one 1.0 model.

``peerwire.compat.v03`` speaks A2A 0.3: its JSON-RPC and HTTP+JSON shapes (and the proto
shape the gRPC binding shares) to and from ``peerwire.types``. Everything behind a binding
(the Dispatcher, the store, the state machine) sees 1.0 only.
"""
