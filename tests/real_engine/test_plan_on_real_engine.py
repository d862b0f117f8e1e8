"""A plan made of nonsense, from the real engine through the real app: stored sound, or re-asked, never broken.

The tiny model's plans are valid JSON (the grammar) but nonsense (unknown places, random hours), which is
exactly what the server's plan validation and repair must cope with.
"""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from backend.app import create_app
from backend.config import Settings
from tests.conftest import drain
from tests.planning.test_plan_api import assert_sound, build_world

DAYS = 4


def test_nonsense_plans_are_repaired_reasked_or_replaced_never_stored_broken(
    settings: Settings, tiny_model: Path
) -> None:
    real = settings.model_copy(
        update={
            "llm_provider": "llamacpp",
            "llamacpp_model_path": str(tiny_model),
            "llamacpp_threads": 1,
            "llamacpp_n_gpu_layers": 0,
            "llamacpp_n_ctx": 4096,
            "llm_temperature": 1.0,
        }
    )
    with TestClient(create_app(real)) as client:
        assert client.app.state.provider.name == "llamacpp"  # type: ignore[attr-defined]
        build_world(client)
        sources = []
        for day in range(1, DAYS + 1):
            response = client.post("/v1/agents/aoi/plan", json={"day": day})
            assert response.status_code == 200, response.text
            plan = response.json()
            sources.append(plan["source"])
            assert_sound(plan["items"])
            assert (plan["source"] == "repaired") == bool(plan["repairs"])
            stored = client.get("/v1/agents/aoi/plan", params={"day": day}).json()
            assert stored["items"] == plan["items"]
        drain(client)
        calls = client.get("/v1/llm-calls", params={"purpose": "plan", "limit": 100}).json()["calls"]
    print(f"plan sources over {DAYS} days: {sources}; plan calls: {len(calls)}")
    assert all(call["provider"] == "llamacpp" and call["model"] == "tiny.gguf" for call in calls)
    # The grammar keeps the JSON valid: a call fails only as a refused reply (an echo, a plan beyond repair),
    # which is traced as failed and re-asked.
    refused = [c for c in calls if not c["ok"]]
    assert all(c["error"].startswith("invalid reply: ") for c in refused), [c["error"] for c in refused]
    assert DAYS <= len(calls) <= 2 * DAYS  # one ask per day, plus at most one re-ask
    assert len(calls) >= DAYS + sources.count("fallback")  # a plan beyond repair was re-asked first
    # Nonsense never survives as is: the model does not know the town's place ids.
    assert all(source in {"repaired", "fallback"} for source in sources)
