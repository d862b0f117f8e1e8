using System.Collections.Generic;
using System.Text;
using System.Threading;
using Cysharp.Threading.Tasks;
using Machi.Client;
using Machi.Protocol;
using UnityEngine;
using UnityEngine.AI;

namespace Machi.Samples
{
    /// <summary>The C# examples of unity_protocol/README.md: `machi protocol readme` copies each part between
    /// a `// README: name` line and `// README end`, and CI compiles this file, so the README's code matches
    /// the package. Nothing in the sample calls these.</summary>
    public static class MachiExamples
    {
        public static async UniTask<MachiClient> ConnectAsync(CancellationToken ct)
        {
            // README: client
            var client = new MachiClient(new MachiClientOptions
            {
                BaseUrl = "http://127.0.0.1:8000",
                ApiKey = null,   // the server's MACHI_API_KEY, if it has one
                WorldId = null   // null: the server's "default" world
            });
            HealthPublic health = await client.HealthAsync(ct);
            if (health.ProtocolVersion != MachiClientOptions.ProtocolVersion)
            {
                Debug.LogError("the server speaks protocol " + health.ProtocolVersion);
            }
            // README end
            return client;
        }

        public static async UniTask<TurnResult> TurnAsync(MachiClient client, CancellationToken ct)
        {
            // README: turn
            var request = new TurnRequest
            {
                AgentId = "hikari",                 // who speaks now
                TargetId = "aoi",                   // to whom
                SessionId = "aoi-hikari-day1-0001", // one id per conversation
                LocationName = "中央カフェ",
                History = new List<string> { "葵: おはようございます、ひかりさん！" },
                Day = 1,
                TimeOfDay = 9.32
            };
            try
            {
                TurnResult reply = await client.TurnAsync(request, ct);
                // reply.Emotion: this line's VRM preset; reply.IsConversationEnd: stop taking turns
                Debug.Log(reply.Dialogue + " [" + reply.Emotion + "]");
                request.History.Add("ひかり: " + reply.Dialogue); // for the next speaker's turn
                return reply;
            }
            catch (MachiApiException refused) // a 4xx: fix the request, do not retry it
            {
                Debug.LogError(refused.Code + ": " + refused.ApiMessage);
                throw;
            }
            // A MachiTransportException means no answer after MaxRetries retries (network, timeout, 5xx).
            // README end
        }

        public static async UniTask<TurnResult> StreamedTurnAsync(MachiClient client, TurnRequest request,
            CancellationToken ct)
        {
            // README: stream
            var bubble = new StringBuilder();
            TurnResult reply = await client.TurnStreamAsync(request,
                delta => bubble.Append(delta), // a piece of the line: show bubble.ToString()
                () => bubble.Length = 0,       // the line was replaced or the stream restarts: clear it
                ct);
            // reply is the whole TurnResult, as TurnAsync returns it; reply.Dialogue is the final line
            // README end
            return reply;
        }

        public static async UniTask WalkAsync(MachiClient client, NavMeshAgent navMeshAgent, CancellationToken ct)
        {
            // README: plan-now
            PlanNow now = await client.GetPlanNowAsync("aoi", 1, 9.0, ct); // agent, day, time_of_day
            if (now.TargetPoi != null)
            {
                Position at = now.TargetPoi.Position; // Unity world coordinates
                navMeshAgent.SetDestination(new Vector3((float)at.X, (float)(at.Y ?? 0.0), (float)at.Z));
            }
            // now.Current: the plan item (Activity, PoiId, Start, End, in hours); ask again when it ends.
            // now.Status: "active", or "sleeping" after the day's last item (TargetPoi is then home).
            // README end
        }

