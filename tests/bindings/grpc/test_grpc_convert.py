"""Converters between protobuf and peerwire.types, checked against the ProtoJSON vectors.

For every vector: ours -> protobuf -> ours is the identity (also through bytes); the protobuf
we build equals what protobuf's own JSON parser makes of our ProtoJSON encoding; and
``json_format.MessageToDict`` of it is our encoding, up to what ProtoJSON itself allows to
differ (defaults our types always write, how many fractional digits a timestamp has).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from google.protobuf import json_format

import peerwire.types as types
from peerwire.bindings.grpc._gen import a2a_pb2
from peerwire.bindings.grpc.convert import from_bytes, from_proto, proto_class, to_bytes, to_proto
from peerwire.errors import InvalidParamsError, InvalidRequestError
from peerwire.types import (
    AgentCapabilities,
    ListTasksRequest,
    Message,
    Model,
    MutualTlsSecurityScheme,
    Part,
    Role,
    SecurityScheme,
    Task,
    TaskState,
    TaskStatus,
    decode,
    encode,
)

VECTOR_DIR = Path(__file__).resolve().parents[2] / "vectors"


def _vectors() -> list[Any]:
    params = []
    for path in sorted(VECTOR_DIR.glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        cls = getattr(types, doc["type"], None)
        if "vectors" not in doc or not (isinstance(cls, type) and issubclass(cls, Model)):
            continue  # enums and the error table
        for vector in doc["vectors"]:
            params.append(pytest.param(cls, vector["value"], id=f"{doc['type']}:{vector['name']}"))
    return params


VECTORS = _vectors()


def test_there_is_a_vector_for_every_message() -> None:
    covered = {p.values[0].__name__ for p in VECTORS}
    assert covered == set(a2a_pb2.DESCRIPTOR.message_types_by_name)


def _ours(cls: type[Model], value: Any) -> Model:
    return decode(json.dumps(value).encode(), cls)


def _sorted_json(model: Model) -> Any:
    """Our encoding with object members sorted: protobuf maps keep no order."""
    return json.loads(json.dumps(json.loads(encode(model)), sort_keys=True))


@pytest.mark.parametrize(("cls", "value"), VECTORS)
def test_round_trip_is_the_identity(cls: type[Model], value: Any) -> None:
    ours = _ours(cls, value)
    message = to_proto(ours)
    assert type(message) is proto_class(cls)
    back = from_proto(message, cls)
    assert back == ours
    assert _sorted_json(back) == _sorted_json(ours)
    assert from_bytes(to_bytes(ours), cls) == ours


@pytest.mark.parametrize(("cls", "value"), VECTORS)
def test_protobufs_json_parser_reads_our_encoding_as_the_same_message(
    cls: type[Model], value: Any
) -> None:
    ours = _ours(cls, value)
    parsed = json_format.ParseDict(json.loads(encode(ours)), proto_class(cls)())
    assert to_proto(ours) == parsed
    assert from_proto(parsed, cls) == ours


@pytest.mark.parametrize(("cls", "value"), VECTORS)
def test_message_to_dict_is_our_protojson(cls: type[Model], value: Any) -> None:
    ours = _ours(cls, value)
    message = to_proto(ours)
    expected = _as_protojson_prints(json.loads(encode(ours)), message.DESCRIPTOR)
    assert json_format.MessageToDict(message) == expected


def _as_protojson_prints(value: Any, descriptor: Any) -> Any:
    """Our JSON as protobuf's printer writes it: fields without presence are omitted at their
    default (our types always write REQUIRED ones, and every ListTasksResponse member), and a
    timestamp with whole seconds has no fraction."""
    if not isinstance(value, dict):
        return value
    out = {}
    fields = {f.json_name: f for f in descriptor.fields}
    for key, member in value.items():
        field = fields[key]
        if not field.has_presence and member in ("", 0, False, [], {}):
            continue
        message_type = field.message_type
        if message_type is None:
            out[key] = member
        elif message_type.full_name == "google.protobuf.Timestamp":
            out[key] = member.replace(".000Z", "Z")
        elif message_type.GetOptions().map_entry:
            value_type = message_type.fields_by_name["value"].message_type
            out[key] = {
                k: v if value_type is None else _as_protojson_prints(v, value_type)
                for k, v in member.items()
            }
        elif message_type.full_name.startswith("google.protobuf."):
            out[key] = member  # Struct / Value: free-form JSON
        elif field.is_repeated:
            out[key] = [_as_protojson_prints(item, message_type) for item in member]
        else:
            out[key] = _as_protojson_prints(member, message_type)
    return out


# --- the well-known types -----------------------------------------------------------------------


def _part_data(data: Any) -> Any:
    return from_bytes(to_bytes(Part(data=data)), Part).data


@pytest.mark.parametrize(
    "data",
    [None, True, "text", 0, 7, -3, 0.5, 1e300, [], {}, [1, "two", None, {"three": [3.25]}]],
    ids=repr,
)
def test_part_data_keeps_every_json_value(data: Any) -> None:
    assert _part_data(data) == data
    assert type(_part_data(data)) is type(data)


def test_integral_numbers_come_back_as_ints_within_the_safe_range() -> None:
    assert _part_data({"n": 2**53}) == {"n": 2**53}
    assert isinstance(_part_data({"n": 2**53})["n"], int)
    # Beyond 2**53 a double is not exact: it stays a float rather than pretending.
    assert isinstance(_part_data({"n": 2**60})["n"], float)
    assert _part_data(2.0) == 2 and isinstance(_part_data(2.0), int)


def test_part_data_null_is_set_not_absent() -> None:
    message = to_proto(Part(data=None))
    assert message.WhichOneof("content") == "data"
    assert from_proto(message, Part).data is None


def test_metadata_members_come_back_sorted() -> None:
    metadata = {"zeta": 1, "alpha": {"y": 2, "b": 3}, "mid": [{"k": 1, "a": 2}]}
    back = from_bytes(to_bytes(Part(text="x", metadata=metadata)), Part).metadata
    assert back == metadata
    assert list(back) == ["alpha", "mid", "zeta"]
    assert list(back["alpha"]) == ["b", "y"]


def test_empty_messages_and_objects_stay_present() -> None:
    scheme = SecurityScheme(mtls_security_scheme=MutualTlsSecurityScheme())
    assert from_bytes(to_bytes(scheme), SecurityScheme) == scheme
    part = Part(text="", metadata={})
    back = from_bytes(to_bytes(part), Part)
    assert back.text == "" and back.metadata == {}


def test_optional_scalars_keep_presence() -> None:
    for request in (ListTasksRequest(), ListTasksRequest(history_length=0, page_size=0)):
        assert from_bytes(to_bytes(request), ListTasksRequest) == request
    capabilities = AgentCapabilities(streaming=False)
    back = from_bytes(to_bytes(capabilities), AgentCapabilities)
    assert back.streaming is False and back.push_notifications is None


@pytest.mark.parametrize(
    ("given", "seconds", "nanos", "read_back"),
    [
        ("2026-01-01T00:00:00.000Z", 1767225600, 0, "2026-01-01T00:00:00.000Z"),
        ("2026-01-01T00:00:00Z", 1767225600, 0, "2026-01-01T00:00:00.000Z"),
        ("2026-01-01T00:00:00.5Z", 1767225600, 500_000_000, "2026-01-01T00:00:00.500Z"),
        ("2026-01-01T00:00:00.123456Z", 1767225600, 123_456_000, "2026-01-01T00:00:00.123456Z"),
        (
            "2026-01-01T00:00:00.123456789Z",
            1767225600,
            123_456_789,
            "2026-01-01T00:00:00.123456789Z",
        ),
        ("2026-01-01T02:00:00.250+02:00", 1767225600, 250_000_000, "2026-01-01T00:00:00.250Z"),
        ("2026-01-01t00:00:00z", 1767225600, 0, "2026-01-01T00:00:00.000Z"),
        ("0001-01-01T00:00:00.000Z", -62135596800, 0, "0001-01-01T00:00:00.000Z"),
    ],
)
def test_timestamps_cross_as_seconds_and_nanos(
    given: str, seconds: int, nanos: int, read_back: str
) -> None:
    status = TaskStatus(state=TaskState.WORKING, timestamp=given)
    message = to_proto(status)
    assert (message.timestamp.seconds, message.timestamp.nanos) == (seconds, nanos)
    assert from_proto(message, TaskStatus).timestamp == read_back


# --- bad input ----------------------------------------------------------------------------------


def _violation(exc: pytest.ExceptionInfo[InvalidParamsError]) -> tuple[str, str]:
    [violation] = exc.value.field_violations
    return violation.field, violation.description


def test_unknown_enum_number_is_a_bad_field_with_its_path() -> None:
    message = a2a_pb2.SendMessageRequest()
    message.message.message_id = "m-1"
    message.message.role = 7
    message.message.parts.add(text="hi")
    with pytest.raises(InvalidParamsError) as exc:
        from_proto(message, types.SendMessageRequest)
    assert _violation(exc) == ("message.role", "7 is not a Role number")


def test_missing_required_message_is_named() -> None:
    message = a2a_pb2.StreamResponse()
    message.task.id = "t-1"
    with pytest.raises(InvalidParamsError) as exc:
        from_proto(message, types.StreamResponse)
    assert _violation(exc) == ("task.status", "required field is missing")


def test_part_without_content_is_named_by_index() -> None:
    message = a2a_pb2.Message(message_id="m-1", role=1)
    message.parts.add(text="ok")
    message.parts.add(media_type="text/plain")
    with pytest.raises(InvalidParamsError) as exc:
        from_proto(message, Message)
    field, description = _violation(exc)
    assert field == "parts[1]"
    assert "exactly one of text, raw, url or data" in description


def test_message_rules_of_our_types_apply() -> None:
    message = a2a_pb2.Message(message_id="m-1", role=Role.USER.number)
    with pytest.raises(InvalidParamsError, match="at least one part"):
        from_proto(message, Message)


def test_empty_oneof_wrapper_is_rejected() -> None:
    with pytest.raises(InvalidParamsError, match="exactly one of task"):
        from_proto(a2a_pb2.StreamResponse(), types.StreamResponse)


def test_timestamp_out_of_range_is_a_bad_field() -> None:
    message = a2a_pb2.TaskStatus(state=1)
    message.timestamp.seconds = 10**12
    with pytest.raises(InvalidParamsError) as exc:
        from_proto(message, TaskStatus)
    assert _violation(exc)[0] == "timestamp"


def test_map_entries_are_named_by_key() -> None:
    message = a2a_pb2.AgentCard(name="a", description="b", version="1")
    message.capabilities.SetInParent()
    message.security_schemes["broken"].SetInParent()
    with pytest.raises(InvalidParamsError) as exc:
        from_proto(message, types.AgentCard)
    assert _violation(exc)[0] == "securitySchemes.broken"


def test_bytes_that_are_not_protobuf_are_an_invalid_request() -> None:
    with pytest.raises(InvalidRequestError, match=r"not a valid lf\.a2a\.v1\.Task protobuf"):
        from_bytes(b"\xff\xff\xff", Task)


def test_wrong_message_type_is_a_programming_error() -> None:
    with pytest.raises(TypeError, match=r"expected a lf\.a2a\.v1\.Task"):
        from_proto(a2a_pb2.Message(), Task)
    with pytest.raises(TypeError, match="not an A2A message type"):
        to_proto(msgspec.json.decode(b"{}", type=_NotOurs))


class _NotOurs(Model, frozen=True, kw_only=True):
    pass


def test_values_that_are_not_json_are_refused_with_their_path() -> None:
    part = Part(text="x", metadata={"ok": [1, {"bad": {1, 2}}]})
    with pytest.raises(ValueError, match=r"set is not a JSON value \(at metadata\.ok\[1\]\.bad\)"):
        to_proto(part)
