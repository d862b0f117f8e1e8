"""/docs and /redoc work offline: every script, stylesheet and icon they name is served by Machi itself."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from backend.config import Settings
from backend.scripted import ScriptedLLM
from tests.conftest import make_client

ASSET = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']""")
SPEC = re.compile(r"""\burl:\s*["']([^"']+)["']|spec-url=["']([^"']+)["']""")
EXPECTED_TYPE = {".js": "javascript", ".css": "text/css", ".svg": "image/svg+xml"}


def _assets(html: str) -> list[str]:
    return ASSET.findall(html)


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_page_names_only_same_origin_assets_that_are_served(client: TestClient, page: str) -> None:
    response = client.get(page)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    # No absolute or protocol-relative URL: no CDN, no Google Fonts, no favicon from fastapi.tiangolo.com.
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", html, re.IGNORECASE), html
    assets = _assets(html)
    scripts = [a for a in assets if a.endswith(".js")]
    assert scripts and all(a.startswith("/static/vendor/") for a in scripts), assets
    for asset in assets:
        served = client.get(asset)
        assert served.status_code == 200, asset
        suffix = asset[asset.rfind(".") :]
        assert EXPECTED_TYPE[suffix] in served.headers["content-type"], (asset, served.headers)
        assert len(served.content) > 100, asset
    spec = next(m for pair in SPEC.findall(html) for m in pair if m)
    assert "/v1/conversation/turn" in client.get(spec).json()["paths"]


def test_swagger_ui_gets_its_stylesheet_and_no_validator_badge(client: TestClient) -> None:
    html = client.get("/docs").text
    assert "/static/vendor/swagger-ui/swagger-ui.css" in _assets(html)
    assert '"validatorUrl": null' in html  # otherwise Swagger UI posts the schema to validator.swagger.io
    assert "window.location.origin + '/docs/oauth2-redirect'" in html
    redirect = client.get("/docs/oauth2-redirect")
    assert redirect.status_code == 200 and "oauth2" in redirect.text.lower()
    assert not re.search(r"https?://", redirect.text)


def test_docs_and_their_assets_need_no_key(settings: Settings, scripted: ScriptedLLM) -> None:
    with make_client(settings, scripted, machi_api_key=SecretStr("admin-key-0123456789abcdef")) as client:
        assert client.get("/v1/agents").status_code == 401  # the key is really on
        for page in ("/docs", "/redoc", "/docs/oauth2-redirect", "/openapi.json"):
            response = client.get(page, follow_redirects=False)
            assert response.status_code == 200, page
            for asset in _assets(response.text) if page != "/openapi.json" else []:
                assert client.get(asset, follow_redirects=False).status_code == 200, asset
