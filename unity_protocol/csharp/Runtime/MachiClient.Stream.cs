using System;
using System.Threading;
using Cysharp.Threading.Tasks;
using Machi.Protocol;

namespace Machi.Client
{
    /// <summary>Streamed turns: `delta` events show the line as the model writes it, `reply` ends it.</summary>
    public partial class MachiClient
    {
        /// <summary>Takes a turn over server-sent events.</summary>
        /// <param name="onDelta">Called with each new piece of the dialogue (append it to the speech bubble).</param>
        /// <param name="onReset">Called when the text shown so far must be cleared: the server replaced the line
        /// (a fallback), or the stream broke and is retried from the start.</param>
        /// <returns>The full reply, the same JSON as TurnAsync returns.</returns>
        public UniTask<TurnResult> TurnStreamAsync(TurnRequest request, Action<string> onDelta, Action onReset,
            CancellationToken ct = default(CancellationToken))
        {
            return StreamAsync<TurnResult>("/v1/conversation/turn/stream", ToJson(request), onDelta, onReset, ct);
        }

        /// <summary>A visitor's line and the agent's reply over server-sent events, as TurnStreamAsync: the
        /// deltas are the agent's line; the `reply` event carries the PlayerTurnResult (PlayerTurnAsync's JSON).
        /// The line is checked before the stream starts, so a 422 (PLAYER_MAX_CHARS) or a 429 (a rate limit:
        /// MachiRateLimitException) is thrown as for PlayerTurnAsync.</summary>
        public UniTask<PlayerTurnResult> PlayerTurnStreamAsync(PlayerTurnRequest request, Action<string> onDelta,
            Action onReset, CancellationToken ct = default(CancellationToken))
        {
            return StreamAsync<PlayerTurnResult>("/v1/conversation/player-turn/stream", ToJson(request), onDelta,
                onReset, ct);
        }

        /// <summary>One streamed turn, retried like SendAsync (a retried turn streams the stored reply again).</summary>
        private async UniTask<T> StreamAsync<T>(string path, string body, Action<string> onDelta, Action onReset,
            CancellationToken ct) where T : class
        {
            bool shownAny = false, waitedOnLimit = false;
            for (int attempt = 0; ; )
            {
                var events = new StreamedTurn<T>(onDelta, onReset);
                var handler = new SseDownloadHandler(events.Handle);
                Attempt outcome = await AttemptAsync("POST", path, body, _options.TurnTimeout, handler, ct);
                shownAny |= events.Shown;
                if (outcome.Ok && events.Reply != null)
                {
                    return events.Reply;
                }
                if (outcome.Ok)
                {
                    outcome = events.ErrorAttempt(outcome.StatusCode);
                }
                if (await WaitOnRateLimit(outcome, waitedOnLimit, ct))
                {
                    waitedOnLimit = true; // refused before streaming: nothing was shown
                    continue;
                }
                if (shownAny && outcome.Retryable && attempt < _options.MaxRetries && onReset != null)
                {
                    onReset(); // the next attempt streams the whole line again
                    shownAny = false;
                }
                await BackoffOrThrow(outcome, attempt, ct);
                attempt++;
            }
        }

        /// <summary>Collects one attempt's events.</summary>
        private sealed class StreamedTurn<T> where T : class
        {
            private readonly Action<string> _onDelta;
            private readonly Action _onReset;
            public T Reply;
            public ErrorBody Error;
            public string ErrorJson;
            public bool Shown;

            public StreamedTurn(Action<string> onDelta, Action onReset)
            {
                _onDelta = onDelta;
                _onReset = onReset;
            }

            public void Handle(SseEvent ev)
            {
                switch (ev.Name)
                {
                    case "delta":
                        Shown = true;
                        if (_onDelta != null)
                        {
                            _onDelta(FromJson<TurnDelta>(ev.Data).Text);
                        }
                        break;
                    case "reset":
                        if (_onReset != null)
                        {
                            _onReset();
                        }
                        break;
                    case "reply":
                        Reply = FromJson<T>(ev.Data);
                        break;
                    case "error":
                        ErrorJson = ev.Data;
                        Error = FromJson<ErrorBody>(ev.Data);
                        break;
                }
            }

            /// <summary>A 200 stream that ended without a reply: an error event, or a cut connection.</summary>
            public Attempt ErrorAttempt(long statusCode)
            {
                if (Error == null || Error.Error == null)
                {
                    return Attempt.BrokenStream(statusCode, "the stream ended without a reply event");
                }
                // "internal_error" means the server could not store the turn: asking again is safe.
                // Anything else (e.g. the conversation ended meanwhile) would be refused again.
                return new Attempt
                {
                    StatusCode = statusCode,
                    Body = ErrorJson,
                    Error = Error.Error.Message,
                    Retryable = Error.Error.Code == "internal_error",
                    Failure = TransportFailure.ServerError
                };
            }
        }
    }
}
