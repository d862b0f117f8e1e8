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
        /// <summary>The answer's Retry-After (429 and 503 carry one), null when it had none.</summary>
        public TimeSpan? RetryAfter;

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
            return From(result, statusCode, body, error, null);
        }

        /// <param name="retryAfter">The Retry-After header as sent (null when absent).</param>
        public static Attempt From(UnityWebRequest.Result result, long statusCode, string body, string error,
            string retryAfter)
        {
            var attempt = new Attempt
            {
                StatusCode = statusCode,
                Body = body ?? "",
                Error = error ?? "",
                RetryAfter = RetryPolicy.ParseRetryAfter(retryAfter, DateTimeOffset.UtcNow)
            };
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

        /// <summary>The server's {"error": {...}} as an exception (a plain message when the body is not one);
        /// a 429 as a MachiRateLimitException.</summary>
        public MachiApiException ToApiException()
        {
            return ParseError(StatusCode, Body, Error, RetryAfter);
        }

        public static MachiApiException ParseError(long statusCode, string body, string fallback)
        {
            return ParseError(statusCode, body, fallback, null);
        }

        /// <param name="retryAfter">The answer's Retry-After, for a 429 (details.retry_after_s when null).</param>
        public static MachiApiException ParseError(long statusCode, string body, string fallback, TimeSpan? retryAfter)
        {
            string code = "http_" + statusCode, message = string.IsNullOrEmpty(body) ? fallback : body, details = null;
            try
            {
                ErrorBody parsed = JsonConvert.DeserializeObject<ErrorBody>(body, Converter.Settings);
                if (parsed != null && parsed.Error != null)
                {
                    details = parsed.Error.Details == null ? null : JsonConvert.SerializeObject(parsed.Error.Details);
                    code = parsed.Error.Code;
                    message = parsed.Error.Message;
                }
            }
            catch (JsonException)
            {
                // Not an error body (a proxy's HTML page, say): report the text as it is.
            }
            if (statusCode != 429)
            {
                return new MachiApiException(statusCode, code, message, details);
            }
            LimitDetails limit = ReadLimit(details);
            if (!retryAfter.HasValue && limit != null && limit.RetryAfterS.HasValue && limit.RetryAfterS.Value >= 0)
            {
                retryAfter = TimeSpan.FromSeconds(limit.RetryAfterS.Value);
            }
            return new MachiRateLimitException(statusCode, code, message, details, limit != null ? limit.Limit : null,
                retryAfter);
        }

        /// <summary>A 429's details ({"limit", "value", "retry_after_s", ...}); null when they are not that.</summary>
        private static LimitDetails ReadLimit(string details)
        {
            if (string.IsNullOrEmpty(details))
            {
                return null;
            }
            try
            {
                return JsonConvert.DeserializeObject<LimitDetails>(details, Converter.Settings);
            }
            catch (JsonException)
            {
                return null; // e.g. a list of field errors
            }
        }

        private sealed class LimitDetails
        {
            [JsonProperty("limit")] public string Limit { get; set; }
            [JsonProperty("retry_after_s")] public double? RetryAfterS { get; set; }
        }
    }
}
