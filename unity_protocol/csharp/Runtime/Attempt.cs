using System;
using Machi.Protocol;
using Newtonsoft.Json;
using UnityEngine.Networking;

namespace Machi.Client
{
    /// <summary>The outcome of one HTTP attempt, classified for the retry policy.</summary>
    internal sealed class Attempt
    {
        public bool Ok;
        public bool Retryable;
        public TransportFailure Failure;
        public long StatusCode;
        public string Body;
        public string Error;

        public static Attempt TimedOut(TimeSpan timeout)
        {
            return new Attempt
            {
                Retryable = true,
                Failure = TransportFailure.Timeout,
                Error = "no answer within " + timeout.TotalSeconds + " s"
            };
        }

        public static Attempt From(UnityWebRequest.Result result, long statusCode, string body, string error)
        {
            var attempt = new Attempt { StatusCode = statusCode, Body = body ?? "", Error = error ?? "" };
            bool networkError = result == UnityWebRequest.Result.ConnectionError
                || result == UnityWebRequest.Result.DataProcessingError;
            attempt.Ok = !networkError && statusCode >= 200 && statusCode < 300;
            attempt.Retryable = !attempt.Ok && RetryPolicy.IsRetryable(statusCode, networkError, false);
            attempt.Failure = networkError ? TransportFailure.Network : TransportFailure.ServerError;
            return attempt;
        }

        public static Attempt BrokenStream(long statusCode, string why)
        {
            return new Attempt
            {
                Retryable = true,
                Failure = TransportFailure.BrokenStream,
                StatusCode = statusCode,
                Error = why
            };
        }

        /// <summary>The server's {"error": {...}} as an exception (a plain message when the body is not one).</summary>
        public MachiApiException ToApiException()
        {
            return ParseError(StatusCode, Body, Error);
        }

        public static MachiApiException ParseError(long statusCode, string body, string fallback)
        {
            try
            {
                ErrorBody parsed = JsonConvert.DeserializeObject<ErrorBody>(body, Converter.Settings);
                if (parsed != null && parsed.Error != null)
                {
                    string details = parsed.Error.Details == null ? null : JsonConvert.SerializeObject(parsed.Error.Details);
                    return new MachiApiException(statusCode, parsed.Error.Code, parsed.Error.Message, details);
                }
            }
            catch (JsonException)
            {
                // Not an error body (a proxy's HTML page, say): report the text as it is.
            }
            string text = string.IsNullOrEmpty(body) ? fallback : body;
            return new MachiApiException(statusCode, "http_" + statusCode, text, null);
        }
    }
}
