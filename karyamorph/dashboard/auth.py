"""The page's access token, as Jupyter does it: a random token in the printed URL; the first
request that carries it gets a cookie, and every request without one of the two is refused (403).

The server listens on 127.0.0.1, but any local process (or a web page the browser visits that
points a request at localhost) could reach it; the token is what makes the page, its SQL tile
and its run button answer only to whoever was given the URL.
"""

from __future__ import annotations

import hmac
import secrets
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "karyamorph_token"
PARAM = "token"


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(32)


def _equal(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


class TokenGate:
    """ASGI middleware: pass a request carrying the token (``?token=``, the cookie, or an
    ``Authorization: token ...`` header), refuse the others with 403.

    A request that came with ``?token=`` gets the cookie in its answer, so the page's own later
    requests (static files, fragments) need not repeat it.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1")).get(PARAM, [None])[0]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        cookie = SimpleCookie()
        cookie.load(headers.get("cookie", ""))
        from_cookie = cookie[COOKIE].value if COOKIE in cookie else None
        auth = headers.get("authorization", "")
        from_header = auth[len("token ") :] if auth.lower().startswith("token ") else None
        if _equal(query, self.token):
            await self.app(scope, receive, self._with_cookie(send))
        elif _equal(from_cookie, self.token) or _equal(from_header, self.token):
            await self.app(scope, receive, send)
        else:
            await _refuse(send)

    def _with_cookie(self, send: Send) -> Send:
        value = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []),
                                                  (b"set-cookie", value.encode("latin-1"))]}  # fmt: skip
            await send(message)

        return sending


async def _refuse(send: Send) -> None:
    body = (b"403 Forbidden: this page needs its access token. Open the URL that "
            b"`karyamorph dashboard` printed (it ends in ?token=...).\n")  # fmt: skip
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})
