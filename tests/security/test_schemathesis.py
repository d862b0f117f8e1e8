"""schemathesis against the app's own OpenAPI schema: no request, valid or not, gets a 5xx, and every reply
matches the schema the route declares. Bounded (`MAX_EXAMPLES` per operation) so `make test` stays quick.

The app runs once (lifespan and all) with the demo world loaded, so ids like `hikari` hit real rows; the
cases are sent through that one TestClient rather than schemathesis' own ASGI client, which would keep a
lifespan per app alive until the process exits.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable

from backend.app import create_app
from backend.config import Settings
from backend.scripted import ScriptedLLM

schemathesis = pytest.importorskip("schemathesis", reason="schemathesis is in the dev extra")
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import response_schema_conformance  # noqa: E402

MAX_EXAMPLES = 15
CHECKS = [not_a_server_error, response_schema_conformance]


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    directory = tmp_path_factory.mktemp("schemathesis")
    config = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=f"sqlite:///{directory / 'machi.db'}",
        llm_provider="scripted",
        llm_retry_backoff_s=0.0,
        load_demo_world=True,
        turn_deadline_s=5.0,
    )
    with TestClient(create_app(config, llm=ScriptedLLM(seed=0)), raise_server_exceptions=False) as client:
        yield client


def _operations() -> list[Any]:
    """The schema's operations, read from an app built without starting it (the schema needs no database)."""
    app = create_app(Settings(_env_file=None, load_demo_world=False, database_url="sqlite://"))  # type: ignore[call-arg]
    schema = schemathesis.openapi.from_dict(app.openapi())
    return [result.ok() for result in schema.get_all_operations()]


OPERATIONS = _operations()
#: Ids of the demo world: with these the generated bodies reach the service code instead of a 404.
DEMO_IDS = {"agent_id": "aoi", "other_id": "hikari", "poi_id": "cafe", "player_id": "player:guest"}
MODES = ["positive", "negative", "demo-ids"]


def _strategy(operation: Any, mode: str) -> Any:
    if mode == "negative":
        return operation.as_strategy(generation_mode=schemathesis.GenerationMode.NEGATIVE)
    fixed = {name: DEMO_IDS[name] for name in re.findall(r"{(\w+)}", operation.path) if name in DEMO_IDS}
    if mode == "demo-ids" and fixed:
        return operation.as_strategy(path_parameters=fixed)
    return operation.as_strategy()


# schemathesis' own pytest plugin trips over pytest 9 (`Function._nodeid`), so each operation is a plain
# parametrized test that runs a bounded hypothesis search over the operation's strategy.
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.label)
def test_api_never_errors_and_matches_its_schema(operation: Any, mode: str, fuzzed: TestClient) -> None:
    if mode == "demo-ids" and not set(DEMO_IDS) & set(re.findall(r"{(\w+)}", operation.path)):
        pytest.skip("no agent, person or place id in the path")

    @given(case=_strategy(operation, mode))
    @settings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,  # the same cases every run: a red CI run is reproducible
        database=None,
        phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure prints its curl as found
    )
    def run(case: Any) -> None:
        kwargs = case.as_transport_kwargs(base_url="http://testserver")
        response = fuzzed.request(**_httpx_kwargs(kwargs))
        case.validate_response(response, checks=CHECKS)

    try:
        run()
    except Unsatisfiable:
        if mode != "negative":
            raise
        pytest.skip("nothing in this operation can be made invalid")  # e.g. GET /health takes no input


def _httpx_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """schemathesis serialises for `requests`; the TestClient speaks httpx (`data` bytes are `content`)."""
    out = {k: v for k, v in kwargs.items() if k in ("method", "url", "headers", "params", "json")}
    data = kwargs.get("data")
    if isinstance(data, bytes | str):
        out["content"] = data
    elif data is not None:
        out["data"] = data
    out["follow_redirects"] = False
    return out
