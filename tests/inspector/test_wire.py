"""The pieces of the wire view that need no agent: curl commands, redaction, SSE splitting."""

from __future__ import annotations

import shlex

from peerwire.inspect.wire import Redactor, WireLog, curl_command


def test_a_curl_command_round_trips_through_the_shell() -> None:
    request = {
        "method": "POST",
        "url": "http://127.0.0.1:8000/",
        "headers": [["host", "x"], ["content-type", "application/json"], ["a2a-version", "1.0"]],
        "body": '{"text": "it\'s"}',
    }
    words = shlex.split(curl_command(request))
    assert words[:6] == ["curl", "-sS", "-N", "-X", "POST", "http://127.0.0.1:8000/"]
    assert words[6:10] == ["-H", "content-type: application/json", "-H", "a2a-version: 1.0"]
    assert words[10:] == ["--data-raw", '{"text": "it\'s"}']  # the body as sent, quotes too
    assert "host" not in " ".join(words)


def test_secrets_are_hidden_as_given_encoded_and_in_credential_headers() -> None:
    redact = Redactor()
    redact.set(["s3cret/+key", "ab"])
    redact.set_headers(["X-Vault-Key"])
    assert redact("key=s3cret%2F%2Bkey&k=s3cret/+key") == "key=***&k=***"
    assert redact.header("Authorization", "Bearer anything") == "Bearer ***"
    assert redact.header("x-vault-key", "anything") == "***"
    assert redact.header("content-type", "ab") == "***"
    body = '{"access_token": "t-1", "token_type": "Bearer"}'
    assert redact.body(body) == '{"access_token": "***", "token_type": "Bearer"}'
    assert redact.body("grant_type=x&client_secret=zz") == "grant_type=x&client_secret=***"


def test_a_secret_of_one_or_two_characters_is_hidden_too() -> None:
    redact = Redactor()
    redact.set(["k", "p/", ""])  # an empty password hides nothing (and breaks nothing)
    assert redact("user=me&key=k") == "user=me&***ey=***"
    assert redact("p%2F and p/") == "*** and ***"
    assert redact.header("x-api", "k") == "***"


def test_the_log_keeps_the_latest_exchanges_and_reports_each_change() -> None:
    changes: list[int] = []
    log = WireLog(lambda exchange: changes.append(exchange.id))
    first = log.begin("JSONRPC", "SendMessage", {"method": "POST", "url": "http://a/"})
    log.respond(first, {"status": 200, "headers": [], "body": ""})
    log.finish(first)
    log.finish(first)  # once only
    assert changes == [1, 1, 1]
    assert log.to_json()[0]["curl"].startswith("curl")
    for _ in range(300):
        log.begin("GRPC", "GetTask", {"rpc": "/x"})
    assert len(log.exchanges) == 200 and log.exchanges[0].id == 102
