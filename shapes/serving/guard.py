"""The door every HTTP request passes: a bearer token checked (shapes/serving/identity.py), its
caller attached to the request for the shapes to answer within its grant, and the OAuth
protected-resource metadata (RFC 9728) that tells a client which issuer to get a token from.

The token comes as an `Authorization: Bearer` header (agents, scripts), or as the cookie a
browser got by opening the themes page once with `?token=` (a browser cannot add headers to an
EventSource). A request without one, or with one refused, gets 401 and a `WWW-Authenticate`
challenge that names the reason and, in oidc mode, the metadata's address; a valid token without
a grant gets 403 `insufficient_scope`. Every refusal is written to the access audit.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from shapes.serving.identity import Caller, Rejected, TokenCheck

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from shapes.serving.audit import Audit
    from worker.settings import Settings

METADATA_PATH = "/.well-known/oauth-protected-resource"
OPEN_PATHS = frozenset({"/healthz", "/openapi.json"})
PAGE_PATH = "/themes"
COOKIE = "lakegraph_token"
CALLER = "lakegraph.caller"  # where a checked request carries its caller (the ASGI scope)
_UNQUOTABLE = re.compile(r'["\\\x00-\x1f\x7f-\uffff]')


def caller_of(scope: Scope | Request) -> Caller:
    """The caller the guard attached; a request that reached a shape without one is a bug, not a guest."""
    found = (scope.scope if isinstance(scope, Request) else scope).get(CALLER)
    if not isinstance(found, Caller):
        raise RuntimeError("a request reached a shape without passing the guard")
    return found


def metadata(settings: Settings, resource: str) -> dict[str, Any]:
    """RFC 9728: what this resource is, and which authorization server issues its tokens."""
    scopes = sorted({scope for grant in settings.grants.values() for scope in grant.scopes})
    return {
        "resource": resource,
        "authorization_servers": [settings.auth.issuer],
        "bearer_methods_supported": ["header"],
        "scopes_supported": scopes,
        "resource_name": "lakegraph",
    }


def metadata_routes(settings: Settings, resource: str) -> list[Route]:
    """At the well-known path, and at it suffixed with the MCP endpoint's path (clients of the MCP
    specification ask there first); only in oidc mode, where there is an issuer to name."""
    if settings.auth.mode != "oidc":
        return []

    async def document(request: Request) -> JSONResponse:
        return JSONResponse(metadata(settings, resource), headers={"Cache-Control": "max-age=3600"})

    return [Route(METADATA_PATH, document), Route(f"{METADATA_PATH}/mcp", document)]


class Guard:
    def __init__(self, app: ASGIApp, check: TokenCheck, audit: Audit, metadata_url: str | None) -> None:
        self.app = app
        self.check = check
        self.audit = audit
        self.metadata_url = metadata_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in OPEN_PATHS or path.startswith(METADATA_PATH):
            await self.app(scope, receive, send)
            return
        presented = _presented(Request(scope))
        try:
            if not presented:
                raise Rejected("no bearer token: send Authorization: Bearer <token>", error="")
            scope[CALLER] = await self.check(presented)
        except Rejected as refused:
            self.audit.record(None, "http", f"{scope.get('method', '')} {path}", "rejected", refused.reason)
            await self._refuse(refused, scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _refuse(self, refused: Rejected, scope: Scope, receive: Receive, send: Send) -> None:
        challenge = ['realm="lakegraph"']
        if refused.error:
            challenge += [f'error="{refused.error}"', f'error_description="{_UNQUOTABLE.sub("", refused.reason)}"']
        if self.metadata_url:
            challenge.append(f'resource_metadata="{self.metadata_url}"')
        headers = {"WWW-Authenticate": "Bearer " + ", ".join(challenge)} if refused.status in (401, 403) else {}
        body = {"error": refused.reason} if not refused.error else {"error": refused.error, "error_description": refused.reason}
        await JSONResponse(body, status_code=refused.status, headers=headers)(scope, receive, send)


def _presented(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    if request.url.path == PAGE_PATH and request.query_params.get("token"):
        return request.query_params["token"]
    return request.cookies.get(COOKIE, "")
