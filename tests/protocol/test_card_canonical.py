"""The canonical payload of a card signature (A2A spec §8.4): presence rules, then JCS."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peerwire.errors import InvalidAgentCardError
from peerwire.protocol.card_canonical import (
    MAX_DEPTH,
    canonical_card_payload,
    canonical_card_value,
)
from peerwire.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentSkill,
    APIKeySecurityScheme,
    MutualTlsSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    encode,
)


def canonical(document: dict[str, Any]) -> str:
    return canonical_card_payload(document).decode("utf-8")


def test_the_spec_worked_example() -> None:
    # The spec's canonicalization example (A2A spec §8.4), verbatim.
    fragment = {
        "name": "Example Agent",
        "description": "",
        "capabilities": {"streaming": False, "pushNotifications": False, "extensions": []},
        "skills": [],
    }
    assert canonical(fragment) == (
        '{"capabilities":{"pushNotifications":false,"streaming":false},'
        '"description":"","name":"Example Agent","skills":[]}'
    )


def test_optional_fields_stay_when_set_even_to_their_default() -> None:
    document = {
        "capabilities": {"extendedAgentCard": False, "streaming": True},
        "documentationUrl": "",
        "iconUrl": "",
    }
    assert canonical_card_value(document) == {
        "capabilities": {"extendedAgentCard": False, "streaming": True},
        "documentationUrl": "",
        "iconUrl": "",
    }


def test_plain_fields_equal_to_their_default_are_dropped() -> None:
    document = {
        "name": "a",
        "supportedInterfaces": [
            {
                "url": "https://a",
                "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0",
                "tenant": "",
            }
        ],
        "capabilities": {"extensions": [{"uri": "urn:x", "required": False, "description": ""}]},
        "securitySchemes": {},
        "securityRequirements": [],
        "skills": [
            {
                "id": "s",
                "name": "s",
                "description": "",
                "tags": [],
                "examples": [],
                "inputModes": [],
                "securityRequirements": [],
            }
        ],
    }
    assert canonical_card_value(document) == {
        "name": "a",
        "supportedInterfaces": [
            {"url": "https://a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"extensions": [{"uri": "urn:x"}]},
        # REQUIRED fields stay even when empty.
        "skills": [{"id": "s", "name": "s", "description": "", "tags": []}],
    }


def test_required_fields_the_document_omits_are_not_invented() -> None:
    assert canonical_card_value({"name": "a"}) == {"name": "a"}


def test_signatures_are_removed() -> None:
    document = {"name": "a", "signatures": [{"protected": "x", "signature": "y"}]}
    assert canonical(document) == '{"name":"a"}'


def test_unknown_members_are_kept_exactly_as_received() -> None:
    document = {
        "name": "a",
        "futureField": {"enabled": False, "list": [], "text": ""},
        "capabilities": {"streaming": True, "newFlag": False},
        "skills": [{"id": "s", "name": "s", "description": "d", "tags": ["t"], "extra": ""}],
    }
    value = canonical_card_value(document)
    assert value["futureField"] == {"enabled": False, "list": [], "text": ""}
    assert value["capabilities"] == {"streaming": True, "newFlag": False}
    assert value["skills"][0]["extra"] == ""


def test_struct_params_are_kept_verbatim() -> None:
    params = {"flag": False, "empty": "", "nested": {"list": [], "none": None}}
    document = {"capabilities": {"extensions": [{"uri": "urn:x", "params": params}]}}
    value = canonical_card_value(document)
    assert value["capabilities"]["extensions"][0]["params"] == params


def test_an_empty_message_member_is_a_real_choice() -> None:
    document = {
        "securitySchemes": {"mtls": {"mtlsSecurityScheme": {}}},
        "securityRequirements": [{"schemes": {"mtls": {"list": []}}}, {"schemes": {}}],
    }
    assert canonical_card_value(document) == {
        "securitySchemes": {"mtls": {"mtlsSecurityScheme": {}}},
        # An empty StringList is {} whether or not "list": [] was written (ProtoJSON).
        "securityRequirements": [{"schemes": {"mtls": {}}}, {}],
    }


def test_map_entries_always_stay() -> None:
    flow = {"tokenUrl": "https://t", "scopes": {"read": "", "write": "Write"}, "refreshUrl": ""}
    document = {
        "securitySchemes": {"o": {"oauth2SecurityScheme": {"flows": {"clientCredentials": flow}}}}
    }
    value = canonical_card_value(document)
    assert value["securitySchemes"]["o"]["oauth2SecurityScheme"]["flows"] == {
        "clientCredentials": {"tokenUrl": "https://t", "scopes": {"read": "", "write": "Write"}}
    }


def test_required_map_stays_when_empty() -> None:
    flow = {"tokenUrl": "https://t", "scopes": {}}
    document = {
        "securitySchemes": {"o": {"oauth2SecurityScheme": {"flows": {"clientCredentials": flow}}}}
    }
    scheme = canonical_card_value(document)["securitySchemes"]["o"]["oauth2SecurityScheme"]
    assert scheme["flows"]["clientCredentials"] == {"tokenUrl": "https://t", "scopes": {}}


def test_snake_case_spellings_of_known_fields_become_camel_case() -> None:
    document = {
        "default_input_modes": ["text/plain"],
        "capabilities": {"push_notifications": False},
        "security_schemes": {"k": {"api_key_security_scheme": {"location": "header", "name": "K"}}},
    }
    assert canonical(document) == (
        '{"capabilities":{"pushNotifications":false},"defaultInputModes":["text/plain"],'
        '"securitySchemes":{"k":{"apiKeySecurityScheme":{"location":"header","name":"K"}}}}'
    )


def test_the_camel_case_spelling_wins_over_the_snake_case_one() -> None:
    for document in (
        {"icon_url": "https://snake", "iconUrl": "https://camel"},
        {"iconUrl": "https://camel", "icon_url": "https://snake"},
    ):
        assert canonical_card_value(document) == {"iconUrl": "https://camel"}


def test_null_means_not_set() -> None:
    document = {"name": "a", "provider": None, "capabilities": {"streaming": None}}
    assert canonical_card_value(document) == {"name": "a", "capabilities": {}}


def test_jcs_orders_keys_by_utf16_code_units_and_formats_numbers() -> None:
    # U+1F600 is D83D DE00 in UTF-16, which sorts before U+FB01 (FB01) although its code
    # point is larger: RFC 8785 §3.2.3.
    params = {"\ufb01": 1, "\U0001f600": 2, "a": 1.0, "b": 1e21, "c": 0.000001, "d": -0.0}
    document = {"capabilities": {"extensions": [{"params": params}]}}
    text = canonical(document)
    assert text == (
        '{"capabilities":{"extensions":[{"params":'
        '{"a":1,"b":1e+21,"c":0.000001,"d":0,"\U0001f600":2,"\ufb01":1}}]}}'
    )


def test_strings_are_minimally_escaped_utf8() -> None:
    payload = canonical_card_payload({"name": 'é "q" \\ \n \u0001 /'})
    assert payload == '{"name":"é \\"q\\" \\\\ \\n \\u0001 /"}'.encode()


def test_key_order_and_whitespace_of_the_input_do_not_matter() -> None:
    a = json.loads('{"name": "x", "capabilities": {"streaming": true, "extensions": []}}')
    b = json.loads('{"capabilities":{"extensions":[],"streaming":true},"name":"x"}')
    assert canonical_card_payload(a) == canonical_card_payload(b)


def test_a_peerwire_card_canonicalises_from_its_served_json() -> None:
    card = AgentCard(
        name="Agent",
        description="",
        supported_interfaces=[
            AgentInterface(url="https://a/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        version="1.0.0",
        capabilities=AgentCapabilities(
            streaming=True,
            push_notifications=False,
            extensions=[AgentExtension(uri="urn:e", required=False)],
        ),
        security_schemes={
            "key": SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-Key")
            ),
            "mtls": SecurityScheme(mtls_security_scheme=MutualTlsSecurityScheme()),
        },
        security_requirements=[
            SecurityRequirement(schemes={"key": StringList(), "mtls": StringList()})
        ],
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="s", name="S", description="d", tags=["t"])],
    )
    served = json.loads(encode(card))
    assert canonical(served) == (
        '{"capabilities":{"extensions":[{"uri":"urn:e"}],"pushNotifications":false,'
        '"streaming":true},"defaultInputModes":["text/plain"],"defaultOutputModes":'
        '["text/plain"],"description":"","name":"Agent","securityRequirements":[{"schemes":'
        '{"key":{},"mtls":{}}}],"securitySchemes":{"key":{"apiKeySecurityScheme":{"location":'
        '"header","name":"X-Key"}},"mtls":{"mtlsSecurityScheme":{}}},"skills":[{"description":'
        '"d","id":"s","name":"S","tags":["t"]}],"supportedInterfaces":[{"protocolBinding":'
        '"JSONRPC","protocolVersion":"1.0","url":"https://a/"}],"version":"1.0.0"}'
    )


@pytest.mark.parametrize(
    "document",
    [
        {"capabilities": {"extensions": [{"params": {"x": math.nan}}]}},
        {"capabilities": {"extensions": [{"params": {"x": 2**60}}]}},
        {"name": "\ud800"},
        {"name": "a", 1: "b"},
    ],
    ids=["nan", "huge-int", "lone-surrogate", "non-string-key"],
)
def test_a_document_without_a_canonical_form_is_refused(document: dict[Any, Any]) -> None:
    with pytest.raises(InvalidAgentCardError):
        canonical_card_payload(document)


def test_nesting_is_bounded() -> None:
    deep: Any = "leaf"
    for _ in range(MAX_DEPTH + 5):
        deep = {"x": deep}
    with pytest.raises(InvalidAgentCardError, match="nests deeper"):
        canonical_card_payload({"capabilities": {"extensions": [{"params": deep}]}})


def test_a_document_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(InvalidAgentCardError):
        canonical_card_payload([])  # type: ignore[arg-type]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
card_like = st.fixed_dictionaries(
    {},
    optional={
        "name": st.text(max_size=8),
        "description": st.text(max_size=8),
        "capabilities": st.fixed_dictionaries(
            {},
            optional={
                "streaming": st.booleans(),
                "extensions": st.lists(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "uri": st.text(max_size=5),
                            "required": st.booleans(),
                            "params": json_values,
                        },
                    ),
                    max_size=2,
                ),
            },
        ),
        "skills": st.lists(
            st.fixed_dictionaries(
                {
                    "id": st.text(max_size=4),
                    "name": st.text(max_size=4),
                    "description": st.text(max_size=4),
                    "tags": st.lists(st.text(max_size=3), max_size=2),
                },
                optional={"examples": st.lists(st.text(max_size=3), max_size=2)},
            ),
            max_size=2,
        ),
        "unknownThing": json_values,
    },
)


@settings(max_examples=150, deadline=None)
@given(card_like)
def test_canonicalisation_is_idempotent(document: dict[str, Any]) -> None:
    once = canonical_card_payload(document)
    assert canonical_card_payload(json.loads(once)) == once
