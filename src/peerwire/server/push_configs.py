"""Accepting push configs: what a webhook registration must look like before it is stored.

Applies to CreateTaskPushNotificationConfig and to a config given inline in SendMessage
(A2A spec §3.1.7, §4.3). A config is refused with ``InvalidParamsError`` naming the bad
field when it is larger than ``MAX_CONFIG_BYTES`` encoded, has an id outside
``[A-Za-z0-9._~-]{1,128}``, a URL the SSRF guard refuses (scheme other than http/https,
credentials in it, a host resolving to an internal address: ``ssrf``), a token or
credentials that could not travel in an HTTP header (control characters, too long) or an
authentication scheme that is not an HTTP auth-scheme token. Checks that need no network come
first; the URL's DNS check comes last.
"""

from __future__ import annotations

import re

from ..errors import FieldViolation, InvalidParamsError
from ..types import TaskPushNotificationConfig, encode
from .ssrf import UnresolvableHost, WebhookGuard, WebhookRefused

__all__ = ["MAX_CONFIG_BYTES", "PushConfigPolicy"]

MAX_CONFIG_BYTES = 16 * 1024
_MAX_TOKEN_CHARS = 1024
_MAX_CREDENTIALS_CHARS = 8 * 1024
_CONFIG_ID = re.compile(r"[A-Za-z0-9._~-]{1,128}")
# RFC 9110 §11.1: an auth-scheme is a token.
_AUTH_SCHEME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}")
# What may travel as (part of) a header value: visible ASCII and spaces, nothing that could
# end the header line and start another (CR, LF) or that receivers choke on.
_HEADER_SAFE = re.compile(r"[\x20-\x7e]*")


class PushConfigPolicy:
    """Validates configs for one server: its SSRF ``guard`` and its per-task cap."""

    def __init__(self, guard: WebhookGuard, *, max_per_task: int) -> None:
        self.guard = guard
        self.max_per_task = max_per_task

    def check_form(self, config: TaskPushNotificationConfig, *, field: str = "") -> None:
        """Refuse a malformed or oversized config (no network involved)."""
        size = len(encode(config))
        if size > MAX_CONFIG_BYTES:
            raise _invalid(
                field.rstrip(".") or "config",
                f"the push config is {size} bytes encoded; at most {MAX_CONFIG_BYTES} are accepted",
            )
        if config.id and not _CONFIG_ID.fullmatch(config.id):
            raise _invalid(f"{field}id", "a config id is 1-128 of A-Z a-z 0-9 . _ ~ -")
        if not config.url:
            raise _invalid(f"{field}url", "the webhook url is required")
        try:
            self.guard.check_url(config.url)
        except WebhookRefused as exc:
            raise _invalid(f"{field}url", f"the webhook url is refused: {exc}") from None
        if len(config.token) > _MAX_TOKEN_CHARS or not _HEADER_SAFE.fullmatch(config.token):
            raise _invalid(
                f"{field}token",
                f"a token is at most {_MAX_TOKEN_CHARS} printable ASCII characters",
            )
        auth = config.authentication
        if auth is not None:
            if not _AUTH_SCHEME.fullmatch(auth.scheme):
                raise _invalid(
                    f"{field}authentication.scheme",
                    "the scheme must be an HTTP authentication scheme name, such as Bearer",
                )
            credentials = auth.credentials
            if len(credentials) > _MAX_CREDENTIALS_CHARS or not _HEADER_SAFE.fullmatch(credentials):
                raise _invalid(
                    f"{field}authentication.credentials",
                    f"credentials are at most {_MAX_CREDENTIALS_CHARS} printable ASCII characters",
                )

    async def check_address(self, config: TaskPushNotificationConfig, *, field: str = "") -> None:
        """Refuse a URL whose host resolves to an address the SSRF guard refuses (or none)."""
        try:
            await self.guard.resolve(config.url)
        except WebhookRefused as exc:
            raise _invalid(f"{field}url", f"the webhook url is refused: {exc}") from None
        except UnresolvableHost as exc:
            raise _invalid(f"{field}url", f"the webhook url cannot be reached: {exc}") from None


def _invalid(field: str, description: str) -> InvalidParamsError:
    return InvalidParamsError(
        f"Invalid push notification config: {description}",
        field_violations=(FieldViolation(field=field, description=description),),
    )
