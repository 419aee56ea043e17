"""JSON Web Keys: loading them, choosing one for a signature, and where they come from.

The one rule set for "may this key check a signature made with this ``alg``?" lives here,
shared by token validation and card verification: the algorithm must be on the caller's
explicit allow-list (``none`` never is), the key's type (and curve) must be the algorithm's,
and a key that says what it is for (``use``, ``key_ops``, ``alg``) must say signatures with
that algorithm. This is what defeats algorithm confusion (an HS256 token "signed" with an
RSA public key's bytes; an ``alg: none`` token).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import anyio
import httpx
from joserfc.errors import JoseError
from joserfc.jwk import ECKey, JWKRegistry, Key, KeySet, OctKey, OKPKey, RSAKey

from ..errors import PeerwireError
from ._fetch import FetchError, check_fetch_url, fetch_json

__all__ = [
    "ASYMMETRIC_ALGORITHMS",
    "JWKSource",
    "KeyMismatch",
    "RemoteJWKS",
    "StaticJWKS",
    "as_jwk_source",
    "check_algorithms",
    "check_key_for",
    "load_keys",
]

log = logging.getLogger("peerwire.security")

# What each algorithm needs: key type and, for EC/OKP, the curve.
_KEY_TYPES: dict[str, tuple[type[Key], str | None]] = {
    "HS256": (OctKey, None),
    "HS384": (OctKey, None),
    "HS512": (OctKey, None),
    "RS256": (RSAKey, None),
    "RS384": (RSAKey, None),
    "RS512": (RSAKey, None),
    "PS256": (RSAKey, None),
    "PS384": (RSAKey, None),
    "PS512": (RSAKey, None),
    "ES256": (ECKey, "P-256"),
    "ES384": (ECKey, "P-384"),
    "ES512": (ECKey, "P-521"),
    "ES256K": (ECKey, "secp256k1"),
    "Ed25519": (OKPKey, "Ed25519"),
    "Ed448": (OKPKey, "Ed448"),
}

ASYMMETRIC_ALGORITHMS: tuple[str, ...] = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "Ed25519",
)
"""The default allow-list: public-key signatures only (no shared secrets, no ``none``)."""

_MIN_RSA_BITS = 2048


class KeyMismatch(PeerwireError):
    """A key cannot check (or make) a signature with the given algorithm; says why."""


def check_algorithms(algorithms: Iterable[str]) -> tuple[str, ...]:
    """A validated allow-list of JWS algorithms (``ValueError`` for ``none`` or unknown ones)."""
    chosen = tuple(algorithms)
    if not chosen:
        raise ValueError("at least one signature algorithm must be allowed")
    for alg in chosen:
        if alg.lower() == "none":
            raise ValueError('the "none" algorithm can never be allowed: it means "unsigned"')
        if alg not in _KEY_TYPES:
            known = ", ".join(_KEY_TYPES)
            raise ValueError(f"unsupported signature algorithm {alg!r} (supported: {known})")
    return chosen


def check_key_for(key: Key, alg: str, *, private: bool = False) -> None:
    """Raise ``KeyMismatch`` unless ``key`` may be used with ``alg`` (to sign, if ``private``)."""
    wanted = _KEY_TYPES.get(alg)
    if wanted is None:
        raise KeyMismatch(f"the algorithm {alg!r} is not supported")
    key_class, curve = wanted
    if not isinstance(key, key_class):
        raise KeyMismatch(
            f"a {key.key_type} key cannot be used with {alg} (it needs a {key_class.key_type} key)"
        )
    key_curve = key.curve_name if isinstance(key, ECKey | OKPKey) else None
    if curve is not None and key_curve != curve:
        raise KeyMismatch(f"{alg} needs the {curve} curve, the key is on {key_curve}")
    if isinstance(key, RSAKey):
        size = key.public_key.key_size
        if size < _MIN_RSA_BITS:
            raise KeyMismatch(f"RSA keys shorter than {_MIN_RSA_BITS} bits are refused ({size})")
    use = key.get("use")
    if use is not None and use != "sig":
        raise KeyMismatch(f'the key is for "use": {use!r}, not signatures')
    key_ops = key.get("key_ops")
    operation = "sign" if private else "verify"
    if key_ops is not None and operation not in key_ops:
        raise KeyMismatch(f"the key's key_ops {key_ops!r} do not include {operation!r}")
    designed = key.get("alg")
    if designed is not None and designed != alg:
        raise KeyMismatch(f"the key is for {designed}, not {alg}")
    if private and not key.is_private:
        raise KeyMismatch("signing needs a private key")


def load_keys(source: Any, *, allow_symmetric: bool = True) -> list[Key]:
    """Keys from a JWKS document (``{"keys": [...]}``), one JWK dict, a joserfc ``Key`` or
    ``KeySet``, or a list of those. Keys of an unknown type are skipped (RFC 7517 §5)."""
    found: list[Key] = []
    for item in _items(source):
        key = item if isinstance(item, Key) else _import(item)
        if key is None:
            continue
        if isinstance(key, OctKey) and not allow_symmetric:
            # A published JWKS is public: a shared secret in it is a secret everyone holds.
            log.warning("peerwire: ignoring a symmetric (oct) key in a published JWKS")
            continue
        found.append(key)
    return found


def _items(source: Any) -> Iterable[Any]:
    if isinstance(source, KeySet):
        return list(source)
    if isinstance(source, Mapping):
        keys = source.get("keys")
        if isinstance(keys, list):
            return keys
        return [source]
    if isinstance(source, Key):
        return [source]
    if isinstance(source, Sequence) and not isinstance(source, str | bytes):
        return [key for item in source for key in _items(item)]
    raise TypeError(f"cannot read keys from {type(source).__name__}")


def _import(data: Any) -> Key | None:
    if not isinstance(data, Mapping):
        return None
    try:
        return JWKRegistry.import_key(dict(data))
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        kid = data.get("kid")
        log.info("peerwire: skipping an unusable JWK (kid %r): %s", kid, type(exc).__name__)
        return None


class JWKSource(Protocol):
    """Where verification keys come from."""

    async def keys(self, *, refresh: bool = False) -> Sequence[Key]:
        """The current keys. ``refresh``: the caller met a key id it does not know."""
        ...


class StaticJWKS:
    """Keys configured up front (pinned)."""

    def __init__(self, keys: Any) -> None:
        self._keys = load_keys(keys)
        if not self._keys:
            raise ValueError("no usable keys were given")

    async def keys(self, *, refresh: bool = False) -> Sequence[Key]:
        return self._keys


class RemoteJWKS:
    """A JWKS fetched from ``url`` and cached for ``cache_seconds``.

    An unknown key id triggers one early refetch (key rotation), at most once per
    ``min_refresh_seconds``, so a flood of tokens with made-up key ids cannot turn into a
    flood of requests to the key server. Concurrent refreshes share one fetch. When a refetch
    fails the keys already held stay in use until they expire twice over.
    """

    def __init__(
        self,
        url: str,
        *,
        http: httpx.AsyncClient | None = None,
        cache_seconds: float = 300.0,
        min_refresh_seconds: float = 30.0,
        timeout: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = check_fetch_url(url, "JWKS URL")
        self._http = http
        self._cache_seconds = cache_seconds
        self._min_refresh = min_refresh_seconds
        self._timeout = timeout
        self._clock = clock
        self._keys: list[Key] = []
        self._loaded_at: float | None = None  # the last successful fetch
        self._next_fetch = -math.inf  # when the cache is due for a refetch
        self._next_refresh = -math.inf  # the earliest refetch an unknown key id may cause
        self._lock = anyio.Lock()

    async def keys(self, *, refresh: bool = False) -> Sequence[Key]:
        if not self._due(refresh):
            return self._keys
        async with self._lock:
            if self._due(refresh):  # else another caller fetched while this one waited
                await self._fetch()
        return self._keys

    def cached(self) -> Sequence[Key]:
        """The keys held now, without fetching."""
        return self._keys

    def _due(self, refresh: bool) -> bool:
        now = self._clock()
        return now >= self._next_fetch or (refresh and now >= self._next_refresh)

    async def _fetch(self) -> None:
        now = self._clock()
        self._next_refresh = now + self._min_refresh
        try:
            document = await fetch_json(self.url, "JWKS", http=self._http, timeout=self._timeout)
            keys = load_keys(document.get("keys", []), allow_symmetric=False)
        except (FetchError, TypeError) as exc:
            self._next_fetch = now + self._min_refresh
            if self._loaded_at is None or now - self._loaded_at >= 2 * self._cache_seconds:
                self._keys = []
                raise FetchError(str(exc)) from None
            log.warning("peerwire: keeping cached keys, JWKS refresh failed: %s", exc)
            return
        self._keys = keys
        self._loaded_at = now
        self._next_fetch = now + self._cache_seconds


def as_jwk_source(value: Any) -> JWKSource:
    """A ``JWKSource`` as is; keys in any form ``load_keys`` reads as a ``StaticJWKS``."""
    if isinstance(value, StaticJWKS | RemoteJWKS):
        return value
    if isinstance(value, Mapping | Key | KeySet | list | tuple):
        return StaticJWKS(value)
    return value  # type: ignore[no-any-return]  # a user's own JWKSource
