using System;
using System.Globalization;
using System.Threading;
using Cysharp.Threading.Tasks;
using Machi.Protocol;

namespace Machi.Client
{
    /// <summary>The council, the judge and the interview: calls a game makes now and then, not every frame
    /// (see "Council, judge and interview over HTTP" in unity_protocol/README.md).</summary>
    public partial class MachiClient
    {
        /// <summary>Puts a proposal to the council. The server answers 202 at once with the council's id and
        /// number and deliberates in the background (Members: 2-12 agent ids, default the world's council; Rounds
        /// 1-5). Follow it with WaitForCouncilAsync, GetCouncilAsync or the council.updated event. Not
        /// idempotent: a retry after an answer that was lost on the way may start a second council.</summary>
        /// <exception cref="MachiApiException">422 naming the field (an unknown member, a blank title).</exception>
        public async UniTask<CouncilAccepted> StartCouncilAsync(CouncilCreate proposal, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(proposal);
            return FromJson<CouncilAccepted>(await SendAsync("POST", "/v1/council", body, _options.Timeout, ct));
        }

        /// <summary>One council as it stands: Status pending, running, done or failed; Outcome (adopt,
        /// adopt_with_conditions, revise, reconsider) once done; Record holds every round's opinions, the
        /// aggregations and the consensus, saved after every step.</summary>
        public async UniTask<CouncilPublic> GetCouncilAsync(string councilId, CancellationToken ct = default(CancellationToken))
        {
            return FromJson<CouncilPublic>(await SendAsync("GET", CouncilPath(councilId, ""), null, _options.Timeout, ct));
        }

        /// <summary>This world's councils, newest first; `status` (pending, running, done, failed) or null for all.</summary>
        public async UniTask<CouncilList> GetCouncilsAsync(string status = null, int limit = 50, CancellationToken ct = default(CancellationToken))
        {
            string path = "/v1/council?limit=" + limit.ToString(CultureInfo.InvariantCulture)
                + (string.IsNullOrEmpty(status) ? "" : "&status=" + Escape(status));
            return FromJson<CouncilList>(await SendAsync("GET", path, null, _options.Timeout, ct));
        }

        /// <summary>The council's decision record as markdown (for a notice board or a log).</summary>
        public async UniTask<string> GetCouncilRecordAsync(string councilId, CancellationToken ct = default(CancellationToken))
        {
            return await SendAsync("GET", CouncilPath(councilId, "/record.md"), null, _options.Timeout, ct);
        }

        /// <summary>Polls GetCouncilAsync every `pollInterval` (game time scale ignored) until the council is
        /// done or failed, and returns it. Cancel `ct` to stop waiting; the council goes on regardless.</summary>
        public async UniTask<CouncilPublic> WaitForCouncilAsync(string councilId, TimeSpan pollInterval, CancellationToken ct = default(CancellationToken))
        {
            while (true)
            {
                CouncilPublic council = await GetCouncilAsync(councilId, ct);
                if (council.Status == "done" || council.Status == "failed")
                {
                    return council;
                }
                await UniTask.Delay(pollInterval, true, PlayerLoopTiming.Update, ct);
            }
        }

        /// <summary>Asks an agent a question; it answers in character from its memories and what it knows of
        /// the people the question names. Nothing it remembers changes (no memory is written or marked
        /// recalled). A model that fails or is late (INTERVIEW_DEADLINE_S) gives a stock "I don't remember"
        /// with Fallback = true. Day and TimeOfDay are optional (default: the agent's last report).</summary>
        /// <exception cref="MachiApiException">404 unknown agent; 422 an empty question or one over 500 characters.</exception>
        public async UniTask<InterviewResult> InterviewAsync(string agentId, InterviewRequest request, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(request);
            string path = AgentPath(agentId, "/interview");
            return FromJson<InterviewResult>(await SendAsync("POST", path, body, _options.InterviewTimeout, ct));
        }

        /// <summary>One model scores Content on each criterion (1-10; default in_character, coherence,
        /// helpfulness). A judge model that fails twice answers 503 llm_error, which is retried like any 5xx
        /// and then thrown as a MachiApiException.</summary>
        public async UniTask<JudgeResult> JudgeAsync(JudgeRequest request, CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(request);
            return FromJson<JudgeResult>(await SendAsync("POST", "/v1/judge", body, _options.InterviewTimeout, ct));
        }

        /// <summary>Scores a stored conversation (in_character, coherence, memory_use); the verdict is kept on
        /// it (GET /v1/conversations/{session_id} shows it as judge).</summary>
        /// <exception cref="MachiApiException">404 when no conversation has this session id.</exception>
        public async UniTask<JudgeResult> JudgeConversationAsync(string sessionId, CancellationToken ct = default(CancellationToken))
        {
            string path = "/v1/conversations/" + Escape(sessionId) + "/judge";
            return FromJson<JudgeResult>(await SendAsync("POST", path, null, _options.InterviewTimeout, ct));
        }

        private static string CouncilPath(string councilId, string rest)
        {
            return "/v1/council/" + Escape(councilId) + rest;
        }
    }
}
