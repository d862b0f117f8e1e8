using System;
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
    /// NavMesh, wanders there until the item ends, then asks again. A ConversationTrigger puts it in Talking;
    /// after a conversation it cools down before it may talk again. Every state change is reported.</summary>
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

        private NavMeshAgent _nav;
        private PlanNow _plan;
        private double _cooldownUntil;
        private float _nextWander;

        public BrainState State { get; private set; }
        public string LocationName { get; private set; }

        /// <summary>How history lines name this agent: its display name, or its id until that is known (the
        /// server accepts either before the colon).</summary>
        public string DisplayName
        {
            get { return string.IsNullOrEmpty(displayName) ? agentId : displayName; }
        }

        /// <summary>Idle enough to start a conversation (not walking somewhere urgent, not cooling down).</summary>
        public bool CanTalk
        {
            get { return State == BrainState.WanderingInPoi || State == BrainState.MovingToPoi; }
        }

        private void Awake()
        {
            _nav = GetComponent<NavMeshAgent>();
            State = BrainState.WaitingForReplan;
        }

        private void Start()
        {
            RunAsync(this.GetCancellationTokenOnDestroy()).Forget();
        }

        private async UniTaskVoid RunAsync(CancellationToken ct)
        {
            await LoadDisplayNameAsync(ct);
            while (!ct.IsCancellationRequested)
            {
                switch (State)
                {
                    case BrainState.WaitingForReplan:
                        await ReplanAsync(ct);
                        break;
                    case BrainState.MovingToPoi:
                        if (Arrived())
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
                        break; // the ConversationTrigger drives the talk and calls EndTalking
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
            else
            {
                _plan = plan;
                LocationName = plan.TargetPoi.Name;
                _nav.isStopped = false;
                _nav.SetDestination(ToVector(plan.TargetPoi.Position));
                await EnterAsync(BrainState.MovingToPoi, ct);
            }
        }

        private bool Arrived()
        {
            return !_nav.pathPending && _nav.remainingDistance <= Mathf.Max(_nav.stoppingDistance, 0.5f);
        }

        private void Wander()
        {
            if (Time.time < _nextWander || _plan == null || _plan.TargetPoi == null)
            {
                return;
            }
            _nextWander = Time.time + wanderEverySeconds;
            Vector2 offset = UnityEngine.Random.insideUnitCircle;
            Vector3 around = ToVector(_plan.TargetPoi.Position) + new Vector3(offset.x, 0f, offset.y) * wanderRadius;
            NavMeshHit hit;
            if (NavMesh.SamplePosition(around, out hit, wanderRadius, NavMesh.AllAreas))
            {
                _nav.SetDestination(hit.position);
            }
        }

        /// <summary>Called by ConversationTrigger when a conversation starts with <paramref name="partnerId"/>.</summary>
        public void BeginTalking(string partnerId, CancellationToken ct)
        {
            _nav.isStopped = true;
            EnterAsync(BrainState.Talking, ct, partnerId).Forget();
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
            return new Vector3((float)position.X, (float)(position.Y ?? 0.0), (float)position.Z);
        }
    }
}
