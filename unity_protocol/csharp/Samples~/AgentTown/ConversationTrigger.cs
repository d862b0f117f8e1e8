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
    /// With `groupTalk`, when the one seen has company (other idle agents within talkDistance and in line of
    /// sight, up to maxGroupSize in all), the meeting is a group conversation instead: every turn sends the same
    /// `participants`, the reply's `next_speaker` speaks next (to the one who spoke before), members named in
    /// `left` walk off while the others talk on, and it stops when the server ends it or fewer than two remain.
    /// Each reply's `actions` go to the speaker's ActionDispatcher (through AgentBrain.Perform).
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
        [Tooltip("Three or more idle agents together talk as one group (participants, next_speaker).")]
        public bool groupTalk = true;
        [Range(3, 6)]
        public int maxGroupSize = 4;

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
                    List<ConversationTrigger> group = groupTalk ? Gather(other) : null;
                    if (group != null && group.Count >= 3)
                    {
                        TalkGroupAsync(group, this.GetCancellationTokenOnDestroy()).Forget();
                    }
                    else
                    {
                        TalkAsync(other, this.GetCancellationTokenOnDestroy()).Forget();
                    }
                    return;
                }
            }
        }

        /// <summary>Distance, view angle and line of sight, from this agent's eyes to the other's.</summary>
        public bool Sees(ConversationTrigger other)
        {
            return InReach(other, true);
        }

        /// <summary>Within talkDistance with nothing between the eyes (and, with `inView`, inside the view angle).</summary>
        private bool InReach(ConversationTrigger other, bool inView)
        {
            Vector3 eye = transform.position + Vector3.up * eyeHeight;
            Vector3 toOther = other.transform.position + Vector3.up * other.eyeHeight - eye;
            float distance = toOther.magnitude;
            if (distance > talkDistance)
            {
                return false;
            }
            Vector3 flat = Vector3.ProjectOnPlane(toOther, Vector3.up);
            if (inView && Vector3.Angle(transform.forward, flat) > viewAngle * 0.5f)
            {
                return false;
            }
            RaycastHit hit;
            bool blocked = Physics.Raycast(eye, toOther.normalized, out hit, distance, obstacleMask,
                QueryTriggerInteraction.Ignore);
            return !blocked || hit.transform == other.transform;
        }

        /// <summary>This agent, the one it saw, and the other idle agents within reach (any direction), up to
        /// maxGroupSize.</summary>
        private List<ConversationTrigger> Gather(ConversationTrigger seen)
        {
            var group = new List<ConversationTrigger> { this, seen };
            foreach (ConversationTrigger other in All)
            {
                if (group.Count >= Mathf.Min(maxGroupSize, 6))
                {
                    break;
                }
                if (!group.Contains(other) && other._brain.CanTalk && InReach(other, false))
                {
                    group.Add(other);
                }
            }
            return group;
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
            bool leaving = false;
            try
            {
                while (true)
                {
                    if (Vector3.Distance(transform.position, partner.transform.position) > endDistance)
                    {
                        await EndAsync(session, "distance", ct);
                        break;
                    }
                    TurnResult reply = await speaker.SpeakAsync(listener, session, history, null, ct);
                    ApplyFixes(history, reply.HistoryFixes);
                    history.Add(speaker._brain.DisplayName + ": " + reply.Dialogue);
                    listener.EndLine(); // the new line replaces the listener's: its face goes back to rest
                    speaker._brain.Perform(reply.Actions, session, () => leaving = true);
                    if (reply.IsConversationEnd || leaving)
                    {
                        if (!reply.IsConversationEnd)
                        {
                            await EndAsync(session, "left", ct); // an end_conversation the server did not end on
                        }
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

        /// <summary>A group conversation (see the class summary). The first line goes from this agent to the
        /// one it saw; afterwards `next_speaker` speaks to whoever spoke before it.</summary>
        private async UniTaskVoid TalkGroupAsync(List<ConversationTrigger> members, CancellationToken ct)
        {
            MachiWorld world = _brain.world;
            string session = "group-" + _brain.agentId + "-" + world.day + "-" + Guid.NewGuid().ToString("N").Substring(0, 8);
            var participants = members.ConvertAll(member => member._brain.agentId); // the same list on every turn
            foreach (ConversationTrigger member in members)
            {
                member._brain.BeginTalking((member == this ? members[1] : this)._brain.agentId, ct);
            }
            var active = new List<ConversationTrigger>(members);
            var leavers = new List<string>(); // end_conversation actions performed on Unity's side
            var history = new List<string>();
            ConversationTrigger speaker = this, target = members[1];
            try
            {
                while (true)
                {
                    if (Vector3.Distance(speaker.transform.position, target.transform.position) > endDistance)
                    {
                        await EndAsync(session, "distance", ct);
                        break;
                    }
                    TurnResult reply = await speaker.SpeakAsync(target, session, history, participants, ct);
                    ApplyFixes(history, reply.HistoryFixes);
                    history.Add(speaker._brain.DisplayName + ": " + reply.Dialogue);
                    foreach (ConversationTrigger member in active)
                    {
                        if (member != speaker)
                        {
                            member.EndLine();
                        }
                    }
                    string speakerId = speaker._brain.agentId;
                    speaker._brain.Perform(reply.Actions, session, () => leavers.Add(speakerId));
                    if (reply.IsConversationEnd)
                    {
                        break; // the finally below ends everyone's part
                    }
                    var gone = new List<string>(leavers);
                    if (reply.Left != null)
                    {
                        gone.AddRange(reply.Left);
                    }
                    leavers.Clear();
                    foreach (string id in gone)
                    {
                        ConversationTrigger member = Find(active, id);
                        if (member != null)
                        {
                            active.Remove(member);
                            member.EndLine();
                            member._brain.LeaveTalk(Centre(active), ct); // it walks off; the others talk on
                        }
                    }
                    ConversationTrigger next = NextSpeaker(reply.NextSpeaker, active, speaker, target);
                    if (active.Count < 2 || next == null)
                    {
                        await EndAsync(session, "left", ct);
                        break;
                    }
                    target = active.Contains(speaker) && speaker != next ? speaker : FirstOther(active, next);
                    speaker = next;
                }
            }
            catch (Exception exception) when (!(exception is OperationCanceledException))
            {
                Debug.LogWarning("group conversation " + session + " stopped: " + exception.Message);
            }
            finally
            {
                foreach (ConversationTrigger member in active)
                {
                    member.EndLine();
                    member._brain.EndTalking(ct);
                }
            }
        }

        /// <summary>Who speaks next: the reply's next_speaker when it is still here; otherwise (a member who
        /// left on Unity's side was named) the one addressed, or anyone else. A visitor ("player:") never is in
        /// this sample's groups: null then ends the talk.</summary>
        private static ConversationTrigger NextSpeaker(string nextId, List<ConversationTrigger> active,
            ConversationTrigger speaker, ConversationTrigger target)
        {
            if (nextId == null || MachiClient.IsPlayer(nextId))
            {
                return null;
            }
            ConversationTrigger named = Find(active, nextId);
            if (named != null)
            {
                return named;
            }
            return active.Contains(target) && target != speaker ? target : FirstOther(active, speaker);
        }

        private static ConversationTrigger Find(List<ConversationTrigger> members, string agentId)
        {
            return members.Find(member => member._brain.agentId == agentId);
        }

        private static ConversationTrigger FirstOther(List<ConversationTrigger> members, ConversationTrigger not)
        {
            return members.Find(member => member != not);
        }

        private static Vector3 Centre(List<ConversationTrigger> members)
        {
            Vector3 sum = Vector3.zero;
            foreach (ConversationTrigger member in members)
            {
                sum = sum + member.transform.position;
            }
            return members.Count > 0 ? sum / members.Count : sum;
        }

        /// <summary>The server's stored transcript wins: copy each fixed line into ours.</summary>
        private static void ApplyFixes(List<string> history, List<HistoryFix> fixes)
        {
            if (fixes != null)
            {
                foreach (HistoryFix fix in fixes)
                {
                    history[(int)fix.Index] = fix.Line;
                }
            }
        }

        private async UniTask EndAsync(string session, string reason, CancellationToken ct)
        {
            MachiWorld world = _brain.world;
            var end = new EndRequest { SessionId = session, Reason = reason, Day = world.day, TimeOfDay = world.timeOfDay };
            await world.Client.EndConversationAsync(end, ct);
        }

        private void EndLine()
        {
            if (face != null)
            {
                face.EndLine();
            }
        }

        /// <param name="participants">A group's ids (the same on every turn); null for a pair.</param>
        private async UniTask<TurnResult> SpeakAsync(ConversationTrigger listener, string session, List<string> history,
            List<string> participants, CancellationToken ct)
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
                Day = world.day,
                Participants = participants
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
