using System;
using Cysharp.Threading.Tasks;
using Machi.Client;
using UnityEngine;

namespace Machi.Samples
{
    /// <summary>One per scene: the MachiClient every agent shares, and the game clock (day, hour of day)
    /// that plan/now, state reports and turns are stamped with.</summary>
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

        public MachiClient Client { get; private set; }

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

        /// <summary>Game hours since day 1 00:00 (for cooldowns that span midnight).</summary>
        public double Clock
        {
            get { return (day - 1) * 24.0 + timeOfDay; }
        }
    }
}
