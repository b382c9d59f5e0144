"""The web console's routes in the api handler (GET /console, GET /console/{asset}): public static
files with their content types and security headers, 404 for any other name, no markup built from
data in the script. The browser tests are tests/e2e/test_console.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.integration.service import Context, api_event, load_handler

ROOT = Path(__file__).resolve().parents[3]
CONSOLE = ROOT / "functions" / "api" / "console"


@pytest.fixture(scope="module")
def api(monkeypatch_module: Any) -> Any:
    return load_handler("api")


@pytest.fixture(scope="module")
def monkeypatch_module() -> Any:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("POWERTOOLS_METRICS_DISABLED", "true")
        yield mp


def get(api: Any, path: str, *, route: str | None = None, **kw: Any) -> dict[str, Any]:
    event = api_event("GET", path, tenant=None, route=route, **kw)
    return api.lambda_handler(event, Context())


def header(response: dict[str, Any], name: str) -> str:
    return {k.lower(): v for k, v in response["headers"].items()}[name.lower()]


@pytest.mark.parametrize(
    ("path", "route", "media", "needle"),
    [
        ("/console", "GET /console", "text/html", "<title>acx console</title>"),
        ("/console/console.js", "GET /console/{asset}", "text/javascript", "sessionStorage"),
        ("/console/console.css", "GET /console/{asset}", "text/css", ":focus-visible"),
    ],
)
def test_console_files_are_served_without_a_token_with_their_type_and_headers(
    api: Any, path: str, route: str, media: str, needle: str
) -> None:
    response = get(api, path, route=route)
    assert response["statusCode"] == 200, response
    assert header(response, "Content-Type") == f"{media}; charset=utf-8"
    assert needle in response["body"]
    csp = header(response, "Content-Security-Policy")
    assert csp.startswith("default-src 'self';") and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert header(response, "X-Frame-Options") == "DENY"
    assert header(response, "X-Content-Type-Options") == "nosniff"
    assert header(response, "Referrer-Policy") == "no-referrer"
    assert not any(k.lower().startswith("access-control-") for k in response["headers"])
    assert "set-cookie" not in {k.lower() for k in response["headers"]} and not response.get("cookies")


@pytest.mark.parametrize(
    "asset",
    ["index.html", "app.py", "..%2Fapp.py", "console.JS", "nope.js", "console.js.map", "%2e%2e"],
)
def test_any_other_console_name_is_404_in_the_error_shape(api: Any, asset: str) -> None:
    response = get(api, f"/console/{asset}", route="GET /console/{asset}")
    assert response["statusCode"] == 404
    assert json.loads(response["body"]) == {
        "error": {"code": "no_such_route", "message": "no such console file"}
    }


def test_a_token_changes_nothing_the_page_is_the_same_for_everyone(api: Any) -> None:
    anonymous = get(api, "/console", route="GET /console")
    with_token = api.lambda_handler(api_event("GET", "/console", route="GET /console"), Context())
    assert anonymous["body"] == with_token["body"]


def test_the_page_runs_no_inline_script_or_style_and_builds_no_markup_from_data() -> None:
    html = (CONSOLE / "index.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script\b[^>]*>", html)
    assert scripts and all("src=" in s for s in scripts)  # CSP script-src 'self' allows no inline code
    assert " style=" not in html and "<style" not in html
    assert re.search(r"<[^>]*\son[a-z]+=", html) is None  # no inline event handlers either
    js = (CONSOLE / "console.js").read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in js, sink
    assert "textContent" in js
    assert 'credentials: "omit"' in js  # no cookie ever goes out with an API call


def test_every_form_control_has_a_label() -> None:
    html = (CONSOLE / "index.html").read_text(encoding="utf-8")
    ids = set(re.findall(r'<(?:input|textarea|select)\b[^>]*\bid="([^"]+)"', html))
    labelled = set(re.findall(r'<label for="([^"]+)"', html))
    assert ids and ids <= labelled, ids - labelled
    assert '<main id="main"' in html and "<nav " in html and '<html lang="en">' in html


def test_openapi_declares_the_console_public_with_its_media_types(api: Any) -> None:
    document = json.loads(api._openapi_document())
    page = document["paths"]["/console"]["get"]
    asset = document["paths"]["/console/{asset}"]["get"]
    assert page["security"] == [] and asset["security"] == []
    assert set(page["responses"]["200"]["content"]) == {"text/html"}
    assert set(asset["responses"]["200"]["content"]) == {"text/javascript", "text/css"}
    assert set(asset["responses"]) == {"200", "404"}
