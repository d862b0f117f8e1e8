using System;

namespace Machi.Client
{
    /// <summary>The server refused the request (4xx) or failed it for good; Code and ApiMessage come from
    /// its {"error": {"code", "message", "details"}} body, e.g. "validation_error" naming the field.</summary>
    public sealed class MachiApiException : Exception
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
