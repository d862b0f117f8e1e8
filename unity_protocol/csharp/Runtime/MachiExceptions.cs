using System;

namespace Machi.Client
{
    /// <summary>The server refused the request (4xx) or failed it for good; Code and ApiMessage come from
    /// its {"error": {"code", "message", "details"}} body, e.g. "validation_error" naming the field.
    /// A 429 is the subclass MachiRateLimitException.</summary>
    public class MachiApiException : Exception
    {
        public long StatusCode { get; private set; }
        public string Code { get; private set; }
        public string ApiMessage { get; private set; }
        /// <summary>The error's "details" as raw JSON (null when absent).</summary>
        public string DetailsJson { get; private set; }

        public MachiApiException(long statusCode, string code, string apiMessage, string detailsJson)
            : base(string.Format("Machi {0} {1}: {2}", statusCode, code, apiMessage))
        {
            StatusCode = statusCode;
            Code = code;
            ApiMessage = apiMessage;
            DetailsJson = detailsJson;
        }
    }

    /// <summary>429 too_many_requests: a rate limit, e.g. a visitor's PLAYER_LINES_PER_MINUTE or the world's
    /// WORLD_PLAYER_LINES_PER_MINUTE. Thrown when the server's Retry-After is longer than
    /// MachiClientOptions.MaxRateLimitWait, or on a second 429 after the one wait the client allows itself:
    /// tell the visitor to wait RetryAfter, then send the line again (it was not stored).</summary>
    public sealed class MachiRateLimitException : MachiApiException
    {
        /// <summary>The limit's name from the error's details.limit (a server setting such as
        /// "PLAYER_LINES_PER_MINUTE"); null when the server named none (e.g. too many wrong API keys).</summary>
        public string Limit { get; private set; }
        /// <summary>When asking again may succeed: the Retry-After header, else details.retry_after_s; null
        /// when the server gave neither.</summary>
        public TimeSpan? RetryAfter { get; private set; }

        public MachiRateLimitException(long statusCode, string code, string apiMessage, string detailsJson,
            string limit, TimeSpan? retryAfter)
            : base(statusCode, code, apiMessage, detailsJson)
        {
            Limit = limit;
            RetryAfter = retryAfter;
        }
    }

    /// <summary>Why the last attempt of a request failed without an answer from the server.</summary>
    public enum TransportFailure
    {
        Network,
        Timeout,
        ServerError,
        BrokenStream
    }

    /// <summary>Every attempt failed with a network error, a timeout, a 5xx or a cut stream.</summary>
    public sealed class MachiTransportException : Exception
    {
        public TransportFailure Failure { get; private set; }
        public int Attempts { get; private set; }
        public long StatusCode { get; private set; }

        public MachiTransportException(TransportFailure failure, int attempts, long statusCode, string message)
            : base(string.Format("Machi request failed after {0} attempt(s) ({1}): {2}", attempts, failure, message))
        {
            Failure = failure;
            Attempts = attempts;
            StatusCode = statusCode;
        }
    }
}
