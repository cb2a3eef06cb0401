"""Who is calling: a bearer token checked and turned into a `Caller` with its grant.

Two modes (`auth.mode`). "token": the static token of `serve.token`, one local user who sees
everything. "oidc": lakegraph is an OAuth 2.1 resource server — an access token is a JWT signed
by `auth.issuer`, checked against the keys the issuer publishes (its JWKS, fetched again when a
token names a key not seen yet, which is how a rotation is picked up), for its issuer, audience,
expiry and not-before, then mapped to grants by its groups and scopes. Every refusal says why in
words a developer can act on; none of them echoes the token.
"""

from __future__ import annotations

import hmac
import json
import time
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import jwt

from worker.shared.grants import EVERYTHING, Grant, matched

if TYPE_CHECKING:
    from worker.settings import Settings

DISCOVERY = "/.well-known/openid-configuration"
FETCH_SECONDS = 5.0


@dataclass(frozen=True)
class Caller:
    subject: str  # the token's `sub`, or "local" for the static token
    client: str  # the OAuth client it was issued to (`azp` or `client_id`), "" when not said
    grant: Grant


LOCAL = Caller("local", "", EVERYTHING)


class Rejected(Exception):
    """A token refused: 401 `invalid_token`, 403 `insufficient_scope` (valid, but no grant), or 503
    when the issuer's keys cannot be read (the server's problem, not the caller's)."""

    def __init__(self, reason: str, status: int = 401, error: str = "invalid_token") -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.error = error


class TokenCheck(Protocol):
    async def __call__(self, presented: str) -> Caller: ...


class StaticToken:
    def __init__(self, token: str) -> None:
        self.token = token.encode()

    async def __call__(self, presented: str) -> Caller:
        if hmac.compare_digest(presented.encode(), self.token):
            return LOCAL
        raise Rejected("not this server's bearer token (serve.token, or the one kept under state_dir/serve/token)")


class IssuerKeys:
    """The issuer's signing keys by key id, read from the jwks_uri its discovery document names.
    A key id not held fetches the set again, at most once per `refresh_seconds` however many
    tokens name unknown keys, and concurrent misses share one fetch. Keys older than
    `max_age_seconds` are read again before use, so a key the issuer withdrew stops verifying."""

    def __init__(self, issuer: str, refresh_seconds: float, max_age_seconds: float) -> None:
        self.issuer = issuer.rstrip("/")
        self.refresh_seconds = refresh_seconds
        self.max_age_seconds = max_age_seconds
        self.keys: dict[str, jwt.PyJWK] = {}
        self.fetched_at = float("-inf")
        self.lock = anyio.Lock()

    async def key(self, kid: str | None) -> jwt.PyJWK:
        if time.monotonic() - self.fetched_at > self.max_age_seconds:
            async with self.lock:
                if time.monotonic() - self.fetched_at > self.max_age_seconds:
                    await self._fetch()
        if kid is None and len(self.keys) == 1:
            return next(iter(self.keys.values()))
        if kid is not None and kid in self.keys:
            return self.keys[kid]
        async with self.lock:
            if (kid is None or kid not in self.keys) and time.monotonic() - self.fetched_at >= self.refresh_seconds:
                await self._fetch()
        if kid is None:
            raise Rejected("the token's header names no key (kid) and the issuer publishes several")
        if kid not in self.keys:
            raise Rejected(f"signed with key {kid!r}, which the issuer does not publish (forged, or from another issuer)")
        return self.keys[kid]

    async def _fetch(self) -> None:
        self.fetched_at = time.monotonic()
        try:
            found = await anyio.to_thread.run_sync(_json, self.issuer + DISCOVERY)
            keys = jwt.PyJWKSet.from_dict(await anyio.to_thread.run_sync(_json, found["jwks_uri"])).keys
        except (OSError, ValueError, KeyError, TypeError, jwt.PyJWKSetError) as failed:
            raise Rejected(f"the issuer's keys could not be read from {self.issuer}: {failed}", status=503, error="temporarily_unavailable") from None
        self.keys = {key.key_id: key for key in keys if key.key_id and key.public_key_use in (None, "sig")}


