"""Every model a client sees on the wire, by the name its JSON Schema (and generated C# class) carries.

Imported from the concept modules, so the exported schemas are the server's own validation and reply models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from backend.action.schemas import ActionResult, ActionResultAccepted, AgentAction, WorldActions
from backend.conversation.schemas import (
    ConversationDetail,
    ConversationList,
    EndRequest,
    EndResult,
    PlayerTurnRequest,
    PlayerTurnResult,
    TurnRequest,
    TurnResult,
)
from backend.council.schemas import (
    CouncilAccepted,
    CouncilCreate,
    CouncilList,
    CouncilPublic,
    JudgeRequest,
    JudgeResult,
)
from backend.intention.schemas import IntentionsPublic, WhisperRequest, WhisperResult
from backend.interview.schemas import InterviewRequest, InterviewResult
from backend.memory.models import (
    MemoryBatchCreate,
    MemoryCreate,
    MemoryList,
    MemoryPublic,
    ReflectRequest,
    ReflectResponse,
    RetrieveRequest,
    RetrieveResponse,
)
from backend.planning.schemas import PlanNow, PlanPublic, PlanRequest
from backend.player.schemas import PlayerList, PlayerPublic, PlayerUpsert
from backend.protocol.wire import ErrorBody, HealthPublic, TurnDelta, TurnReset
from backend.world.schemas import (
    AgentDetail,
    AgentPublic,
    AgentUpsert,
    GesturesUpdate,
    PoiPublic,
    PoiUpsert,
    StateAccepted,
    StateReport,
)

Role = Literal["request", "reply", "event"]


@dataclass(frozen=True)
class WireModel:
    model: type[BaseModel]
    role: Role
    used_by: str  # the call (or SSE event) that sends or returns it

    @property
    def name(self) -> str:
        """The schema's (and generated C# class's) name: the pydantic class name."""
        return self.model.__name__


PROTOCOL_MODELS: tuple[WireModel, ...] = (
    WireModel(HealthPublic, "reply", "GET /health"),
    WireModel(ErrorBody, "reply", "any 4xx/5xx; SSE event `error`"),
    WireModel(AgentUpsert, "request", "PUT /v1/agents/{agent_id}"),
    WireModel(AgentPublic, "reply", "GET /v1/agents (a JSON array of these)"),
    WireModel(AgentDetail, "reply", "GET|PUT /v1/agents/{agent_id}"),
    WireModel(PoiUpsert, "request", "PUT /v1/pois/{poi_id}"),
    WireModel(PoiPublic, "reply", "GET /v1/pois (array), GET|PUT /v1/pois/{poi_id}"),
    WireModel(StateReport, "request", "POST /v1/agents/{agent_id}/state"),
    WireModel(StateAccepted, "reply", "POST /v1/agents/{agent_id}/state"),
    WireModel(WorldActions, "reply", "GET /v1/world/actions, PUT /v1/world/gestures"),
    WireModel(GesturesUpdate, "request", "PUT /v1/world/gestures"),
    WireModel(AgentAction, "request", "the `action` of POST /v1/agents/{agent_id}/action-result"),
    WireModel(ActionResult, "request", "POST /v1/agents/{agent_id}/action-result"),
    WireModel(ActionResultAccepted, "reply", "POST /v1/agents/{agent_id}/action-result"),
    WireModel(PlanRequest, "request", "POST /v1/agents/{agent_id}/plan"),
    WireModel(PlanPublic, "reply", "GET|POST /v1/agents/{agent_id}/plan"),
    WireModel(PlanNow, "reply", "GET /v1/agents/{agent_id}/plan/now"),
    WireModel(TurnRequest, "request", "POST /v1/conversation/turn[/stream]"),
    WireModel(TurnResult, "reply", "POST /v1/conversation/turn; SSE event `reply`"),
    WireModel(TurnDelta, "event", "SSE event `delta` of /v1/conversation/turn/stream"),
    WireModel(TurnReset, "event", "SSE event `reset` of /v1/conversation/turn/stream"),
    WireModel(PlayerTurnRequest, "request", "POST /v1/conversation/player-turn[/stream]"),
    WireModel(
        PlayerTurnResult, "reply", "POST /v1/conversation/player-turn; SSE event `reply` of its stream"
    ),
    WireModel(PlayerUpsert, "request", "PUT /v1/players/{player_id}"),
    WireModel(PlayerPublic, "reply", "GET|PUT /v1/players/{player_id}"),
    WireModel(PlayerList, "reply", "GET /v1/players"),
    WireModel(EndRequest, "request", "POST /v1/conversation/end"),
    WireModel(EndResult, "reply", "POST /v1/conversation/end"),
    WireModel(ConversationList, "reply", "GET /v1/conversations"),
    WireModel(ConversationDetail, "reply", "GET /v1/conversations/{session_id}"),
    WireModel(MemoryCreate, "request", "POST /v1/agents/{agent_id}/memories"),
    WireModel(
        MemoryBatchCreate, "request", "POST /v1/agents/{agent_id}/memories (a batch; answers a MemoryList)"
    ),
    WireModel(MemoryPublic, "reply", "POST /v1/agents/{agent_id}/memories"),
    WireModel(MemoryList, "reply", "GET /v1/agents/{agent_id}/memories"),
    WireModel(RetrieveRequest, "request", "POST /v1/agents/{agent_id}/memories/retrieve"),
    WireModel(RetrieveResponse, "reply", "POST /v1/agents/{agent_id}/memories/retrieve"),
    WireModel(ReflectRequest, "request", "POST /v1/agents/{agent_id}/reflect"),
    WireModel(ReflectResponse, "reply", "POST /v1/agents/{agent_id}/reflect"),
    WireModel(WhisperRequest, "request", "POST /v1/agents/{agent_id}/whisper"),
    WireModel(WhisperResult, "reply", "POST /v1/agents/{agent_id}/whisper"),
    WireModel(IntentionsPublic, "reply", "GET /v1/agents/{agent_id}/intentions"),
    WireModel(InterviewRequest, "request", "POST /v1/agents/{agent_id}/interview"),
    WireModel(InterviewResult, "reply", "POST /v1/agents/{agent_id}/interview"),
    WireModel(CouncilCreate, "request", "POST /v1/council"),
    WireModel(CouncilAccepted, "reply", "POST /v1/council (202: the council runs in the background)"),
    WireModel(CouncilPublic, "reply", "GET /v1/council/{council_id}"),
    WireModel(CouncilList, "reply", "GET /v1/council"),
    WireModel(JudgeRequest, "request", "POST /v1/judge"),
    WireModel(JudgeResult, "reply", "POST /v1/judge, POST /v1/conversations/{session_id}/judge"),
)


def by_name(name: str) -> WireModel:
    for entry in PROTOCOL_MODELS:
        if entry.name == name:
            return entry
    raise KeyError(name)
