using System;
using System.Collections.Generic;
using System.Globalization;
using System.Threading;
using Cysharp.Threading.Tasks;
using Machi.Protocol;

namespace Machi.Client
{
    /// <summary>One method per call, in the order a Unity agent makes them (see unity_protocol/README.md).</summary>
    public partial class MachiClient
    {
        public async UniTask<HealthPublic> HealthAsync(CancellationToken ct = default(CancellationToken))
        {
            return FromJson<HealthPublic>(await SendAsync("GET", "/health", null, _options.Timeout, ct));
        }

        public async UniTask<List<PoiPublic>> GetPoisAsync(CancellationToken ct = default(CancellationToken))
        {
            return FromJson<List<PoiPublic>>(await SendAsync("GET", "/v1/pois", null, _options.Timeout, ct));
        }

        public async UniTask<PoiPublic> PutPoiAsync(string poiId, PoiUpsert poi, CancellationToken ct = default(CancellationToken))
        {
            string path = "/v1/pois/" + Escape(poiId);
            return FromJson<PoiPublic>(await SendAsync("PUT", path, ToJson(poi), _options.Timeout, ct));
        }

        public async UniTask<List<AgentPublic>> GetAgentsAsync(CancellationToken ct = default(CancellationToken))
        {
            return FromJson<List<AgentPublic>>(await SendAsync("GET", "/v1/agents", null, _options.Timeout, ct));
        }

        public async UniTask<AgentDetail> GetAgentAsync(string agentId, CancellationToken ct = default(CancellationToken))
        {
            return FromJson<AgentDetail>(await SendAsync("GET", AgentPath(agentId, ""), null, _options.Timeout, ct));
        }

        /// <summary>The action vocabulary: the types a reply's `actions` may carry and this world's gestures.</summary>
        public async UniTask<WorldActions> GetWorldActionsAsync(CancellationToken ct = default(CancellationToken))
        {
            return FromJson<WorldActions>(await SendAsync("GET", "/v1/world/actions", null, _options.Timeout, ct));
        }

        /// <summary>Declares the gesture names your Animator can play (replaces the world's list; Gestures =
        /// null restores the default list, an empty list means none). Replies name only these.</summary>
        public async UniTask<WorldActions> PutGesturesAsync(GesturesUpdate gestures, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(gestures);
            return FromJson<WorldActions>(await SendAsync("PUT", "/v1/world/gestures", body, _options.Timeout, ct));
        }

        public async UniTask<AgentDetail> PutAgentAsync(string agentId, AgentUpsert persona, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(persona);
            return FromJson<AgentDetail>(await SendAsync("PUT", AgentPath(agentId, ""), body, _options.Timeout, ct));
        }

        public async UniTask<StateAccepted> ReportStateAsync(string agentId, StateReport report, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(report);
            return FromJson<StateAccepted>(await SendAsync("POST", AgentPath(agentId, "/state"), body, _options.Timeout, ct));
        }

        /// <summary>Generates the day's plan (or, with time_of_day and a reason, replans the rest of it).</summary>
        public async UniTask<PlanPublic> MakePlanAsync(string agentId, PlanRequest request, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(request);
            return FromJson<PlanPublic>(await SendAsync("POST", AgentPath(agentId, "/plan"), body, _options.TurnTimeout, ct));
        }

        public async UniTask<PlanPublic> GetPlanAsync(string agentId, long day, CancellationToken ct = default(CancellationToken))
        {
            string path = AgentPath(agentId, "/plan") + "?day=" + day.ToString(CultureInfo.InvariantCulture);
            return FromJson<PlanPublic>(await SendAsync("GET", path, null, _options.Timeout, ct));
        }

        /// <summary>What the agent should do now and where to walk (a new day gets its plan on demand).</summary>
        public async UniTask<PlanNow> GetPlanNowAsync(string agentId, long day, double timeOfDay, CancellationToken ct = default(CancellationToken))
        {
            string path = AgentPath(agentId, "/plan/now") + "?day=" + day.ToString(CultureInfo.InvariantCulture)
                + "&time_of_day=" + timeOfDay.ToString("0.####", CultureInfo.InvariantCulture);
            return FromJson<PlanNow>(await SendAsync("GET", path, null, _options.TurnTimeout, ct));
        }

        /// <summary>One conversation turn. Retrying is safe: the same session_id and history length
        /// returns the stored reply. A group sets Participants (2-6, the same list on every turn): ask the
        /// reply's NextSpeaker next (a "player:" id: wait for that visitor's line); Left says who left.</summary>
        public async UniTask<TurnResult> TurnAsync(TurnRequest request, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(request);
            return FromJson<TurnResult>(await SendAsync("POST", "/v1/conversation/turn", body, _options.TurnTimeout, ct));
        }

