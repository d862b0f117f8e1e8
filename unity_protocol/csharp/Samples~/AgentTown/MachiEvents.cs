using System;
using System.Collections.Generic;
using System.IO;
using System.Net.WebSockets;
using System.Text;
using System.Threading;
using System.Threading.Tasks;
using Cysharp.Threading.Tasks;
using Machi.Client;
using Newtonsoft.Json;
using UnityEngine;

namespace Machi.Samples
{
    /// <summary>One message of the /v1/events WebSocket.</summary>
    public sealed class MachiEvent
    {
        [JsonProperty("id")] public long Id;
        /// <summary>e.g. "emotion.updated", "conversation.turn", "agent.state", "plan.updated".</summary>
        [JsonProperty("type")] public string Type;
        [JsonProperty("world_id")] public string WorldId;
        /// <summary>When the server published it (ISO 8601, UTC).</summary>
        [JsonProperty("at")] public string At;
        /// <summary>The event's fields; emotion.updated: agent_id, vrm_emotion, label, values, day, time_of_day,
        /// cause.</summary>
        [JsonProperty("payload")] public Dictionary<string, object> Payload;

        /// <summary>A payload field as text (null when absent).</summary>
        public string Text(string key)
        {
            object value;
            return Payload != null && Payload.TryGetValue(key, out value) && value != null ? value.ToString() : null;
        }
    }

    /// <summary>Listens to the server's events (WebSocket /v1/events) with .NET's ClientWebSocket and raises
    /// each one on the main thread; reconnects after a drop. ClientWebSocket is not available on WebGL: there,
    /// use a WebSocket library that goes through the browser, with the same URL and messages.</summary>
    [RequireComponent(typeof(MachiWorld))]
    public sealed class MachiEvents : MonoBehaviour
    {
        [Tooltip("Comma-separated event types to receive; empty: all.")]
        public string types = "emotion.updated";
        [Tooltip("Comma-separated agent ids to receive events of; empty: all.")]
        public string agents = "";
        [Tooltip("Real seconds to wait before reconnecting.")]
        public float retrySeconds = 5f;

        public event Action<MachiEvent> Received;

        private void Start()
        {
            ListenAsync(this.GetCancellationTokenOnDestroy()).Forget();
        }

        private async UniTaskVoid ListenAsync(CancellationToken ct)
        {
            MachiClientOptions options = GetComponent<MachiWorld>().Client.Options;
            while (!ct.IsCancellationRequested)
            {
                try
                {
                    // Started on the main thread, so each message is raised there (Unity's SynchronizationContext).
                    await ReceiveAsync(options, types, agents, Raise, ct);
                }
                catch (Exception exception) when (!(exception is OperationCanceledException))
                {
                    Debug.LogWarning("Machi events: " + exception.Message + "; reconnecting");
                }
                await UniTask.Delay(TimeSpan.FromSeconds(retrySeconds), true, PlayerLoopTiming.Update, ct);
            }
        }

        /// <summary>Connects and hands each message (one JSON event) to `onMessage` until the socket closes.
        /// Plain .NET (a Task), so it also runs outside Unity: CI runs it against a live server.</summary>
        public static async Task ReceiveAsync(MachiClientOptions options, string types, string agents,
            Action<string> onMessage, CancellationToken ct)
        {
            // README: events
            string url = options.Url("/v1/events?types=" + Uri.EscapeDataString(types ?? "")
                + "&agents=" + Uri.EscapeDataString(agents ?? ""));
            using (var socket = new ClientWebSocket())
            {
                socket.Options.SetRequestHeader("X-Machi-Protocol", MachiClientOptions.ProtocolVersion.ToString());
                if (!string.IsNullOrEmpty(options.WorldId))
                {
                    socket.Options.SetRequestHeader("X-Machi-World", options.WorldId);
                }
                if (!string.IsNullOrEmpty(options.ApiKey))
                {
                    socket.Options.SetRequestHeader(options.UseBearer ? "Authorization" : "X-Api-Key",
                        (options.UseBearer ? "Bearer " : "") + options.ApiKey);
                }
                await socket.ConnectAsync(new Uri("ws" + url.Substring(4)), ct); // http -> ws, https -> wss
                var buffer = new ArraySegment<byte>(new byte[8192]);
                var message = new MemoryStream();
                while (socket.State == WebSocketState.Open)
                {
                    WebSocketReceiveResult part = await socket.ReceiveAsync(buffer, ct);
                    if (part.MessageType == WebSocketMessageType.Close)
                    {
                        break;
                    }
                    message.Write(buffer.Array, 0, part.Count);
                    if (part.EndOfMessage)
                    {
                        onMessage(Encoding.UTF8.GetString(message.ToArray()));
                        message.SetLength(0);
                    }
                }
            }
            // README end
        }

        private void Raise(string json)
        {
            MachiEvent ev = MachiClient.FromJson<MachiEvent>(json);
            if (ev.Type == null)
            {
                // {"error": {...}}: an unknown event type or world id; the server closes the socket.
                Debug.LogWarning("Machi events refused: " + json);
            }
            else if (Received != null)
            {
                Received(ev);
            }
        }
    }
}
