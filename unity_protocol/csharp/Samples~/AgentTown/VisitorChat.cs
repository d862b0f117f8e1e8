using System;
using System.Collections.Generic;
using System.Threading;
using Cysharp.Threading.Tasks;
using Machi.Client;
using Machi.Protocol;
using UnityEngine;

namespace Machi.Samples
{
    /// <summary>A visitor (a person at the booth) talks to the agent they face, in a small IMGUI box (OnGUI:
    /// no UI package needed): type a line, Send (or Return). The visitor is registered once (PUT
    /// /v1/players/{id}); each line is a player-turn (streamed when streamReplies) to the agent within
    /// talkDistance inside the visitor's view angle, and the conversation's history is kept as the server
    /// stores it (the reply's player_line, then the agent's line; history_fixes applied). The agent stops and
    /// talks (AgentBrain Talking) until it ends the talk, the visitor says Bye, or walks beyond endDistance.
    /// Held-back lines and deflections are answered in character and noted politely; a rate limit (429:
    /// PLAYER_LINES_PER_MINUTE or WORLD_PLAYER_LINES_PER_MINUTE) shows how long to wait and keeps the line in
    /// the field to send again; a line past PLAYER_MAX_CHARS (422) asks for fewer words. The reply's actions
    /// go to the agent's ActionDispatcher.</summary>
    [DisallowMultipleComponent]
    public sealed class VisitorChat : MonoBehaviour
    {
        public MachiWorld world;
        [Tooltip("The visitor's id: \"player:\" and 1-57 letters, digits, '_', '-', '.' (the prefix is added "
            + "when left out).")]
        public string playerId = "player:guest-0001";
        [Tooltip("How the characters call the visitor.")]
        public string displayName = "Guest";
        [Tooltip("ja, en, or empty: each character speaks its own language.")]
        public string language = "";
        [Tooltip("The visitor's body: its position and forward pick the agent spoken to. Empty: this object.")]
        public Transform body;
        public float talkDistance = 3f;
        [Tooltip("Metres apart at which the conversation ends.")]
        public float endDistance = 6f;
        [Range(0f, 360f)]
        public float viewAngle = 90f;
        public bool streamReplies = true;
        [Tooltip("Characters the field accepts (the server's PLAYER_MAX_CHARS, 200 by default).")]
        public int maxChars = 200;
        [Tooltip("Where the chat box is drawn, in screen pixels.")]
        public Rect area = new Rect(10f, 10f, 440f, 300f);
        [Tooltip("Lines the box shows (the newest).")]
        public int shownLines = 8;

        /// <summary>Raised for every line shown (speaker id, text so far): the visitor's and the agent's.</summary>
        public event Action<string, string> LineChanged;

        private readonly List<string> _history = new List<string>();
        private readonly List<string> _shown = new List<string>();
        private string _input = "";
        private string _status = "";
        private bool _registered;
        private bool _sending;
        private bool _leaving;
        private float _waitUntil;
        private AgentBrain _partner;
        private string _session;
        private CancellationToken _ct;

        /// <summary>The visitor's id as the protocol writes it ("player:" and the id).</summary>
        public string PlayerId
        {
            get { return MachiClient.PlayerId(playerId); }
        }

        private Transform Body
        {
            get { return body != null ? body : transform; }
        }

        private void Start()
        {
            _ct = this.GetCancellationTokenOnDestroy();
            world.RegisterCharacter(PlayerId, Body);
            RegisterAsync(_ct).Forget();
        }

        private void OnDestroy()
        {
            if (world != null)
            {
                world.UnregisterCharacter(PlayerId, Body);
            }
            if (_partner != null)
            {
                _partner.EndTalking(CancellationToken.None);
            }
        }

        private void Update()
        {
            if (_partner != null && !_sending
                && Vector3.Distance(Body.position, _partner.transform.position) > endDistance)
            {
                LeaveAsync("distance", _ct).Forget();
            }
        }

