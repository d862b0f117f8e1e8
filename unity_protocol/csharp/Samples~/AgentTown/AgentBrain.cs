using System;
using System.Collections.Generic;
using System.Collections.ObjectModel;
using System.Threading;
using Cysharp.Threading.Tasks;
using Machi.Client;
using Machi.Protocol;
using UnityEngine;
using UnityEngine.AI;

namespace Machi.Samples
{
    /// <summary>The five states Unity runs for each agent.</summary>
    public enum BrainState { MovingToPoi, WanderingInPoi, Talking, Cooldown, WaitingForReplan }

    /// <summary>Walks an agent by its daily plan: asks plan/now, walks to the target point of interest on the
    /// NavMesh, wanders there until the item ends, then asks again. A ConversationTrigger (or a visitor's
    /// VisitorChat) puts it in Talking; after a conversation it cools down before it may talk again. An
    /// ActionDispatcher may take the wheel for a go_to or follow action (Hold ... Release); talking takes it
    /// back. Every state change is reported.</summary>
    [RequireComponent(typeof(NavMeshAgent))]
    public sealed class AgentBrain : MonoBehaviour
    {
        public string agentId = "aoi";
        [Tooltip("The name history lines give this agent (\"Name: line\"); empty: the server's AgentDetail.name.")]
        public string displayName = "";
        public MachiWorld world;
        [Tooltip("Metres around a point of interest to wander in.")]
        public float wanderRadius = 4f;
        [Tooltip("Real seconds between wander destinations.")]
        public float wanderEverySeconds = 6f;
        [Tooltip("Game minutes after a conversation before the agent may talk again.")]
        public float cooldownGameMinutes = 30f;
        [Tooltip("Real seconds to wait before asking plan/now again after a failure.")]
        public float retrySeconds = 5f;
        [Tooltip("Metres an agent walks away from a group it left.")]
        public float walkOffMetres = 4f;

        private static readonly List<AgentBrain> Registered = new List<AgentBrain>();
        private static readonly ReadOnlyCollection<AgentBrain> ReadOnlyAll = Registered.AsReadOnly();

        private NavMeshAgent _nav;
        private ActionDispatcher _actions;
        private PlanNow _plan;
        private PoiPublic _target;
        private double _cooldownUntil;
        private float _nextWander;
        private bool _held;
        private int _steering;

        /// <summary>Every enabled AgentBrain of the scene (VisitorChat picks the one the visitor faces).</summary>
        public static ReadOnlyCollection<AgentBrain> All
        {
            get { return ReadOnlyAll; }
        }

        public BrainState State { get; private set; }
        public string LocationName { get; private set; }

        /// <summary>How history lines name this agent: its display name, or its id until that is known (the
        /// server accepts either before the colon).</summary>
        public string DisplayName
        {
            get { return string.IsNullOrEmpty(displayName) ? agentId : displayName; }
        }

        /// <summary>Idle enough to start a conversation (not talking, not cooling down; an errand from an
        /// action counts as walking, so a meeting interrupts it).</summary>
        public bool CanTalk
        {
            get
            {
                bool idle = State == BrainState.WanderingInPoi || State == BrainState.MovingToPoi;
                return idle && (world == null || world.Clock >= _cooldownUntil);
            }
        }

        /// <summary>Close enough to where the NavMeshAgent was sent.</summary>
        public bool Arrived
        {
            get { return !_nav.pathPending && _nav.remainingDistance <= Mathf.Max(_nav.stoppingDistance, 0.5f); }
        }

        private void Awake()
        {
            _nav = GetComponent<NavMeshAgent>();
            _actions = GetComponent<ActionDispatcher>();
            State = BrainState.WaitingForReplan;
        }

        private void OnEnable() { Registered.Add(this); }

        private void OnDisable() { Registered.Remove(this); }

        private void Start()
        {
            world.RegisterCharacter(agentId, transform);
            RunAsync(this.GetCancellationTokenOnDestroy()).Forget();
        }

        private void OnDestroy()
        {
            if (world != null)
            {
                world.UnregisterCharacter(agentId, transform);
            }
        }

