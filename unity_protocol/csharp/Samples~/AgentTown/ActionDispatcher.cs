using System;
using System.Collections.Generic;
using System.Threading;
using Cysharp.Threading.Tasks;
using Machi.Client;
using Machi.Protocol;
using UnityEngine;
using UnityEngine.AI;
using UnityEngine.Events;

namespace Machi.Samples
{
    /// <summary>Performs the actions of a turn reply (AgentAction) in the scene and reports each outcome with
    /// POST /v1/agents/{id}/action-result (done, failed with why, interrupted), so the agent remembers what it
    /// did. A reply's actions run one after another; the conversation does not wait for them.
    /// - go_to: walks the NavMeshAgent to the point of interest (its position from GET /v1/pois, as AgentBrain
    ///   walks its plan), once the conversation the action came from has ended; done on arrival.
    /// - follow: walks after the agent or visitor named (MachiWorld.FindCharacter) for followSeconds.
    /// - look_at: turns to face them.
    /// - give: raises onGive (recipient id, item) when the recipient is within giveDistance; CanGive may
    ///   refuse it (e.g. an inventory without the item).
    /// - gesture: sets the Animator trigger of that name (declare the names with MachiWorld's gestures).
    /// - end_conversation: ends this agent's part in the talk (the server has already let it leave).
    /// go_to and follow borrow the NavMeshAgent from AgentBrain (Hold/Release); starting another talk or
    /// another movement interrupts them.</summary>
    [RequireComponent(typeof(AgentBrain))]
    public sealed class ActionDispatcher : MonoBehaviour
    {
        /// <summary>(recipient id, item) of a give action.</summary>
        [Serializable]
        public sealed class GiveEvent : UnityEvent<string, string> { }

        [Tooltip("Plays gesture actions: a Trigger parameter named like the gesture (wave, bow, ...). Empty: the "
            + "first Animator among the children.")]
        public Animator animator;
        [Tooltip("Real seconds a go_to may take before it counts as failed.")]
        public float goToTimeoutSeconds = 90f;
        [Tooltip("Real seconds a follow lasts.")]
        public float followSeconds = 20f;
        [Tooltip("Metres kept behind whoever is followed.")]
        public float followDistance = 1.5f;
        [Tooltip("Metres within which a give reaches its recipient.")]
        public float giveDistance = 2.5f;
        [Tooltip("Degrees per second a look_at turns.")]
        public float turnDegreesPerSecond = 360f;
        [Tooltip("Real seconds a go_to or follow waits for the conversation it came from to end; after that it "
            + "counts as interrupted.")]
        public float waitForTalkSeconds = 120f;
        [Tooltip("give actions: (recipient id, item). Hook the hand-over (inventory, animation) here.")]
        public GiveEvent onGive = new GiveEvent();

        /// <summary>Optional: whether a give can happen (recipient id, item); false reports it failed. Unset:
        /// any give within giveDistance is done.</summary>
        public Func<string, string, bool> CanGive;

        /// <summary>Raised with each action's outcome, before it is reported to the server.</summary>
        public event Action<ActionResult> Performed;

        private AgentBrain _brain;
        private NavMeshAgent _nav;

        private void Awake()
        {
            _brain = GetComponent<AgentBrain>();
            _nav = GetComponent<NavMeshAgent>();
            if (animator == null)
            {
                animator = GetComponentInChildren<Animator>();
            }
        }

        /// <summary>Performs `actions` in order and reports each outcome; returns at once.</summary>
        /// <param name="sessionId">The conversation the actions came from (the results name it).</param>
        /// <param name="endConversation">Ends this agent's part in that conversation (end_conversation).</param>
        public void Dispatch(IList<AgentAction> actions, string sessionId, Action endConversation)
        {
            if (actions != null && actions.Count > 0)
            {
                RunAsync(new List<AgentAction>(actions), sessionId, endConversation,
                    this.GetCancellationTokenOnDestroy()).Forget();
            }
        }

