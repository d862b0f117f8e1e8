"""The API's own pages, `/docs` (Swagger UI) and `/redoc`, served with their scripts from `/static/vendor/`.

FastAPI's built-in pages load Swagger UI and ReDoc from a CDN (and ReDoc's fonts from Google), so they are blank
at an exhibition booth with no network. These are the same pages, made with FastAPI's own helpers, pointing at
copies vendored in `webui/static/vendor/` (see its README.md for versions and how to refresh them).
`create_app` turns the built-in ones off (`docs_url=None, redoc_url=None`); the paths stay public
(`backend/security/middleware.py`).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse

DOCS_PATH = "/docs"
OAUTH2_REDIRECT_PATH = "/docs/oauth2-redirect"
REDOC_PATH = "/redoc"
VENDOR = "/static/vendor"
FAVICON = "/static/favicon.svg"
#: Swagger UI sends the schema to validator.swagger.io for its badge unless told not to.
SWAGGER_UI_PARAMETERS = {"validatorUrl": None}

router = APIRouter(include_in_schema=False)


def _root(request: Request) -> str:
    """The prefix a reverse proxy mounts the app under ("" when served at /), as FastAPI's own pages use."""
    root_path: str = request.scope.get("root_path", "")
    return root_path.rstrip("/")


@router.get(DOCS_PATH)
async def swagger_ui(request: Request) -> HTMLResponse:
    app = request.app
    root = _root(request)
    return get_swagger_ui_html(
        openapi_url=root + app.openapi_url,
        title=f"{app.title} - Swagger UI",
        swagger_js_url=f"{root}{VENDOR}/swagger-ui/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{VENDOR}/swagger-ui/swagger-ui.css",
        swagger_favicon_url=root + FAVICON,
        oauth2_redirect_url=root + OAUTH2_REDIRECT_PATH,
        init_oauth=app.swagger_ui_init_oauth,
        swagger_ui_parameters={**SWAGGER_UI_PARAMETERS, **(app.swagger_ui_parameters or {})},
    )


@router.get(OAUTH2_REDIRECT_PATH)
async def swagger_ui_oauth2_redirect() -> HTMLResponse:
    return get_swagger_ui_oauth2_redirect_html()


@router.get(REDOC_PATH)
async def redoc(request: Request) -> HTMLResponse:
    app = request.app
    root = _root(request)
    return get_redoc_html(
        openapi_url=root + app.openapi_url,
        title=f"{app.title} - ReDoc",
        redoc_js_url=f"{root}{VENDOR}/redoc/redoc.standalone.js",
        redoc_favicon_url=root + FAVICON,
        with_google_fonts=False,
    )
