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
        /// returns the stored reply.</summary>
        public async UniTask<TurnResult> TurnAsync(TurnRequest request, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(request);
            return FromJson<TurnResult>(await SendAsync("POST", "/v1/conversation/turn", body, _options.TurnTimeout, ct));
        }

        public async UniTask<EndResult> EndConversationAsync(EndRequest request, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(request);
            return FromJson<EndResult>(await SendAsync("POST", "/v1/conversation/end", body, _options.Timeout, ct));
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