        /// <summary>PUT /v1/players/{id} once. Optional for the server (an unregistered visitor is named after
        /// their id), so a failure is only logged and tried again before the next line.</summary>
        private async UniTaskVoid RegisterAsync(CancellationToken ct)
        {
            await EnsureRegisteredAsync(ct);
        }

        private async UniTask EnsureRegisteredAsync(CancellationToken ct)
        {
            if (!_registered)
            {
                try
                {
                    var upsert = new PlayerUpsert { DisplayName = displayName, Language = ParseLanguage(language) };
                    await world.Client.PutPlayerAsync(PlayerId, upsert, ct);
                    _registered = true;
                }
                catch (Exception exception) when (!(exception is OperationCanceledException))
                {
                    Debug.LogWarning("visitor " + PlayerId + " not registered yet: " + exception.Message);
                }
            }
        }

        /// <summary>The agent the visitor faces: the nearest within talkDistance inside the view angle.</summary>
        public AgentBrain Facing()
        {
            AgentBrain best = null;
            float bestDistance = float.MaxValue;
            foreach (AgentBrain agent in AgentBrain.All)
            {
                Vector3 toAgent = agent.transform.position - Body.position;
                float distance = toAgent.magnitude;
                Vector3 flat = Vector3.ProjectOnPlane(toAgent, Vector3.up);
                if (distance <= talkDistance && distance < bestDistance
                    && Vector3.Angle(Body.forward, flat) <= viewAngle * 0.5f)
                {
                    best = agent;
                    bestDistance = distance;
                }
            }
            return best;
        }

        private bool CanSend
        {
            get { return !_sending && Time.unscaledTime >= _waitUntil && !string.IsNullOrEmpty(Clean(_input)); }
        }

        private void OnGUI()
        {
            // Return sends; read before the field takes the key.
            Event current = Event.current;
            bool enter = current != null && current.type == EventType.KeyDown
                && (current.keyCode == KeyCode.Return || current.keyCode == KeyCode.KeypadEnter);
            GUI.Box(area, "");
            GUILayout.BeginArea(area);
            GUILayout.Label(Heading());
            for (int i = Math.Max(0, _shown.Count - shownLines); i < _shown.Count; i++)
            {
                GUILayout.Label(_shown[i]);
            }
            string status = Status();
            if (!string.IsNullOrEmpty(status))
            {
                GUILayout.Label(status);
            }
            _input = GUILayout.TextField(_input ?? "", maxChars);
            GUILayout.BeginHorizontal();
            GUI.enabled = CanSend;
            if (GUILayout.Button("Send") || (enter && CanSend))
            {
                SendAsync(Clean(_input), _ct).Forget();
                if (enter)
                {
                    current.Use();
                }
            }
            GUI.enabled = _partner != null && !_sending;
            if (GUILayout.Button("Bye"))
            {
                LeaveAsync("visitor_left", _ct).Forget();
            }
            GUI.enabled = true;
            GUILayout.EndHorizontal();
            GUILayout.EndArea();
        }

        private string Heading()
        {
            if (_partner != null)
            {
                return "Talking with " + _partner.DisplayName;
            }
            AgentBrain facing = Facing();
            if (facing == null)
            {
                return "Walk up to someone and face them to talk.";
            }
            return facing.State == BrainState.Talking ? facing.DisplayName + " is talking with someone."
                : "Say something to " + facing.DisplayName;
        }

        private string Status()
        {
            float wait = _waitUntil - Time.unscaledTime;
            if (wait > 0f)
            {
                return _status + " (" + Mathf.Max(1f, (float)Math.Ceiling(wait)) + " s)";
            }
            return _sending ? "..." : _status;
        }

