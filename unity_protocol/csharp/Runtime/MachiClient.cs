using System;
using System.Text;
using System.Threading;
using Cysharp.Threading.Tasks;
using Machi.Protocol;
using Newtonsoft.Json;
using UnityEngine.Networking;

namespace Machi.Client
{
    /// <summary>Talks to a Machi server the way the protocol expects: UnityWebRequest + UniTask, a timeout
    /// per attempt (CancelAfterSlim on a token linked to the caller's), retries with backoff only on network
    /// errors, timeouts and 5xx, one wait on a 429 whose Retry-After is within MaxRateLimitWait, and the API
    /// key, world and protocol headers on every request.
    /// The endpoint methods are in MachiClient.Endpoints.cs.</summary>
    public partial class MachiClient
    {
        private readonly MachiClientOptions _options;
        private readonly Random _jitter = new Random();

        public MachiClient(MachiClientOptions options)
        {
            if (options == null)
            {
                throw new ArgumentNullException("options");
            }
            _options = options;
        }

        public MachiClientOptions Options
        {
            get { return _options; }
        }

        /// <summary>Sends a request, retrying as the policy allows; returns the body of the 2xx answer.</summary>
        /// <exception cref="MachiRateLimitException">a 429 not waited out (see MaxRateLimitWait).</exception>
        /// <exception cref="MachiApiException">a 4xx (or a 5xx after the last attempt).</exception>
        /// <exception cref="MachiTransportException">no answer after the last attempt.</exception>
        /// <exception cref="OperationCanceledException">the caller's token was cancelled.</exception>
        protected async UniTask<string> SendAsync(string method, string path, string json, TimeSpan timeout,
            CancellationToken cancellationToken)
        {
            bool waitedOnLimit = false;
            for (int attempt = 0; ; )
            {
                Attempt outcome = await AttemptAsync(method, path, json, timeout, null, cancellationToken);
                if (outcome.Ok)
                {
                    return outcome.Body;
                }
                if (await WaitOnRateLimit(outcome, waitedOnLimit, cancellationToken))
                {
                    waitedOnLimit = true; // a rate limit's wait is not one of the MaxRetries
                    continue;
                }
                await BackoffOrThrow(outcome, attempt, cancellationToken);
                attempt++;
            }
        }

        /// <summary>Waits out a 429's Retry-After when RetryPolicy.WaitForRateLimit allows it (once, within
        /// MaxRateLimitWait); false: the caller goes on to BackoffOrThrow, which throws it.</summary>
        private async UniTask<bool> WaitOnRateLimit(Attempt outcome, bool waitedBefore, CancellationToken cancellationToken)
        {
            bool wait = RetryPolicy.WaitForRateLimit(outcome.StatusCode, outcome.RetryAfter, _options.MaxRateLimitWait,
                waitedBefore);
            if (wait)
            {
                await UniTask.Delay(outcome.RetryAfter.Value, true, PlayerLoopTiming.Update, cancellationToken);
            }
            return wait;
        }

        /// <summary>Throws when the failure is final; otherwise waits before the next attempt.</summary>
        private async UniTask BackoffOrThrow(Attempt outcome, int attempt, CancellationToken cancellationToken)
        {
            if (!outcome.Retryable)
            {
                throw outcome.ToApiException();
            }
            if (attempt >= _options.MaxRetries)
            {
                if (outcome.StatusCode >= 500 && !string.IsNullOrEmpty(outcome.Body))
                {
                    throw outcome.ToApiException();
                }
                throw new MachiTransportException(outcome.Failure, attempt + 1, outcome.StatusCode, outcome.Error);
            }
            TimeSpan wait = RetryPolicy.Backoff(attempt, _options.InitialBackoff, _options.MaxBackoff,
                _jitter.NextDouble());
            await UniTask.Delay(wait, true, PlayerLoopTiming.Update, cancellationToken);
        }

        /// <summary>One attempt, bounded by `timeout`. Only the caller's cancellation is thrown.</summary>
        private async UniTask<Attempt> AttemptAsync(string method, string path, string json, TimeSpan timeout,
            SseDownloadHandler stream, CancellationToken cancellationToken)
        {
            using (var linked = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken))
            using (linked.CancelAfterSlim(timeout, DelayType.Realtime))
            using (UnityWebRequest request = BuildRequest(method, path, json, stream))
            {
                try
                {
                    await request.SendWebRequest().ToUniTask(null, PlayerLoopTiming.Update, linked.Token);
                }
                catch (OperationCanceledException)
                {
                    if (cancellationToken.IsCancellationRequested)
                    {
                        throw;
                    }
                    return Attempt.TimedOut(timeout);
                }
                catch (UnityWebRequestException)
                {
                    // Not success: request.result and responseCode below say what happened.
                }
                string body = stream != null ? stream.Body : (request.downloadHandler != null ? request.downloadHandler.text : "");
                return Attempt.From(request.result, request.responseCode, body, request.error,
                    request.GetResponseHeader("Retry-After"));
            }
        }

        private UnityWebRequest BuildRequest(string method, string path, string json, DownloadHandler download)
        {
            var request = new UnityWebRequest(_options.Url(path), method);
            request.downloadHandler = download ?? new DownloadHandlerBuffer();
            if (json != null)
            {
                request.uploadHandler = new UploadHandlerRaw(Encoding.UTF8.GetBytes(json));
                request.uploadHandler.contentType = "application/json; charset=utf-8";
                request.SetRequestHeader("Content-Type", "application/json; charset=utf-8");
            }
            request.SetRequestHeader("Accept", download != null ? "text/event-stream" : "application/json");
            request.SetRequestHeader("X-Machi-Protocol", MachiClientOptions.ProtocolVersion.ToString());
            if (!string.IsNullOrEmpty(_options.WorldId))
            {
                request.SetRequestHeader("X-Machi-World", _options.WorldId);
            }
            if (!string.IsNullOrEmpty(_options.ApiKey))
            {
                if (_options.UseBearer)
                {
                    request.SetRequestHeader("Authorization", "Bearer " + _options.ApiKey);
                }
                else
                {
                    request.SetRequestHeader("X-Api-Key", _options.ApiKey);
                }
            }
            return request;
        }

        /// <summary>JSON as the protocol writes it (snake_case names from the generated DTOs).</summary>
        public static string ToJson(object value)
        {
            return JsonConvert.SerializeObject(value, Converter.Settings);
        }

        public static T FromJson<T>(string json)
        {
            return JsonConvert.DeserializeObject<T>(json, Converter.Settings);
        }
    }
}