        private async UniTaskVoid RunAsync(CancellationToken ct)
        {
            await LoadDisplayNameAsync(ct);
            while (!ct.IsCancellationRequested)
            {
                switch (_held ? BrainState.Talking : State)
                {
                    case BrainState.WaitingForReplan:
                        await ReplanAsync(ct);
                        break;
                    case BrainState.MovingToPoi:
                        if (Arrived)
                        {
                            await EnterAsync(BrainState.WanderingInPoi, ct);
                        }
                        break;
                    case BrainState.WanderingInPoi:
                        Wander();
                        if (_plan == null || _plan.Current == null || world.timeOfDay >= _plan.Current.End)
                        {
                            await EnterAsync(BrainState.WaitingForReplan, ct);
                        }
                        break;
                    case BrainState.Cooldown:
                        if (world.Clock >= _cooldownUntil)
                        {
                            await EnterAsync(BrainState.WaitingForReplan, ct);
                        }
                        break;
                    case BrainState.Talking:
                        break; // the ConversationTrigger drives the talk and calls EndTalking; an action holds the wheel
                }
                await UniTask.Yield(PlayerLoopTiming.Update, ct);
            }
        }

        /// <summary>Reads the display name from the server when the inspector left it empty.</summary>
        private async UniTask LoadDisplayNameAsync(CancellationToken ct)
        {
            if (string.IsNullOrEmpty(displayName))
            {
                try
                {
                    AgentDetail agent = await world.Client.GetAgentAsync(agentId, ct);
                    displayName = agent.Name;
                }
                catch (Exception exception) when (!(exception is OperationCanceledException))
                {
                    Debug.LogWarning(agentId + ": no display name from the server, history lines use the id: "
                        + exception.Message);
                }
            }
        }

        /// <summary>Asks the server what to do now and sets off towards the target point of interest.</summary>
        /// <remarks>No bare `return;` in `async UniTask` methods: Mono's mcs rejects it (Unity's compiler does
        /// not), and CI compiles this package with mcs.</remarks>
        private async UniTask ReplanAsync(CancellationToken ct)
        {
            PlanNow plan = null;
            try
            {
                plan = await world.Client.GetPlanNowAsync(agentId, world.day, world.timeOfDay, ct);
            }
            catch (Exception exception) when (!(exception is OperationCanceledException))
            {
                Debug.LogWarning(agentId + ": plan/now failed, retrying: " + exception.Message);
            }
            if (plan == null || plan.TargetPoi == null)
            {
                // No answer, or asleep between plans: ask again a little later.
                await UniTask.Delay(TimeSpan.FromSeconds(retrySeconds), false, PlayerLoopTiming.Update, ct);
            }
            else if (!_held && State == BrainState.WaitingForReplan)
            {
                // (an action or a conversation may have taken over while plan/now was on its way)
                _plan = plan;
                _target = plan.TargetPoi;
                LocationName = plan.TargetPoi.Name;
                _nav.isStopped = false;
                _nav.SetDestination(ToVector(plan.TargetPoi.Position));
                await EnterAsync(BrainState.MovingToPoi, ct);
            }
        }

        private void Wander()
        {
            if (Time.time < _nextWander || _target == null)
            {
                return;
            }
            _nextWander = Time.time + wanderEverySeconds;
            Vector2 offset = UnityEngine.Random.insideUnitCircle;
            Vector3 around = ToVector(_target.Position) + new Vector3(offset.x, 0f, offset.y) * wanderRadius;
            NavMeshHit hit;
            if (NavMesh.SamplePosition(around, out hit, wanderRadius, NavMesh.AllAreas))
            {
                _nav.SetDestination(hit.position);
            }
        }

        /// <summary>Called by ConversationTrigger (or VisitorChat) when a conversation starts with
        /// <paramref name="partnerId"/> (an agent, or a visitor's "player:" id). Ends any hold an action had
        /// (it is then interrupted).</summary>
        public void BeginTalking(string partnerId, CancellationToken ct)
        {
            _held = false;
            _steering++;
            _nav.isStopped = true;
            // partner_id names an agent only: a visitor ("player:...") is left out of the report.
            EnterAsync(BrainState.Talking, ct, MachiClient.IsPlayer(partnerId) ? null : partnerId).Forget();
        }