def _json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=FETCH_SECONDS) as answer:
        return json.loads(answer.read())


class OidcTokens:
    def __init__(self, settings: Settings, audience: str) -> None:
        self.auth = settings.auth
        self.grants = settings.grants
        self.audience = audience
        self.keys = IssuerKeys(settings.auth.issuer, settings.auth.jwks_refresh_seconds, settings.auth.jwks_max_age_seconds)

    async def __call__(self, presented: str) -> Caller:
        try:
            header = jwt.get_unverified_header(presented)
        except jwt.DecodeError as malformed:
            raise Rejected(f"not a JWT access token ({malformed})") from None
        algorithm = header.get("alg")
        if algorithm not in self.auth.algorithms:
            raise Rejected(f"signature algorithm {algorithm!r} is not accepted (auth.algorithms: {', '.join(self.auth.algorithms)})")
        key = await self.keys.key(header.get("kid"))
        claims = self._decoded(presented, key, algorithm)
        groups = claims.get(self.auth.groups_claim) or []
        scopes = str(claims.get("scope") or "").split()
        if not isinstance(groups, list):
            raise Rejected(f"the {self.auth.groups_claim!r} claim is not a list of groups")
        grant = matched(self.grants, map(str, groups), scopes)
        subject = str(claims.get("sub") or claims.get("client_id") or "")
        if grant is None:
            raise Rejected(
                f"{subject or 'the caller'} has no grant: none names its groups {sorted(map(str, groups))} or scopes {scopes}", 403, "insufficient_scope"
            )
        return Caller(subject, str(claims.get("azp") or claims.get("client_id") or ""), grant)

    def _decoded(self, presented: str, key: jwt.PyJWK, algorithm: str) -> dict[str, Any]:
        try:
            return jwt.decode(
                presented,
                key,
                algorithms=[algorithm],
                audience=self.audience,
                issuer=self.auth.issuer,
                leeway=self.auth.leeway_seconds,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise Rejected(f"expired at {_when(presented, 'exp')}: get a new token from the issuer") from None
        except jwt.ImmatureSignatureError:
            raise Rejected(f"not valid before {_when(presented, 'nbf')} (check the clocks, or wait)") from None
        except jwt.InvalidAudienceError:
            aud = _claim(presented, "aud")
            raise Rejected(
                f"issued for audience {aud!r}, not this server's {self.audience!r}: ask the issuer for a token with resource={self.audience}"
            ) from None
        except jwt.InvalidIssuerError:
            raise Rejected(f"issued by {_claim(presented, 'iss')!r}, not the configured issuer {self.auth.issuer!r}") from None
        except jwt.InvalidSignatureError:
            raise Rejected("the signature does not verify with the issuer's key: the token was altered or forged") from None
        except jwt.MissingRequiredClaimError as missing:
            raise Rejected(f"the token lacks the {missing.claim!r} claim") from None
        except jwt.InvalidTokenError as invalid:
            raise Rejected(f"invalid token: {invalid}") from None


def _unverified(presented: str) -> dict[str, Any]:
    try:
        return json.loads(jwt.api_jws.base64url_decode(presented.split(".")[1]))
    except (ValueError, IndexError):
        return {}


def _claim(presented: str, name: str) -> Any:
    return _unverified(presented).get(name)


def _when(presented: str, name: str) -> str:
    value = _claim(presented, name)
    return datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds") if isinstance(value, int | float) else "?"


def token_check(settings: Settings, static_token: str, resource: str) -> TokenCheck:
    if settings.auth.mode == "oidc":
        return OidcTokens(settings, settings.auth.audience or resource)
    return StaticToken(static_token)
