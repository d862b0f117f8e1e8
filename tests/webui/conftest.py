"""The one headless chromium a browser test module shares (Debian's, driven by Playwright)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.webui.server import CHROMIUM_ARGS


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium from PATH, launched once per module (the modules skip themselves without it)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=shutil.which("chromium") or "", args=CHROMIUM_ARGS
        )
        yield launched
        launched.close()
