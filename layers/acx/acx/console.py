"""The web console's static files (functions/api/console/) and the headers they are served with.

The console is a static page (HTML, one CSS and one JS file, no build step) that calls the /v1 API
with the person's bearer token from ``sessionStorage``. The files are public: they hold no data.

CSRF: no cookie or other ambient credential carries authority anywhere in the service. A request
acts only with an ``Authorization: Bearer`` header, which a cross-site form, link or image cannot
send, and which a cross-origin ``fetch`` cannot send either without a CORS preflight the service
never grants (it sends no ``Access-Control-Allow-*`` header). So a forged request from another site
reaches the API without a token and is refused with 401 before any handler runs.

The headers below keep the page itself from being turned against its user: scripts, styles and
connections only from the service's own origin (no inline script runs, so injected markup cannot
execute), no framing (clickjacking), no sniffing, no referrer.
"""

from __future__ import annotations

import os
from functools import lru_cache

#: The page (``GET /console``) and its assets (``GET /console/{asset}``), with their content types;
#: any other asset name is 404.
PAGE = ("index.html", "text/html; charset=utf-8")
ASSETS: dict[str, str] = {
    "console.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
}

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

HEADERS: dict[str, str] = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


@lru_cache(maxsize=len(ASSETS) + 1)
def _read(directory: str, name: str) -> str:
    with open(os.path.join(directory, name), encoding="utf-8") as fh:
        return fh.read()


def read_asset(directory: str, name: str | None) -> tuple[str, str, dict[str, str]] | None:
    """(content type, text, headers) of the console's asset ``name`` in ``directory`` (None: the
    page), or None when the console has no such asset. Only the names of :data:`ASSETS` are read:
    never a path taken from the request."""
    if name is None:
        file, content_type = PAGE
    elif name in ASSETS:
        file, content_type = name, ASSETS[name]
    else:
        return None
    return content_type, _read(directory, file), dict(HEADERS)