        /// <summary>Registers a visitor (or renames them): 201 when new. `playerId` is "player:" and an id (the
        /// prefix may be left out). Optional: a visitor never registered is named after their id.</summary>
        public async UniTask<PlayerPublic> PutPlayerAsync(string playerId, PlayerUpsert player, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(player);
            return FromJson<PlayerPublic>(await SendAsync("PUT", PlayerPath(playerId), body, _options.Timeout, ct));
        }

        /// <summary>One visitor; a MachiApiException 404 when this world has never heard of them.</summary>
        public async UniTask<PlayerPublic> GetPlayerAsync(string playerId, CancellationToken ct = default(CancellationToken))
        {
            return FromJson<PlayerPublic>(await SendAsync("GET", PlayerPath(playerId), null, _options.Timeout, ct));
        }

        /// <summary>This world's visitors, most recently seen first.</summary>
        public async UniTask<PlayerList> GetPlayersAsync(CancellationToken ct = default(CancellationToken))
        {
            return FromJson<PlayerList>(await SendAsync("GET", "/v1/players", null, _options.Timeout, ct));
        }

        /// <summary>A visitor's line to an agent and the agent's reply, in one call. Put the reply's PlayerLine,
        /// then "Name: " + Dialogue, into your history. Retrying is safe, as for TurnAsync: the same session_id
        /// and history returns the stored line and reply (a retry is not counted against the rate limits).</summary>
        /// <exception cref="MachiRateLimitException">429: the visitor (PLAYER_LINES_PER_MINUTE) or the world
        /// (WORLD_PLAYER_LINES_PER_MINUTE) said too many lines; Limit names it, RetryAfter says when to send
        /// the line again. Waited out once by itself when RetryAfter is within MaxRateLimitWait.</exception>
        /// <exception cref="MachiApiException">422 naming PLAYER_MAX_CHARS (details.limit) when the text is
        /// too long; 404 unknown agent; 409 the conversation ended.</exception>
        public async UniTask<PlayerTurnResult> PlayerTurnAsync(PlayerTurnRequest request, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(request);
            return FromJson<PlayerTurnResult>(await SendAsync("POST", "/v1/conversation/player-turn", body,
                _options.TurnTimeout, ct));
        }

        public async UniTask<EndResult> EndConversationAsync(EndRequest request, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(request);
            return FromJson<EndResult>(await SendAsync("POST", "/v1/conversation/end", body, _options.Timeout, ct));
        }

        /// <summary>Reports what became of an action a turn reply gave (done, failed, interrupted): the agent
        /// remembers it. A 422 when the action names a place, agent or gesture the world lacks.</summary>
        public async UniTask<ActionResultAccepted> ReportActionResultAsync(string agentId, ActionResult result,
            CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(result);
            string path = AgentPath(agentId, "/action-result");
            return FromJson<ActionResultAccepted>(await SendAsync("POST", path, body, _options.Timeout, ct));
        }

        public async UniTask<MemoryList> GetMemoriesAsync(string agentId, int limit, CancellationToken ct = default(CancellationToken))
        {
            string path = AgentPath(agentId, "/memories") + "?limit=" + limit.ToString(CultureInfo.InvariantCulture);
            return FromJson<MemoryList>(await SendAsync("GET", path, null, _options.Timeout, ct));
        }

        public async UniTask<MemoryPublic> AddMemoryAsync(string agentId, MemoryCreate memory, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(memory);
            return FromJson<MemoryPublic>(await SendAsync("POST", AgentPath(agentId, "/memories"), body, _options.Timeout, ct));
        }

        public async UniTask<RetrieveResponse> RetrieveAsync(string agentId, RetrieveRequest request, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(request);
            string path = AgentPath(agentId, "/memories/retrieve");
            return FromJson<RetrieveResponse>(await SendAsync("POST", path, body, _options.Timeout, ct));
        }

        /// <summary>The prefix of a visitor's id ("player:guest-0042"); agents' ids never have it.</summary>
        public const string PlayerPrefix = "player:";

        /// <summary>Whether a participant id (next_speaker, left, a target) is a visitor's rather than an agent's.</summary>
        public static bool IsPlayer(string participantId)
        {
            return participantId != null && participantId.StartsWith(PlayerPrefix, StringComparison.Ordinal);
        }

        /// <summary>"guest-0042" or "player:guest-0042" as the protocol's "player:guest-0042".</summary>
        public static string PlayerId(string id)
        {
            return IsPlayer(id) ? id : PlayerPrefix + id;
        }

        private static string PlayerPath(string playerId)
        {
            return "/v1/players/" + Escape(PlayerId(playerId));
        }

        private static string AgentPath(string agentId, string rest)
        {
            return "/v1/agents/" + Escape(agentId) + rest;
        }

        private static string Escape(string segment)
        {
            return Uri.EscapeDataString(segment ?? "");
        }
    }
}
