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
        public async UniTask<TurnResult> TurnStreamAsync(TurnRequest request, Action<string> onDelta, Action onReset,
            CancellationToken ct = default(CancellationToken))
        {
            string body = ToJson(request);
            bool shownAny = false;
            for (int attempt = 0; ; attempt++)
            {
                var events = new StreamedTurn(onDelta, onReset);
                var handler = new SseDownloadHandler(events.Handle);
                Attempt outcome = await AttemptAsync("POST", "/v1/conversation/turn/stream", body,
                    _options.TurnTimeout, handler, ct);
                shownAny |= events.Shown;
                if (outcome.Ok && events.Reply != null)
                {
                    return events.Reply;
                }
                if (outcome.Ok)
                {
                    outcome = events.ErrorAttempt(outcome.StatusCode);
                }
                if (shownAny && outcome.Retryable && attempt < _options.MaxRetries && onReset != null)
                {
                    onReset(); // the next attempt streams the whole line again
                    shownAny = false;
                }
                await BackoffOrThrow(outcome, attempt, ct);
            }
        }

        /// <summary>Collects one attempt's events.</summary>
        private sealed class StreamedTurn
        {
            private readonly Action<string> _onDelta;
            private readonly Action _onReset;
            public TurnResult Reply;
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
                        Reply = FromJson<TurnResult>(ev.Data);
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
