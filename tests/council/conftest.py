from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.council.helpers import add_agents


@pytest.fixture
def sisters(client: TestClient) -> TestClient:
    """The app with the three sisters stored as the default world's council."""
    add_agents(client)
    return client
