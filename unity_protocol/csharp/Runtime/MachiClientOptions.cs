using System;

namespace Machi.Client
{
    /// <summary>Where the Machi server is and how patiently to talk to it.</summary>
    [Serializable]
    public sealed class MachiClientOptions
    {
        /// <summary>The protocol major this package speaks (sent as X-Machi-Protocol).</summary>
        public const int ProtocolVersion = 2;

        /// <summary>e.g. http://127.0.0.1:8000 (no trailing slash needed).</summary>
        public string BaseUrl = "http://127.0.0.1:8000";
        /// <summary>MACHI_API_KEY of the server, or null when it runs without one.</summary>
        public string ApiKey;
        /// <summary>Send the key as "Authorization: Bearer" instead of "X-Api-Key".</summary>
        public bool UseBearer;
        /// <summary>The world this client plays in (X-Machi-World); null means the server's default.</summary>
        public string WorldId;
        /// <summary>Per-attempt limit for ordinary calls.</summary>
        public TimeSpan Timeout = TimeSpan.FromSeconds(30);
        /// <summary>Per-attempt limit for conversation turns (the server answers within its TURN_DEADLINE_S).</summary>
        public TimeSpan TurnTimeout = TimeSpan.FromSeconds(25);
        /// <summary>Per-attempt limit for interviews (the server answers within its INTERVIEW_DEADLINE_S, 30 s
        /// by default) and the judge (one or two model calls).</summary>
        public TimeSpan InterviewTimeout = TimeSpan.FromSeconds(40);
        /// <summary>Extra attempts after the first on network errors, timeouts and 5xx (never on 4xx).</summary>
        public int MaxRetries = 3;
        public TimeSpan InitialBackoff = TimeSpan.FromMilliseconds(500);
        public TimeSpan MaxBackoff = TimeSpan.FromSeconds(8);
        /// <summary>The longest Retry-After of a 429 (a rate limit) the client waits out by itself, once per
        /// call, before asking again; a longer one, or a second 429, throws MachiRateLimitException (show the
        /// visitor the wait). Zero: never wait.</summary>
        public TimeSpan MaxRateLimitWait = TimeSpan.FromSeconds(2);

        public string Url(string path)
        {
            return BaseUrl.TrimEnd('/') + path;
        }
    }
}
