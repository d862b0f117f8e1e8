"""/docs and /redoc with the network cut off: Debian's chromium (Playwright) against the real server, every
request that leaves 127.0.0.1 aborted and counted. Screenshots go to test-output/screenshots/."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

CHROMIUM = shutil.which("chromium")
try:
    from playwright.sync_api import Browser, ConsoleMessage, Page, Route, expect
except ImportError:  # pragma: no cover - depends on the machine
    pytest.skip("playwright is not installed (pip install -e '.[dev]')", allow_module_level=True)
if CHROMIUM is None:  # pragma: no cover - depends on the machine
    pytest.skip("chromium is missing (.ci/webui.sh installs Debian chromium)", allow_module_level=True)

from tests.webui.server import SHOTS, TIMEOUT_MS, running_server  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LOCAL_HOSTS = {"127.0.0.1", "localhost"}
#: ReDoc 2's sidebar footer ("API docs by Redocly") always asks for this logo and hides it when it fails to
#: load; it is the one request off the machine either page makes, and nothing else depends on it.
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"
expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_server(tmp_path_factory.mktemp("docs")) as url:
        yield url


@pytest.fixture
def offline(browser: Browser) -> Iterator[tuple[Page, list[str]]]:
    """A page whose requests off 127.0.0.1 are aborted and listed; console errors fail the test."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    blocked: list[str] = []

    def only_local(route: Route) -> None:
        url = urlsplit(route.request.url)
        if url.scheme in ("http", "https", "ws", "wss") and url.hostname not in LOCAL_HOSTS:
            blocked.append(route.request.url)
            route.abort("internetdisconnected")
        else:
            route.continue_()

    context.route("**/*", only_local)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error" and message.location.get("url") != REDOC_LOGO:
            errors.append(f"console: {message.text} ({message.location.get('url')})")

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(f"uncaught: {exc}"))
    yield page, blocked
    context.close()
    assert not errors, "\n".join(errors)


def shoot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def test_swagger_ui_renders_the_operations_offline(offline: tuple[Page, list[str]], base: str) -> None:
    page, blocked = offline
    page.goto(base + "/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Machi")
    turn = page.locator('.opblock-post:has(.opblock-summary-path[data-path="/v1/conversation/turn"])')
    expect(turn).to_be_visible()
    # The vendored stylesheet applied: a POST block gets Swagger UI's green border.
    expect(turn).to_have_css("border-color", "rgb(73, 204, 144)")
    turn.locator(".opblock-summary-control").click()
    expect(turn.locator(".try-out__btn")).to_be_visible()  # expanded: the schema was read and rendered
    page.wait_for_load_state("networkidle")
    shoot(page, "docs")
    assert blocked == []


def test_redoc_renders_the_api_offline(offline: tuple[Page, list[str]], base: str) -> None:
    page, blocked = offline
    page.goto(base + "/redoc")
    expect(page.locator(".api-info h1")).to_contain_text("Machi")
    operation = page.locator('[data-section-id="operation/take_turn_v1_conversation_turn_post"]')
    expect(operation.locator("h2")).to_have_text("Take Turn")
    expect(operation).to_contain_text("/v1/conversation/turn")
    expect(page.locator(".menu-content")).to_contain_text("Take Turn")
    expect(page.locator('img[alt="redocly logo"]')).to_have_count(0)  # blocked, so ReDoc hid it
    page.wait_for_load_state("networkidle")
    shoot(page, "redoc")
    assert set(blocked) <= {REDOC_LOGO}, blocked
