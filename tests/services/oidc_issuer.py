"""A real OpenID Connect issuer for the tests: panva's `oidc-provider` (npm, OpenID certified) run by
Node.js with `tests/services/oidc/issuer.mjs`, its packages installed with `npm ci` from the
committed lock file into the cache folder on first use.

`Issuer` writes the configuration the script reads — signing keys generated here (so a test can
rotate them), clients with their groups and token lifetimes, users, the audiences it issues
for — and obtains tokens by the real flows: client credentials, and authorization code with PKCE
for a user (its login form filled in as a browser would).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
import shutil
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.services.npm import installed
from worker.runtime.processes import free_port
from worker.runtime.services import ServiceProcess, spawn

SOURCE = Path(__file__).with_name("oidc")
FILES = ("package.json", "package-lock.json", "issuer.mjs")
SCOPES = ["lakegraph:read", "lakegraph:sql"]


def ensure_packages(cache_dir: Path) -> Path:
    """The issuer's folder under the cache, with its node_modules installed from the lock file."""
    return installed(SOURCE, FILES, cache_dir / "oidc-issuer")


def signing_key(kid: str) -> dict[str, Any]:
    """A new RSA signing key as a private JWK."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return {**RSAAlgorithm.to_jwk(key, as_dict=True), "kid": kid, "use": "sig", "alg": "RS256"}


@dataclass
class Client:
    client_id: str
    groups: list[str]
    client_secret: str = field(default_factory=lambda: secrets.token_urlsafe(24))
    ttl: int = 600
    redirect_uri: str = ""  # set: an authorization-code client (a user's), else client credentials


@dataclass
class User:
    id: str
    groups: list[str]


class Issuer:
    def __init__(self, cache_dir: Path, logs: Path, audiences: list[str], clients: list[Client], users: list[User] | None = None) -> None:
        self.home = ensure_packages(cache_dir)
        self.logs = logs
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.audiences = audiences
        self.clients = {client.client_id: client for client in clients}
        self.users = users or []
        self.keys = [signing_key("key-1")]
        self.process: ServiceProcess | None = None

    def start(self) -> Issuer:
        config = self.logs / f"issuer-{self.port}.json"
        config.write_text(
            json.dumps(
                {
                    "issuer": self.url,
                    "port": self.port,
                    "keys": self.keys,
                    "audiences": self.audiences,
                    "scopes": SCOPES,
                    "clients": [vars(client) for client in self.clients.values()],
                    "users": [vars(user) for user in self.users],
                }
            )
        )
        node = shutil.which("node") or "node"
        self.process = spawn("oidc issuer", [node, str(self.home / "issuer.mjs"), str(config)], self.logs / f"issuer-{self.port}.log", cwd=self.home)
        self.process.wait_ready(self._answers, 60.0)
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None

    def rotate(self, keep_old: bool) -> None:
        """A new signing key, published first (it signs from now on); the old one kept or dropped."""
        self.keys = [signing_key(f"key-{len(self.keys) + 1}"), *(self.keys if keep_old else [])]
        self.stop()
        self.start()

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/.well-known/openid-configuration", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            return False

    def client_token(self, client_id: str, resource: str | None = None, scope: str | None = None) -> str:
        """An access token by the client credentials grant."""
        client = self.clients[client_id]
        form = {"grant_type": "client_credentials", "resource": resource or self.audiences[0]}
        if scope:
            form["scope"] = scope
        basic = base64.b64encode(f"{client.client_id}:{client.client_secret}".encode()).decode()
        return self._token(form, {"Authorization": f"Basic {basic}"})

    def user_token(self, client_id: str, user: str, resource: str | None = None) -> str:
        """An access token by the authorization code grant with PKCE: the user logs in on the
        issuer's own form (followed as a browser would), and the code is exchanged for the token."""
        client = self.clients[client_id]
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        query = {
            "client_id": client_id,
            "response_type": "code",
            "redirect_uri": client.redirect_uri,
            "scope": "openid " + " ".join(SCOPES),
            "resource": resource or self.audiences[0],
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": secrets.token_urlsafe(8),
        }
        browser = _Browser(stop_at=client.redirect_uri)
        page = browser.get(f"{self.url}/auth?{urllib.parse.urlencode(query)}")
        while not page.url.startswith(client.redirect_uri):
            form = re.search(r'<form[^>]*action="([^"]+)"', page.body)
            if form is None:
                raise RuntimeError(f"the issuer's page at {page.url} has no form: {page.body[:300]}")
            fields = dict(re.findall(r'<input[^>]*name="([^"]+)"[^>]*value="([^"]*)"', page.body))
            fields.update({"login": user, "password": "any"} if 'name="login"' in page.body else {})
            page = browser.post(urllib.parse.urljoin(page.url, form.group(1)), fields)
        answered = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)
        if "code" not in answered:
            raise RuntimeError(f"the issuer gave no code: {answered}")
        code = answered["code"][0]
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": client.redirect_uri, "code_verifier": verifier, "client_id": client_id}
        return self._token(form, {})

    def _token(self, form: dict[str, str], headers: dict[str, str]) -> str:
        request = urllib.request.Request(self.url + "/token", data=urllib.parse.urlencode(form).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return json.loads(answer.read())["access_token"]
        except urllib.error.HTTPError as refused:
            raise RuntimeError(f"the issuer refused the token request: {refused.read().decode()}") from None


@dataclass
class _Page:
    url: str
    body: str


class _Browser:
    """Cookies kept and redirects followed, stopping at a redirect to the client (nothing listens there)."""

    def __init__(self, stop_at: str) -> None:
        self.stop_at = stop_at
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()), _NoRedirect())

    def get(self, url: str) -> _Page:
        return self._follow(urllib.request.Request(url))

    def post(self, url: str, fields: dict[str, str]) -> _Page:
        return self._follow(urllib.request.Request(url, data=urllib.parse.urlencode(fields).encode(), method="POST"))

    def _follow(self, request: urllib.request.Request) -> _Page:
        for _ in range(20):
            try:
                with self.opener.open(request, timeout=10) as answer:
                    return _Page(answer.url, answer.read().decode())
            except urllib.error.HTTPError as moved:
                if moved.code not in (301, 302, 303, 307, 308):
                    raise
                location = urllib.parse.urljoin(request.full_url, moved.headers["Location"])
                if location.startswith(self.stop_at):
                    return _Page(location, "")
                request = urllib.request.Request(location)
        raise RuntimeError("too many redirects at the issuer")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None
