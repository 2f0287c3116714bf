"""Cross-origin resource sharing (CORS) for the REST face, off unless origins are configured.

A browser app served from another origin (``https://app.example``) may call the API directly
when that origin is listed in ``TRUCO_CORS_ORIGINS`` (comma-separated; ``*`` allows any
origin). Credentials travel in the ``Authorization`` (or ``X-Api-Key``) header, never in
cookies, so no ``Access-Control-Allow-Credentials`` is sent and ``*`` stays safe to answer.

- A preflight (``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method``) from an
  allowed origin is answered here with 204 and the allowed methods and headers; from any
  other origin with 403, so a misconfiguration shows as one clear line in the browser.
- Every other response to an allowed origin (errors and streams included: the headers are
  added when the response is prepared, before its first byte) carries
  ``Access-Control-Allow-Origin`` and exposes the headers a client reads.
- Requests without ``Origin`` (servers, curl, same-origin pages) are untouched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: Request headers a cross-origin caller may send (CORS-safelisted ones need no listing).
ALLOW_HEADERS = ("authorization", "content-type", "x-api-key", "last-event-id")
#: Response headers a cross-origin caller may read besides the safelisted ones.
EXPOSE_HEADERS = ("retry-after", "www-authenticate")
#: How long a browser may cache a preflight answer, seconds.
MAX_AGE_SECONDS = 600


class CorsPolicy:
    """Which origins may call, and the headers that tell a browser so."""

    def __init__(self, origins: Iterable[str], methods: Iterable[str]) -> None:
        self.origins = frozenset(origins)
        self.any_origin = "*" in self.origins
        self.methods = ", ".join(sorted({m.upper() for m in methods} | {"OPTIONS"}))

    @property
    def enabled(self) -> bool:
        return bool(self.origins)

    def allows(self, origin: str) -> bool:
        return self.any_origin or origin in self.origins

    def _allow_origin(self, origin: str) -> str:
        return "*" if self.any_origin else origin

    def preflight(self, request: web.Request) -> web.Response:
        origin = request.headers["Origin"]
        if not self.allows(origin):
            return web.Response(
                status=403,
                text=f"origin {origin} is not allowed (TRUCO_CORS_ORIGINS)\n",
                headers={"Vary": "Origin", "Cache-Control": "no-store"},
            )
        return web.Response(
            status=204,
            headers={
                "Access-Control-Allow-Origin": self._allow_origin(origin),
                "Access-Control-Allow-Methods": self.methods,
                "Access-Control-Allow-Headers": ", ".join(ALLOW_HEADERS),
                "Access-Control-Max-Age": str(MAX_AGE_SECONDS),
                "Vary": "Origin",
            },
        )

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if (
            request.method == "OPTIONS"
            and "Origin" in request.headers
            and "Access-Control-Request-Method" in request.headers
        ):
            return self.preflight(request)
        return await handler(request)

    async def on_response_prepare(self, request: web.Request, response: web.StreamResponse) -> None:
        origin = request.headers.get("Origin")
        if origin is None or not self.allows(origin):
            return
        response.headers["Access-Control-Allow-Origin"] = self._allow_origin(origin)
        response.headers["Access-Control-Expose-Headers"] = ", ".join(EXPOSE_HEADERS)
        vary = response.headers.get("Vary")
        if not self.any_origin and (vary is None or "origin" not in vary.lower()):
            response.headers["Vary"] = f"{vary}, Origin" if vary else "Origin"

    def install(self, app: web.Application) -> None:
        """Answer preflights first (outermost middleware) and label every response."""
        if not self.enabled:
            return
        app.middlewares.insert(0, self.middleware)
        app.on_response_prepare.append(self.on_response_prepare)


__all__ = ["ALLOW_HEADERS", "EXPOSE_HEADERS", "MAX_AGE_SECONDS", "CorsPolicy"]
