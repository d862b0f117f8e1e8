using System;
using System.Globalization;

namespace Machi.Client
{
    /// <summary>When to try again and how long to wait. Pure, so it is tested without Unity.</summary>
    public static class RetryPolicy
    {
        /// <summary>Network errors, timeouts and 5xx are worth another attempt; a 4xx never is (the same
        /// request would be refused again), and the server makes a retried turn return the same reply.</summary>
        public static bool IsRetryable(long statusCode, bool networkError, bool timedOut)
        {
            if (networkError || timedOut)
            {
                return true;
            }
            return statusCode >= 500 && statusCode <= 599;
        }

        /// <summary>Exponential backoff with jitter: initial * 2^attempt, capped, scaled by 0.5-1.0.</summary>
        /// <param name="attempt">0 for the wait after the first failure.</param>
        /// <param name="jitter01">A random number in [0, 1).</param>
        public static TimeSpan Backoff(int attempt, TimeSpan initial, TimeSpan max, double jitter01)
        {
            double exponent = Math.Min(Math.Max(attempt, 0), 16);
            double millis = Math.Min(initial.TotalMilliseconds * Math.Pow(2, exponent), max.TotalMilliseconds);
            double scale = 0.5 + 0.5 * Math.Min(Math.Max(jitter01, 0.0), 1.0);
            return TimeSpan.FromMilliseconds(millis * scale);
        }

        /// <summary>Whether a 429 is waited out and asked again: once per call, and only when the server said
        /// how long (Retry-After) and that is within `budget` (MachiClientOptions.MaxRateLimitWait). Otherwise
        /// the caller gets a MachiRateLimitException at once, so a visitor is told to wait rather than left
        /// hanging. Asking again is safe: a refused line was not stored.</summary>
        public static bool WaitForRateLimit(long statusCode, TimeSpan? retryAfter, TimeSpan budget, bool waitedBefore)
        {
            return statusCode == 429 && !waitedBefore && retryAfter.HasValue && retryAfter.Value <= budget;
        }

        /// <summary>A Retry-After header value: delay-seconds ("12") or an HTTP date; null when absent or
        /// unreadable. A date in the past is zero.</summary>
        public static TimeSpan? ParseRetryAfter(string header, DateTimeOffset now)
        {
            if (string.IsNullOrEmpty(header))
            {
                return null;
            }
            string text = header.Trim();
            double seconds;
            if (double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out seconds))
            {
                return seconds >= 0 && seconds < TimeSpan.MaxValue.TotalSeconds
                    ? TimeSpan.FromSeconds(seconds) : (TimeSpan?)null;
            }
            DateTimeOffset at;
            if (DateTimeOffset.TryParse(text, CultureInfo.InvariantCulture,
                DateTimeStyles.AssumeUniversal | DateTimeStyles.AllowWhiteSpaces, out at))
            {
                return at > now ? at - now : TimeSpan.Zero;
            }
            return null;
        }
    }
}
