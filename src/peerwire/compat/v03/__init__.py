"""A2A 0.3, translated at the edge onto peerwire's one 1.0 model (sans I/O, no asyncio).

Behind every binding there is one Dispatcher, one store and one state machine, all 1.0. A 0.3
request is translated into the 1.0 request it stands for, and the 1.0 answer back into 0.3's
shape; a task started over 0.3 is the same task over 1.0. docs/COMPATIBILITY.md lists every
decision (fields without a counterpart, lossy mappings, how the version is decided).

The modules, and the API other code builds on (stable; each function raises
``InvalidParamsError`` naming the JSON path of what it cannot translate):

``version``
    ``PROTOCOL_VERSION`` (``"0.3"``), ``CARD_PROTOCOL_VERSION`` (``"0.3.0"``),
    ``speaks_v03(version)``, ``names_v1(a2a_version_header)``.
``translate`` -- 0.3 JSON, the JSON-RPC binding's shapes (``kind``-tagged objects, roles
    ``user``/``agent``, kebab-case states, ``final`` on status updates)
    ``X_to_v03(obj) -> dict`` and ``X_from_v03(value, path) -> obj`` for X in ``part``,
    ``message``, ``artifact``, ``task``, ``event`` (StreamResponse), ``send_result``
    (SendMessageResponse), ``send_params`` (SendMessageRequest), ``push_config``
    (TaskPushNotificationConfig); ``state_to_v03`` / ``state_from_v03``, ``role_to_v03`` /
    ``role_from_v03``.
``proto`` -- the 0.3 proto (``a2a.v1``) as ProtoJSON: the HTTP+JSON binding's bodies, and
    gRPC's messages through ``google.protobuf.json_format`` (``MessageToDict`` in,
    ``ParseDict`` out)
    ``X_to_proto(obj) -> dict`` and ``X_from_proto(value, path) -> obj`` for X in
    ``message``, ``task``, ``event``, ``send_result``, ``send_request``, ``push_config``
    (``push_config_from_proto(value, path, task_id=...)``), ``create_push_config``
    (``create_push_config_from_proto(value, path, task_id=...)``), ``list_push_configs``;
    ``state_to_proto`` / ``state_from_proto``; resource names ``task_name(id)``,
    ``config_name(task_id, config_id)``, ``task_id_of_name(name)``,
    ``ids_of_config_name(name)``.
``files`` -- the two forms of proto ``fileWithBytes`` (the content; a2a-sdk's base64 text)
    ``files_in(document, setting)`` / ``files_out(document, form)`` on ProtoJSON documents,
    ``FileBytes`` settings (``"auto"``, ``"content"``, ``"base64"``), ``FORM_KEY``.
``card``
    ``dual_card_document(card, bindings)`` (the one document served to 0.3 and 1.0 clients),
    ``card_to_v03`` / ``card_from_v03`` (0.3 JSON), ``card_to_proto`` / ``card_from_proto``
    (0.3 proto), ``is_v03_card(document)``, ``v03_interfaces(card, bindings)``.
``errors``
    ``error_object(err)`` / ``encode_jsonrpc_error(request_id, err)`` (0.3's ``data``
    object), ``error_from_v03(error_member)``, ``rest_error(err)`` /
    ``rest_error_from(status, body)``.
``jsonrpc`` -- the 0.3 method table onto the 1.0 operations
    ``METHODS``, ``is_v03_method(name)``, ``method_for(operation)``; server:
    ``decode_request(body) -> (request_id, Call)`` (``Call.dispatch`` names the Dispatcher
    method, ``Call.result`` turns its answer into 0.3's); client: ``encode_request``,
    ``decode_result(operation, value)``, ``decode_event(value)``.
``rest`` -- the 0.3 routes (``/v1/...``) onto the 1.0 operations
    server: ``match_route(method, path)``, ``build_request(match, query=, body=,
    file_bytes=)``, ``result_document(route, result)`` then ``encode_result(document,
    file_form)``, ``encode_event(event, file_form)``; client: ``encode_request(operation,
    request, file_form=) -> bindings.rest.HttpRequest``, ``decode_result``, ``decode_event``
    (``file_bytes=``).
``streams`` -- how a 0.3 stream opens in 1.0's terms, for every client transport
    ``opening(first_event, request) -> [events]`` (a Task in front of a send's stream a 0.3
    server opened with an update). Subscriptions: ``client/transports/_v03_follow.py``
    (the Task from GetTask; a refusal of a finished task's as 1.0's).
``grpc``, ``grpc_status`` -- the 0.3 gRPC service's codecs (need grpcio; not imported here).

Plugging a 0.3 transport into the client: ``peerwire.client.register_transport(binding,
factory, protocol_version="0.3")``; the built-in ones are found by (binding, version) in
``client/_registry.py`` (JSON-RPC and REST: ``create_v03_transport`` in their modules; gRPC:
``create_transport`` in ``client/transports/grpc_v03.py``). A transport sets
``protocol_version = "0.3"``; the client then sends ``A2A-Version: 0.3``.
"""