        /// <summary>Sends one line to the partner, or to the agent faced (which starts a conversation).</summary>
        public async UniTaskVoid SendAsync(string text, CancellationToken ct)
        {
            AgentBrain agent = _partner != null ? _partner : Facing();
            if (agent == null)
            {
                _status = "Nobody is close enough to hear you.";
            }
            else if (agent != _partner && agent.State == BrainState.Talking)
            {
                _status = agent.DisplayName + " is busy talking; try again in a moment.";
            }
            else if (!string.IsNullOrEmpty(text) && !_sending)
            {
                await TalkAsync(agent, text, ct);
            }
        }

        private async UniTask TalkAsync(AgentBrain agent, string text, CancellationToken ct)
        {
            _sending = true;
            _status = "";
            int echoed = -1;
            try
            {
                await EnsureRegisteredAsync(ct);
                if (agent != _partner)
                {
                    Begin(agent, ct);
                }
                echoed = Show(PlayerId, displayName, text, -1);
                var request = new PlayerTurnRequest
                {
                    SessionId = _session,
                    PlayerId = PlayerId,
                    AgentId = agent.agentId,
                    Text = text,
                    LocationName = agent.LocationName,
                    History = new List<string>(_history),
                    TimeOfDay = world.timeOfDay,
                    Day = world.day,
                    Language = ParseLanguage(language)
                };
                PlayerTurnResult reply = await AskAsync(agent, request, ct);
                ApplyFixes(reply.HistoryFixes);
                _history.Add(reply.PlayerLine); // as stored: a held-back line is a neutral marker
                _history.Add(agent.DisplayName + ": " + reply.Dialogue);
                _input = "";
                if (reply.PlayerBlocked)
                {
                    _status = agent.DisplayName + " let that pass. Maybe say it another way?";
                }
                else if (reply.Deflected == true)
                {
                    _status = agent.DisplayName + " changed the subject.";
                }
                agent.Perform(reply.Actions, _session, () => _leaving = true);
                if (reply.IsConversationEnd || _leaving)
                {
                    if (!reply.IsConversationEnd)
                    {
                        await EndAsync("left", ct); // an end_conversation the server did not end on
                    }
                    _status = agent.DisplayName + " ended the conversation.";
                    Finish();
                }
            }
            catch (MachiRateLimitException limited)
            {
                // Not stored: the line stays in the field to send again once the wait is over.
                Unshow(echoed);
                double wait = limited.RetryAfter.HasValue ? limited.RetryAfter.Value.TotalSeconds : 10.0;
                _waitUntil = Time.unscaledTime + (float)Math.Max(1.0, wait);
                _status = limited.Limit == "WORLD_PLAYER_LINES_PER_MINUTE"
                    ? "Everyone is talking at once! Please send that again"
                    : "Let " + agent.DisplayName + " catch up: please send that again";
            }
            catch (MachiApiException refused) when (refused.StatusCode == 422 && refused.DetailsJson != null
                && refused.DetailsJson.Contains("PLAYER_MAX_CHARS"))
            {
                Unshow(echoed);
                _status = "That is a lot at once: please say it in fewer words.";
            }
            catch (MachiApiException refused) when (refused.StatusCode == 409)
            {
                Unshow(echoed);
                Finish(); // the conversation ended meanwhile: the next line starts a new one
                _status = "That conversation is over. Send again to start a new one.";
            }
            catch (Exception exception) when (!(exception is OperationCanceledException))
            {
                Unshow(echoed);
                Debug.LogWarning("visitor line not answered: " + exception.Message);
                _status = "Nobody seems to hear you right now. Please try again.";
            }
            finally
            {
                _sending = false;
            }
        }

        /// <summary>The player-turn, streamed into a line of its own when streamReplies.</summary>
        private async UniTask<PlayerTurnResult> AskAsync(AgentBrain agent, PlayerTurnRequest request, CancellationToken ct)
        {
            PlayerTurnResult reply;
            string name = agent.DisplayName;
            int line = -1;
            if (streamReplies)
            {
                string shown = "";
                line = Show(agent.agentId, name, "", -1);
                reply = await world.Client.PlayerTurnStreamAsync(request,
                    delta => { shown += delta; Show(agent.agentId, name, shown, line); },
                    () => { shown = ""; Show(agent.agentId, name, shown, line); }, ct);
            }
            else
            {
                reply = await world.Client.PlayerTurnAsync(request, ct);
            }
            Show(agent.agentId, name, reply.Dialogue, line);
            ShowFace(agent, reply);
            return reply;
        }

