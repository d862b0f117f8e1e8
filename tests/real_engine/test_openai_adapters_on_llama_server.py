"""The openai and vllm adapters against a real OpenAI-compatible server: llama.cpp's `llama-server` on
loopback with the tiny model, through the official `openai` client (`response_format` json_schema, streaming).

The binary comes from build_llama_server.sh (which .ci/run runs). Without it the module is skipped locally
and fails under CI, where it must run.
"""

from __future__ import annotations

import importlib.metadata
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import BaseModel

from backend.conversation.schemas import TurnReply
from backend.emotion.schemas import EmotionEvaluation
from backend.llm.base import Completion, GenerateOptions, json_schema_for, parse_reply
from backend.llm.openai_compat import VLLMLLM, OpenAILLM
from backend.memory.prompts import ConversationReflection, ImportanceRating

BUILD_SCRIPT = Path(__file__).with_name("build_llama_server.sh")
ALIAS = "tiny"
MESSAGES = [{"role": "user", "content": "今日の広場はどうだった？ Answer in JSON."}]


def server_binary() -> Path:
    version = importlib.metadata.version("llama-cpp-python")
    default = Path.home() / ".cache" / "machi" / "llama-server" / version
    return Path(os.environ.get("MACHI_LLAMA_SERVER_DIR") or default) / "llama-server"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_healthy(process: subprocess.Popen[bytes], url: str, log: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"llama-server exited ({process.returncode}):\n{log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"llama-server not healthy after {timeout_s} s:\n{log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def server_url(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = server_binary()
    if not binary.is_file():
        message = f"llama-server not built: run {BUILD_SCRIPT} (.ci/run does)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        str(binary),
        "-m",
        str(tiny_model),
        "--alias",
        ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    command += ["-t", "1", "-tb", "1", "-c", "2048", "-np", "1", "--no-webui"]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(process, base, log)
        yield f"{base}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def adapters(url: str) -> list[OpenAILLM]:
    return [
        OpenAILLM(api_key="sk-local", model=ALIAS, base_url=url, temperature=1.0),
        VLLMLLM(api_key="EMPTY", model=ALIAS, base_url=url, temperature=1.0),
    ]


@pytest.mark.parametrize("schema", [ImportanceRating, EmotionEvaluation, TurnReply], ids=lambda s: s.__name__)
async def test_json_schema_replies_validate(server_url: str, schema: type[BaseModel]) -> None:
    for llm in adapters(server_url):
        try:
            for seed in range(5):
                options = GenerateOptions(purpose="test", seed=seed, max_tokens=256)
                reply = await llm.generate_json(MESSAGES, schema, options=options)
                assert isinstance(reply, schema)
        finally:
            await llm.aclose()


async def test_streaming_through_the_openai_client(server_url: str) -> None:
    llm = OpenAILLM(api_key="sk-local", model=ALIAS, base_url=server_url, temperature=1.0)
    usage = Completion("")
    options = GenerateOptions(purpose="test", seed=3, max_tokens=256)
    schema = json_schema_for(ConversationReflection)
    try:
        pieces = [p async for p in llm.stream(MESSAGES, options=options, schema=schema, usage=usage)]
        assert "available" in await llm.check()
    finally:
        await llm.aclose()
    assert len(pieces) > 3
    parse_reply("".join(pieces), ConversationReflection)
    assert usage.completion_tokens and usage.completion_tokens >= len(pieces) // 2
    assert usage.prompt_tokens and usage.prompt_tokens > 5
