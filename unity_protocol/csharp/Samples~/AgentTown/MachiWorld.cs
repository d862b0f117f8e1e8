using System;
using System.Collections.Generic;
using System.Threading;
using Cysharp.Threading.Tasks;
using Machi.Client;
using Machi.Protocol;
using UnityEngine;

namespace Machi.Samples
{
    /// <summary>One per scene: the MachiClient every agent shares, the game clock (day, hour of day) that
    /// plan/now, state reports and turns are stamped with, the world's points of interest (read once from
    /// GET /v1/pois), who is who in the scene (agents and visitors by id, for actions that name them) and the
    /// gestures the Animators can play (declared once with PUT /v1/world/gestures).</summary>
    [DisallowMultipleComponent]
    public sealed class MachiWorld : MonoBehaviour
    {
        [Header("Server")]
        public string baseUrl = "http://127.0.0.1:8000";
        public string apiKey = "";
        public string worldId = "";

        [Header("Clock")]
        [Tooltip("Game minutes that pass per real second.")]
        public float gameMinutesPerSecond = 10f;
        public int day = 1;
        [Range(0f, 23.99f)]
        public float timeOfDay = 8f;

        [Header("Actions")]
        [Tooltip("Declare these gesture names (the Animator triggers of the characters) at start; off: the "
            + "server's default list (wave, bow, nod, shake_head, laugh, think, point).")]
        public bool declareGestures = false;
        public string[] gestures = { "wave", "bow", "nod", "shake_head" };

        public MachiClient Client { get; private set; }

        private readonly Dictionary<string, PoiPublic> _pois = new Dictionary<string, PoiPublic>();
        private readonly Dictionary<string, Transform> _characters = new Dictionary<string, Transform>();

        private void Awake()
        {
            var options = new MachiClientOptions
            {
                BaseUrl = baseUrl,
                ApiKey = string.IsNullOrEmpty(apiKey) ? null : apiKey,
                WorldId = string.IsNullOrEmpty(worldId) ? null : worldId
            };
            Client = new MachiClient(options);
        }

        private async void Start()
        {
            try
            {
                var health = await Client.HealthAsync(this.GetCancellationTokenOnDestroy());
                if (health.ProtocolVersion != MachiClientOptions.ProtocolVersion)
                {
                    Debug.LogError("Machi server speaks protocol " + health.ProtocolVersion + "; update the package.");
                }
                if (declareGestures)
                {
                    var update = new GesturesUpdate { Gestures = new List<string>(gestures) };
                    await Client.PutGesturesAsync(update, this.GetCancellationTokenOnDestroy());
                }
            }
            catch (Exception exception)
            {
                Debug.LogWarning("Machi server not reachable yet: " + exception.Message);
            }
        }

        private void Update()
        {
            timeOfDay += Time.deltaTime * gameMinutesPerSecond / 60f;
            if (timeOfDay >= 24f)
            {
                timeOfDay -= 24f;
                day += 1;
            }
        }

        /// <summary>A point of interest by id (a go_to action's target), from GET /v1/pois; the list is read
        /// again when the id is not in it yet. Null when the world has no such place.</summary>
        public async UniTask<PoiPublic> FindPoiAsync(string poiId, CancellationToken ct)
        {
            PoiPublic poi;
            if (!_pois.TryGetValue(poiId ?? "", out poi))
            {
                foreach (PoiPublic each in await Client.GetPoisAsync(ct))
                {
                    _pois[each.Id] = each;
                }
                _pois.TryGetValue(poiId ?? "", out poi);
            }
            return poi;
        }

        /// <summary>Says who `id` is in the scene (an agent's id, or a visitor's "player:" id) so that actions
        /// naming them (follow, look_at, give) find their body. AgentBrain and VisitorChat call it.</summary>
        public void RegisterCharacter(string id, Transform body)
        {
            if (!string.IsNullOrEmpty(id) && body != null)
            {
                _characters[id] = body;
            }
        }

        public void UnregisterCharacter(string id, Transform body)
        {
            Transform known;
            if (id != null && _characters.TryGetValue(id, out known) && known == body)
            {
                _characters.Remove(id);
            }
        }

        /// <summary>The body of an agent or visitor by id; null when nobody by that id is in the scene.</summary>
        public Transform FindCharacter(string id)
        {
            Transform body;
            return id != null && _characters.TryGetValue(id, out body) && body != null ? body : null;
        }

        /// <summary>A protocol position (Unity world coordinates; y may be absent) as a Vector3.</summary>
        public static Vector3 ToVector(Position position)
        {
            return new Vector3((float)position.X, (float)(position.Y ?? 0.0), (float)position.Z);
        }

        /// <summary>Game hours since day 1 00:00 (for cooldowns that span midnight).</summary>
        public double Clock
        {
            get { return (day - 1) * 24.0 + timeOfDay; }
        }
    }
}