        private async UniTaskVoid RunAsync(List<AgentAction> actions, string sessionId, Action endConversation,
            CancellationToken ct)
        {
            foreach (AgentAction action in actions)
            {
                ActionResult result;
                try
                {
                    result = await PerformAsync(action, sessionId, endConversation, ct);
                }
                catch (Exception exception) when (!(exception is OperationCanceledException))
                {
                    Debug.LogWarning(_brain.agentId + ": " + action.Type + " failed: " + exception.Message);
                    result = Result(action, sessionId, Outcome.Failed, "something went wrong");
                }
                if (Performed != null)
                {
                    Performed(result);
                }
                await ReportAsync(result, ct);
            }
        }

        /// <summary>Performs one action; the result is ready to report (stamped with the game time it ended).</summary>
        public async UniTask<ActionResult> PerformAsync(AgentAction action, string sessionId, Action endConversation,
            CancellationToken ct)
        {
            switch (action.Type)
            {
                case AgentActionType.GoTo:
                    return await GoToAsync(action, sessionId, ct);
                case AgentActionType.Follow:
                    return await FollowAsync(action, sessionId, ct);
                case AgentActionType.LookAt:
                    return await LookAtAsync(action, sessionId, ct);
                case AgentActionType.Give:
                    return Give(action, sessionId);
                case AgentActionType.Gesture:
                    return Gesture(action, sessionId);
                default: // AgentActionType.EndConversation
                    if (endConversation != null)
                    {
                        endConversation();
                    }
                    return Result(action, sessionId, Outcome.Done, null);
            }
        }

        private async UniTask<ActionResult> GoToAsync(AgentAction action, string sessionId, CancellationToken ct)
        {
            PoiPublic poi = await _brain.world.FindPoiAsync(action.Target, ct);
            if (poi == null)
            {
                return Result(action, sessionId, Outcome.Failed, "there is no such place here");
            }
            if (!await TalkEndedAsync(ct))
            {
                return Result(action, sessionId, Outcome.Interrupted, "the conversation went on");
            }
            int ticket = _brain.Hold(poi.Name, ct);
            _nav.SetDestination(MachiWorld.ToVector(poi.Position));
            float deadline = Time.unscaledTime + goToTimeoutSeconds;
            while (true)
            {
                await UniTask.Yield(PlayerLoopTiming.Update, ct);
                if (!_brain.IsHolding(ticket))
                {
                    return Result(action, sessionId, Outcome.Interrupted, "stopped on the way");
                }
                if (!_nav.pathPending && _nav.pathStatus == NavMeshPathStatus.PathInvalid)
                {
                    _brain.Release(ticket, null, ct);
                    return Result(action, sessionId, Outcome.Failed, "found no way there");
                }
                if (_brain.Arrived)
                {
                    _brain.Release(ticket, poi, ct);
                    return Result(action, sessionId, Outcome.Done, null);
                }
                if (Time.unscaledTime > deadline)
                {
                    _brain.Release(ticket, null, ct);
                    return Result(action, sessionId, Outcome.Failed, "could not get there in time");
                }
            }
        }

        private async UniTask<ActionResult> FollowAsync(AgentAction action, string sessionId, CancellationToken ct)
        {
            Transform leader = _brain.world.FindCharacter(action.Target);
            if (leader == null)
            {
                return Result(action, sessionId, Outcome.Failed, "they are not here");
            }
            if (!await TalkEndedAsync(ct))
            {
                return Result(action, sessionId, Outcome.Interrupted, "the conversation went on");
            }
            int ticket = _brain.Hold(null, ct);
            float until = Time.unscaledTime + followSeconds, nextPath = 0f;
            while (true)
            {
                await UniTask.Yield(PlayerLoopTiming.Update, ct);
                if (!_brain.IsHolding(ticket))
                {
                    return Result(action, sessionId, Outcome.Interrupted, "stopped following");
                }
                if (leader == null) // destroyed, or left the scene
                {
                    _brain.Release(ticket, null, ct);
                    return Result(action, sessionId, Outcome.Interrupted, "lost sight of them");
                }
                if (Time.unscaledTime >= until)
                {
                    _brain.Release(ticket, null, ct);
                    return Result(action, sessionId, Outcome.Done, null);
                }
                if (Time.unscaledTime >= nextPath)
                {
                    nextPath = Time.unscaledTime + 0.25f;
                    if (Vector3.Distance(transform.position, leader.position) > followDistance)
                    {
                        _nav.SetDestination(leader.position);
                    }
                    else
                    {
                        _nav.ResetPath();
                    }
                }
            }
        }