        /// <summary>A group member's goodbye (its id in a reply's `left`): it ends its part, cools down, and walks
        /// walkOffMetres away from <paramref name="from"/> (the others' centre) while they talk on.</summary>
        public void LeaveTalk(Vector3 from, CancellationToken ct)
        {
            EndTalking(ct);
            Vector3 away = transform.position - from;
            away.y = 0f;
            if (away.sqrMagnitude < 0.01f)
            {
                away = transform.forward * -1f;
            }
            NavMeshHit hit;
            Vector3 to = transform.position + away.normalized * walkOffMetres;
            if (NavMesh.SamplePosition(to, out hit, walkOffMetres, NavMesh.AllAreas))
            {
                _nav.SetDestination(hit.position);
            }
        }

        /// <summary>Performs a turn reply's actions with this agent's ActionDispatcher (each outcome is reported
        /// to the server); without one they are skipped. <paramref name="endConversation"/> ends this agent's
        /// part in the talk (an end_conversation action).</summary>
        public void Perform(List<AgentAction> actions, string sessionId, Action endConversation)
        {
            if (actions == null || actions.Count == 0)
            {
                return;
            }
            if (_actions != null)
            {
                _actions.Dispatch(actions, sessionId, endConversation);
            }
            else
            {
                Debug.Log(agentId + ": no ActionDispatcher, " + actions.Count + " action(s) skipped");
            }
        }

        /// <summary>Hands the NavMeshAgent to an action (go_to, follow) until Release: the brain stops choosing
        /// destinations and reports moving_to_poi (towards <paramref name="locationName"/> when given). Returns
        /// a ticket; starting to talk, or another hold, ends the hold (IsHolding turns false: interrupted).</summary>
        public int Hold(string locationName, CancellationToken ct)
        {
            _held = true;
            _steering++;
            if (!string.IsNullOrEmpty(locationName))
            {
                LocationName = locationName;
            }
            _nav.isStopped = false;
            EnterAsync(BrainState.MovingToPoi, ct).Forget();
            return _steering;
        }

        public bool IsHolding(int ticket)
        {
            return _held && ticket == _steering;
        }

        /// <summary>Takes the wheel back after a hold. <paramref name="arrivedAt"/>: the place the action
        /// reached (the agent wanders there until its plan item ends); null: ask plan/now again.</summary>
        public void Release(int ticket, PoiPublic arrivedAt, CancellationToken ct)
        {
            if (!IsHolding(ticket))
            {
                return;
            }
            _held = false;
            if (arrivedAt != null)
            {
                _target = arrivedAt;
                LocationName = arrivedAt.Name;
                EnterAsync(BrainState.WanderingInPoi, ct).Forget();
            }
            else
            {
                EnterAsync(BrainState.WaitingForReplan, ct).Forget();
            }
        }

        /// <summary>Called by ConversationTrigger when the conversation ended (by the server or by distance).</summary>
        public void EndTalking(CancellationToken ct)
        {
            _cooldownUntil = world.Clock + cooldownGameMinutes / 60.0;
            _nav.isStopped = false;
            EnterAsync(BrainState.Cooldown, ct).Forget();
        }

        private async UniTask EnterAsync(BrainState next, CancellationToken ct, string partnerId = null)
        {
            State = next;
            var report = new StateReport
            {
                State = ToWire(next),
                PartnerId = partnerId,
                LocationName = LocationName,
                Position = new Position { X = transform.position.x, Y = transform.position.y, Z = transform.position.z },
                Day = world.day,
                TimeOfDay = world.timeOfDay
            };
            try
            {
                await world.Client.ReportStateAsync(agentId, report, ct);
            }
            catch (Exception exception) when (!(exception is OperationCanceledException))
            {
                // A lost report only costs the server one state; the agent keeps going.
                Debug.LogWarning(agentId + ": state report failed: " + exception.Message);
            }
        }

        public static Machi.Protocol.State ToWire(BrainState state)
        {
            switch (state)
            {
                case BrainState.MovingToPoi: return Protocol.State.MovingToPoi;
                case BrainState.WanderingInPoi: return Protocol.State.WanderingInPoi;
                case BrainState.Talking: return Protocol.State.Talking;
                case BrainState.Cooldown: return Protocol.State.Cooldown;
                default: return Protocol.State.WaitingForReplan;
            }
        }

        private static Vector3 ToVector(Position position)
        {
            return MachiWorld.ToVector(position);
        }
    }
}
