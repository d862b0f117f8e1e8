using System;
using System.Collections.Generic;
using System.Threading;
using Cysharp.Threading.Tasks;
using Machi.Client;
using Machi.Protocol;
using UnityEngine;

namespace Machi.Samples
{
    /// <summary>Starts a conversation when two idle agents meet: within `talkDistance`, the other inside this
    /// agent's view angle, and nothing between them (a raycast on `obstacleMask`). The one who saw the other
    /// speaks first; both brains switch to Talking at once, so a pair starts one conversation, not two.
    /// Speakers alternate turn by turn, each line going into the history as "Name: line" (the speaker's
    /// display name; where the reply's history_fixes says the server stored another line, its line replaces
    /// ours); the talk ends when the server says so (is_conversation_end) or when they walk apart
    /// (reported as reason "distance"). The headless world in unity_protocol/python follows the same rules.
    /// </summary>
    [RequireComponent(typeof(AgentBrain))]
    public sealed class ConversationTrigger : MonoBehaviour
    {
        public float talkDistance = 3f;
        [Tooltip("Metres apart at which an ongoing conversation ends.")]
        public float endDistance = 6f;
        [Range(0f, 360f)]
        public float viewAngle = 120f;
        public LayerMask obstacleMask;
        [Tooltip("Height of the eyes above the pivot, for the line-of-sight ray.")]
        public float eyeHeight = 1.5f;
        public bool streamTurns = true;
        public VrmEmotionMapper face;

        /// <summary>Raised for every line spoken (speaker id, text so far); hook a speech bubble here.</summary>
        public event Action<string, string> LineChanged;

        private static readonly List<ConversationTrigger> All = new List<ConversationTrigger>();
        private AgentBrain _brain;

        private void Awake()
        {
            _brain = GetComponent<AgentBrain>();
        }

        private void OnEnable() { All.Add(this); }

        private void OnDisable() { All.Remove(this); }

        private void Update()
        {
            if (!_brain.CanTalk)
            {
                return;
            }
            foreach (ConversationTrigger other in All)
            {
                if (other == this || !other._brain.CanTalk)
                {
                    continue;
                }
                if (Sees(other))
                {
                    TalkAsync(other, this.GetCancellationTokenOnDestroy()).Forget();
                    return;
                }
            }
        }

        /// <summary>Distance, view angle and line of sight, from this agent's eyes to the other's.</summary>
        public bool Sees(ConversationTrigger other)
        {
            Vector3 eye = transform.position + Vector3.up * eyeHeight;
            Vector3 toOther = other.transform.position + Vector3.up * other.eyeHeight - eye;
            float distance = toOther.magnitude;
            if (distance > talkDistance)
            {
                return false;
            }
            Vector3 flat = Vector3.ProjectOnPlane(toOther, Vector3.up);
            if (Vector3.Angle(transform.forward, flat) > viewAngle * 0.5f)
            {
                return false;
            }
            RaycastHit hit;
            bool blocked = Physics.Raycast(eye, toOther.normalized, out hit, distance, obstacleMask,
                QueryTriggerInteraction.Ignore);
            return !blocked || hit.transform == other.transform;
        }

        private async UniTaskVoid TalkAsync(ConversationTrigger partner, CancellationToken ct)
        {
            MachiWorld world = _brain.world;
            string session = _brain.agentId + "-" + partner._brain.agentId + "-" + world.day + "-" + Guid.NewGuid().ToString("N").Substring(0, 8);
            // Each brain names the other: a server on a model that reads prompts ahead starts on both opening lines.
            _brain.BeginTalking(partner._brain.agentId, ct);
            partner._brain.BeginTalking(_brain.agentId, ct);
            var history = new List<string>();
            ConversationTrigger speaker = this, listener = partner;
            try
            {
                while (true)
                {
                    if (Vector3.Distance(transform.position, partner.transform.position) > endDistance)
                    {
                        var end = new EndRequest { SessionId = session, Reason = "distance", Day = world.day, TimeOfDay = world.timeOfDay };
                        await world.Client.EndConversationAsync(end, ct);
                        break;
                    }
                    TurnResult reply = await speaker.SpeakAsync(listener, session, history, ct);
                    if (reply.HistoryFixes != null)
                    {
                        foreach (HistoryFix fix in reply.HistoryFixes)
                        {
                            history[(int)fix.Index] = fix.Line; // the server's stored transcript wins
                        }
                    }
                    history.Add(speaker._brain.DisplayName + ": " + reply.Dialogue);
                    listener.EndLine(); // the new line replaces the listener's: its face goes back to rest
                    if (reply.IsConversationEnd)
                    {
                        break;
                    }
                    ConversationTrigger swap = speaker;
                    speaker = listener;
                    listener = swap;
                }
            }
            catch (Exception exception) when (!(exception is OperationCanceledException))
            {
                Debug.LogWarning("conversation " + session + " stopped: " + exception.Message);
            }
            finally
            {
                EndLine();
                partner.EndLine();
                _brain.EndTalking(ct);
                partner._brain.EndTalking(ct);
            }
        }

        private void EndLine()
        {
            if (face != null)
            {
                face.EndLine();
            }
        }

        private async UniTask<TurnResult> SpeakAsync(ConversationTrigger listener, string session, List<string> history,
            CancellationToken ct)
        {
            MachiWorld world = _brain.world;
            var request = new TurnRequest
            {
                AgentId = _brain.agentId,
                TargetId = listener._brain.agentId,
                SessionId = session,
                LocationName = _brain.LocationName,
                History = new List<string>(history),
                TimeOfDay = world.timeOfDay,
                Day = world.day
            };
            TurnResult reply;
            if (streamTurns)
            {
                string shown = "";
                reply = await world.Client.TurnStreamAsync(request,
                    delta => { shown += delta; Raise(shown); },
                    () => { shown = ""; Raise(shown); }, ct);
            }
            else
            {
                reply = await world.Client.TurnAsync(request, ct);
            }
            Raise(reply.Dialogue);
            if (face != null)
            {
                face.Show(reply);
            }
            return reply;
        }

        private void Raise(string text)
        {
            if (LineChanged != null)
            {
                LineChanged(_brain.agentId, text);
            }
        }
    }
}