        /// <summary>A visitor's line (protocol 2). Not a README region: the README's Unity part names its
        /// regions one by one (backend/protocol/readme_text.py), and its step 15 shows this call's JSON.</summary>
        public static async UniTask<PlayerTurnResult> VisitorTurnAsync(MachiClient client, List<string> history,
            CancellationToken ct)
        {
            await client.PutPlayerAsync("player:guest-0042", new PlayerUpsert { DisplayName = "ユキ", Language = Language.Ja }, ct);
            var request = new PlayerTurnRequest
            {
                SessionId = "visit-0042-1",
                PlayerId = "player:guest-0042",
                AgentId = "aoi",
                Text = "こんにちは！おすすめの本はありますか？", // untrusted: at most PLAYER_MAX_CHARS
                LocationName = "中央カフェ",
                History = new List<string>(history),
                Day = 1,
                TimeOfDay = 9.45
            };
            try
            {
                PlayerTurnResult reply = await client.PlayerTurnAsync(request, ct);
                history.Add(reply.PlayerLine);           // the visitor's line as stored
                history.Add("葵: " + reply.Dialogue);    // then the agent's
                // reply.NextSpeaker: "player:guest-0042" (wait for the visitor) or an agent in a group;
                // reply.PlayerBlocked / reply.Deflected: moderation held something back (answered in character)
                return reply;
            }
            catch (MachiRateLimitException limited) // 429: not stored, send the same line again later
            {
                Debug.Log(limited.Limit + ": wait " + limited.RetryAfter); // e.g. PLAYER_LINES_PER_MINUTE
                return null;
            }
        }

        /// <summary>A reply's actions, performed and reported by hand (the sample's ActionDispatcher does this).</summary>
        public static async UniTask ReportActionsAsync(MachiClient client, TurnResult reply, CancellationToken ct)
        {
            foreach (AgentAction action in reply.Actions)
            {
                // ... perform action.Type on action.Target (and action.Item for give), then:
                var result = new ActionResult
                {
                    Action = action, Outcome = Outcome.Done, SessionId = reply.SessionId, Day = 1, TimeOfDay = 9.4
                };
                ActionResultAccepted remembered = await client.ReportActionResultAsync(reply.SpeakerId, result, ct);
                Debug.Log(remembered.Content); // what the agent now remembers, e.g. "ひかりに本を渡した。"
            }
        }

        public static async UniTask<InterviewResult> InterviewAsync(MachiClient client, CancellationToken ct)
        {
            // README: interview
            InterviewResult reply = await client.InterviewAsync("hikari",
                new InterviewRequest { Question = "葵は図書館のことを何か言ってた？", Day = 1, TimeOfDay = 10.0 }, ct);
            Debug.Log(reply.Answer); // in character, in hikari's language; nothing she remembers changes
            // reply.MemoriesUsed: what she answered from; reply.Fallback: the model failed or was late
            // README end
            return reply;
        }

        public static async UniTask<CouncilPublic> CouncilAsync(MachiClient client, CancellationToken ct)
        {
            // README: council
            CouncilAccepted started = await client.StartCouncilAsync(new CouncilCreate
            {
                Title = "公園に図書コーナーを作る",
                Background = "公園のベンチで本を読む人が増えている。",
                Rounds = 2   // 1-5; Members: null = the world's council (agents with a council role)
            }, ct);
            Debug.Log(started.Label + " is deliberating"); // answered at once (202); it runs on the server
            CouncilPublic council = await client.WaitForCouncilAsync(started.Id, System.TimeSpan.FromSeconds(2), ct);
            // council.Status: "done" (or "failed", with council.Error); council.Outcome: adopt,
            // adopt_with_conditions, revise or reconsider; council.Record: every round, the consensus
            string notice = await client.GetCouncilRecordAsync(started.Id, ct); // the record as markdown
            // README end
            Debug.Log(notice);
            return council;
        }

        public static void FollowMoods(MachiEvents events, VrmEmotionMapper face)
        {
            // README: events-use
            events.Received += ev =>
            {
                if (ev.Type == "emotion.updated" && ev.Text("agent_id") == "aoi")
                {
                    face.Rest(ev.Text("vrm_emotion")); // the resting face between lines
                }
            };
            // README end
        }
    }
}