        private void Begin(AgentBrain agent, CancellationToken ct)
        {
            Finish();
            _partner = agent;
            _leaving = false;
            string visitor = PlayerId.Substring(MachiClient.PlayerPrefix.Length);
            _session = "visit-" + visitor + "-" + agent.agentId + "-" + world.day + "-"
                + Guid.NewGuid().ToString("N").Substring(0, 8);
            _history.Clear();
            _shown.Add("- " + agent.DisplayName + " -");
            agent.BeginTalking(PlayerId, ct);
        }

        /// <summary>The visitor leaves (Bye, or walked away): the server is told, the agent goes on its way.</summary>
        private async UniTaskVoid LeaveAsync(string reason, CancellationToken ct)
        {
            if (_partner != null && _session != null)
            {
                string session = _session;
                Finish();
                try
                {
                    await EndAsync(reason, ct, session);
                }
                catch (Exception exception) when (!(exception is OperationCanceledException))
                {
                    Debug.LogWarning("visitor conversation " + session + " end not reported: " + exception.Message);
                }
            }
        }

        private async UniTask EndAsync(string reason, CancellationToken ct, string session = null)
        {
            var end = new EndRequest { SessionId = session ?? _session, Reason = reason, Day = world.day, TimeOfDay = world.timeOfDay };
            await world.Client.EndConversationAsync(end, ct);
        }

        private void Finish()
        {
            if (_partner != null)
            {
                ConversationTrigger trigger = _partner.GetComponent<ConversationTrigger>();
                if (trigger != null && trigger.face != null)
                {
                    trigger.face.EndLine();
                }
                _partner.EndTalking(_ct);
            }
            _partner = null;
            _session = null;
            _history.Clear();
        }

        private void ShowFace(AgentBrain agent, PlayerTurnResult reply)
        {
            ConversationTrigger trigger = agent.GetComponent<ConversationTrigger>();
            if (trigger != null && trigger.face != null)
            {
                trigger.face.Show(reply);
            }
        }

        private void ApplyFixes(List<HistoryFix> fixes)
        {
            if (fixes != null)
            {
                foreach (HistoryFix fix in fixes)
                {
                    _history[(int)fix.Index] = fix.Line; // the server's stored transcript wins
                }
            }
        }

        /// <summary>Shows "name: text" as a new line (at = -1; returns its index) or as line `at`.</summary>
        private int Show(string speakerId, string name, string text, int at)
        {
            if (at < 0 || at >= _shown.Count)
            {
                _shown.Add(name + ": " + text);
                at = _shown.Count - 1;
            }
            else
            {
                _shown[at] = name + ": " + text;
            }
            if (LineChanged != null)
            {
                LineChanged(speakerId, text);
            }
            return at;
        }

        /// <summary>Takes back the visitor's echoed line (and the agent's empty one after it) when it was not sent.</summary>
        private void Unshow(int echoed)
        {
            if (echoed >= 0 && echoed < _shown.Count)
            {
                _shown.RemoveRange(echoed, _shown.Count - echoed);
            }
        }

        /// <summary>One line, as the server wants a visitor's text (no line breaks), trimmed.</summary>
        private static string Clean(string text)
        {
            return (text ?? "").Replace('\r', ' ').Replace('\n', ' ').Trim();
        }

        private static Language? ParseLanguage(string code)
        {
            switch ((code ?? "").Trim().ToLowerInvariant())
            {
                case "ja": return Language.Ja;
                case "en": return Language.En;
                default: return null;
            }
        }
    }
}