        private async UniTask<ActionResult> LookAtAsync(AgentAction action, string sessionId, CancellationToken ct)
        {
            Transform other = _brain.world.FindCharacter(action.Target);
            if (other == null)
            {
                return Result(action, sessionId, Outcome.Failed, "they are not here");
            }
            Vector3 flat = Vector3.ProjectOnPlane(other.position - transform.position, Vector3.up);
            if (flat.sqrMagnitude > 0.0001f)
            {
                Quaternion goal = Quaternion.LookRotation(flat);
                float until = Time.unscaledTime + 3f;
                while (Quaternion.Angle(transform.rotation, goal) > 1f && Time.unscaledTime < until)
                {
                    transform.rotation = Quaternion.RotateTowards(transform.rotation, goal,
                        turnDegreesPerSecond * Time.deltaTime);
                    await UniTask.Yield(PlayerLoopTiming.Update, ct);
                }
                transform.rotation = goal;
            }
            return Result(action, sessionId, Outcome.Done, null);
        }

        private ActionResult Give(AgentAction action, string sessionId)
        {
            Transform recipient = _brain.world.FindCharacter(action.Target);
            if (recipient == null)
            {
                return Result(action, sessionId, Outcome.Failed, "they are not here");
            }
            if (Vector3.Distance(transform.position, recipient.position) > giveDistance)
            {
                return Result(action, sessionId, Outcome.Failed, "they were too far away");
            }
            if (CanGive != null && !CanGive(action.Target, action.Item))
            {
                return Result(action, sessionId, Outcome.Failed, "could not hand it over");
            }
            onGive.Invoke(action.Target, action.Item);
            return Result(action, sessionId, Outcome.Done, null);
        }

        private ActionResult Gesture(AgentAction action, string sessionId)
        {
            if (animator == null || !HasTrigger(animator, action.Target))
            {
                return Result(action, sessionId, Outcome.Failed, "cannot move like that");
            }
            animator.SetTrigger(action.Target);
            return Result(action, sessionId, Outcome.Done, null);
        }

        private static bool HasTrigger(Animator animator, string name)
        {
            foreach (AnimatorControllerParameter parameter in animator.parameters)
            {
                if (parameter.type == AnimatorControllerParameterType.Trigger && parameter.name == name)
                {
                    return true;
                }
            }
            return false;
        }

        /// <summary>Waits (up to waitForTalkSeconds) until the agent is no longer talking: a movement offered
        /// in a conversation starts when it ends. False: still talking.</summary>
        private async UniTask<bool> TalkEndedAsync(CancellationToken ct)
        {
            float until = Time.unscaledTime + waitForTalkSeconds;
            while (_brain.State == BrainState.Talking && Time.unscaledTime < until)
            {
                await UniTask.Yield(PlayerLoopTiming.Update, ct);
            }
            return _brain.State != BrainState.Talking;
        }

        private ActionResult Result(AgentAction action, string sessionId, Outcome outcome, string detail)
        {
            MachiWorld world = _brain.world;
            return new ActionResult
            {
                Action = action,
                Outcome = outcome,
                Detail = detail,
                SessionId = sessionId,
                Day = world.day,
                TimeOfDay = world.timeOfDay
            };
        }

        private async UniTask ReportAsync(ActionResult result, CancellationToken ct)
        {
            try
            {
                await _brain.world.Client.ReportActionResultAsync(_brain.agentId, result, ct);
            }
            catch (Exception exception) when (!(exception is OperationCanceledException))
            {
                // A lost result only costs the agent one memory.
                Debug.LogWarning(_brain.agentId + ": action result not reported: " + exception.Message);
            }
        }
    }
}
