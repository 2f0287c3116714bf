"""The REST face's public reads and the league page: what anyone may read with no credential.

- A public route is a ``GET`` under :data:`PUBLIC_PREFIX` (``GetPublicLeague``): its JSON
  answer carries a strong ``ETag`` (a hash of the body), is answered ``304 Not Modified`` to
  an ``If-None-Match`` that names it, may be kept by any cache that asks again each time
  (``Cache-Control: public, no-cache``) and is readable from every origin
  (``Access-Control-Allow-Origin: *``: it holds nothing a credential would protect).
- ``GET /leagues/{public_id}``: the league page (``web/league.html``), which reads that route
  and polls it with its ETag. It may be framed by any site (``frame-ancestors *``, for this
  page only) and loads nothing from elsewhere (``default-src 'self'``).
"""

from __future__ import annotations

import hashlib
from importlib import resources

from aiohttp import web

PUBLIC_PREFIX = "/v1/public/"
"""Routes under it take no credential (their RPCs read nothing private)."""
PAGE_PATH = "/leagues/{public_id}"
"""The league page."""
PUBLIC_CACHE = "public, no-cache"
PAGE_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; frame-ancestors *"
)
"""The page's Content-Security-Policy: its own scripts and reads only, framed by anyone."""


def is_public(http_method: str, template: str) -> bool:
    """Whether a route is a public read (see the module docstring)."""
    return http_method == "GET" and template.startswith(PUBLIC_PREFIX)


def etag_of(body: str) -> str:
    """The strong ETag of a JSON answer: 128 bits of its SHA-256, quoted."""
    return '"' + hashlib.sha256(body.encode()).hexdigest()[:32] + '"'


def _matches(if_none_match: str, etag: str) -> bool:
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag in tags


def public_response(request: web.Request, body: str) -> web.Response:
    """A public read's answer: 200 with its ETag, or 304 when the client holds it already."""
    etag = etag_of(body)
    headers = {"ETag": etag, "Cache-Control": PUBLIC_CACHE, "Access-Control-Allow-Origin": "*"}
    if _matches(request.headers.get("If-None-Match", ""), etag):
        return web.Response(status=304, headers=headers)
    return web.Response(text=body, content_type="application/json", headers=headers)


def league_page_html() -> str:
    return resources.files("truco_server.web").joinpath("league.html").read_text(encoding="utf-8")


async def league_page(request: web.Request) -> web.Response:
    """The league page (the same for every public id: the page reads its id from its URL, and
    an unknown one shows "no such league" from the 404 of the JSON view)."""
    return web.Response(
        text=league_page_html(),
        content_type="text/html",
        headers={
            "Cache-Control": "no-cache",
            "Content-Security-Policy": PAGE_CSP,
            "Referrer-Policy": "no-referrer",
        },
    )


def install(app: web.Application) -> None:
    """Add the league page to the app."""
    app.router.add_get(PAGE_PATH, league_page, name="league_page")


__all__ = ["PAGE_PATH", "PUBLIC_PREFIX", "install", "is_public", "public_response"]
