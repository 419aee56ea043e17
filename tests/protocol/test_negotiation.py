"""Service parameters (A2A spec §3.6, §4.6): A2A-Version and A2A-Extensions."""

from __future__ import annotations

import pytest

from peerwire.errors import ExtensionSupportRequiredError, VersionNotSupportedError, wire_info
from peerwire.protocol import (
    PROTOCOL_VERSION,
    active_extensions,
    check_version,
    format_extensions,
    negotiate_extensions,
    parse_extensions,
)

TRACE = "https://ext.example/trace/v1"
CITE = "https://ext.example/citations/v2"
SECRET = "https://ext.example/secret/v1"


def test_protocol_version_is_major_minor() -> None:
    assert PROTOCOL_VERSION == "1.0"


# --- A2A-Version --------------------------------------------------------------------------------


@pytest.mark.parametrize("header", ["1.0", "1.0.0", "1.0.1", "1.0.3", " 1.0 ", "1.0.12"])
def test_supported_versions(header: str) -> None:
    assert check_version(header) == "1.0"


@pytest.mark.parametrize("header", ["1.0, 1.0", "1.0,1.0", "1.0, 1.0.1, 1.0"])
def test_a_repeated_header_joined_with_commas_is_the_one_version_it_names(header: str) -> None:
    # Node's HTTP/2 (the JavaScript SDK's gRPC server) joins repeated metadata this way.
    assert check_version(header) == "1.0"


def test_a_joined_header_naming_different_versions_is_refused() -> None:
    with pytest.raises(VersionNotSupportedError) as caught:
        check_version("1.0, 0.3")
    assert "more than one version" in caught.value.message
    assert caught.value.metadata["requestedVersion"] == "1.0, 0.3"


@pytest.mark.parametrize("header", [None, "", "   "])
def test_missing_version_means_0_3_and_is_rejected(header: str | None) -> None:
    with pytest.raises(VersionNotSupportedError) as caught:
        check_version(header)
    assert wire_info(caught.value).jsonrpc_code == -32009
    assert "1.0" in caught.value.message


@pytest.mark.parametrize("header", [None, "", "   "])
def test_missing_version_is_1_0_when_lenient(header: str | None) -> None:
    assert check_version(header, lenient=True) == "1.0"


@pytest.mark.parametrize(
    "header",
    [
        "0.3",
        "0.3.0",
        "2.0",
        "1.1",
        "1",
        "1.",
        ".0",
        "abc",
        "v1.0",
        "1.0.x",
        "1.0-beta",
        "10.0",
        "1,0",
        "1.0,",
        ",1.0",
        "0.3, 0.3",
        "1.0, abc",
    ],
)
def test_unsupported_or_malformed_versions_are_rejected(header: str) -> None:
    with pytest.raises(VersionNotSupportedError) as caught:
        check_version(header)
    assert caught.value.metadata["requestedVersion"] == header
    assert caught.value.metadata["supportedVersions"] == "1.0"


@pytest.mark.parametrize("header", ["0.3", "2.0", "1", "abc"])
def test_leniency_only_covers_a_missing_header(header: str) -> None:
    with pytest.raises(VersionNotSupportedError):
        check_version(header, lenient=True)


# --- A2A-Extensions -----------------------------------------------------------------------------


def test_parse_single_header() -> None:
    assert parse_extensions([f"{TRACE},{CITE}"]) == (TRACE, CITE)


def test_parse_trims_whitespace_and_skips_empty_items() -> None:
    assert parse_extensions([f"  {TRACE} ,, \t{CITE}\t, "]) == (TRACE, CITE)


def test_parse_removes_duplicates_keeping_first_position() -> None:
    assert parse_extensions([f"{CITE}, {TRACE}", f"{CITE},{TRACE} ,{SECRET}"]) == (
        CITE,
        TRACE,
        SECRET,
    )


def test_parse_nothing() -> None:
    assert parse_extensions([]) == ()
    assert parse_extensions(["", " , "]) == ()


def test_uris_are_case_sensitive_values() -> None:
    assert parse_extensions(["urn:A,urn:a"]) == ("urn:A", "urn:a")


def test_format_round_trips() -> None:
    assert format_extensions([TRACE, CITE]) == f"{TRACE},{CITE}"
    assert parse_extensions([format_extensions([TRACE, CITE])]) == (TRACE, CITE)
    assert format_extensions([]) == ""


def test_active_are_requested_and_supported_in_request_order() -> None:
    got = active_extensions(
        requested=[CITE, "urn:unknown", TRACE], supported=[TRACE, CITE], required=[]
    )
    assert got == (CITE, TRACE)


def test_unknown_requested_extensions_are_ignored() -> None:
    assert active_extensions(requested=["urn:unknown"], supported=[TRACE], required=[]) == ()


def test_required_extension_present() -> None:
    got = active_extensions(requested=[SECRET, TRACE], supported=[TRACE, SECRET], required=[SECRET])
    assert got == (SECRET, TRACE)


def test_required_extension_missing_is_an_error() -> None:
    with pytest.raises(ExtensionSupportRequiredError) as caught:
        active_extensions(requested=[TRACE], supported=[TRACE, SECRET], required=[SECRET])
    err = caught.value
    assert wire_info(err).jsonrpc_code == -32008
    assert SECRET in err.message
    assert err.metadata == {"extensions": SECRET}


def test_every_missing_required_extension_is_named() -> None:
    with pytest.raises(ExtensionSupportRequiredError) as caught:
        active_extensions(requested=[], supported=[TRACE, SECRET], required=[TRACE, SECRET])
    assert caught.value.metadata == {"extensions": f"{TRACE},{SECRET}"}


def test_parsed_header_feeds_activation() -> None:
    requested = parse_extensions([f" {SECRET} , {SECRET},{TRACE}"])
    assert active_extensions(requested, supported=[TRACE, SECRET], required=[SECRET]) == (
        SECRET,
        TRACE,
    )


def test_negotiating_the_extensions_of_a_request() -> None:
    supported, required = ("urn:a", "urn:b"), ("urn:b",)
    assert negotiate_extensions([], supported, ()) == ()
    assert negotiate_extensions(["urn:a, urn:x", "urn:b"], supported, ()) == ("urn:a", "urn:b")
    assert negotiate_extensions(["urn:b,urn:a"], supported, required) == ("urn:b", "urn:a")
    for values in ([], ["urn:a"]):  # nothing asked for still has to name the required one
        with pytest.raises(ExtensionSupportRequiredError):
            negotiate_extensions(values, supported, required)
