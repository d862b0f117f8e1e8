using System;
using System.Text;
using UnityEngine.Networking;

namespace Machi.Client
{
    /// <summary>Hands each server-sent event to a callback as the bytes arrive (Unity calls ReceiveData on
    /// the main thread). Keeps the raw body too (up to a limit) so a 4xx error answer can be read.</summary>
    public sealed class SseDownloadHandler : DownloadHandlerScript
    {
        private const int MaxKeptChars = 64 * 1024;
        // A decoder keeps the bytes of a UTF-8 character split across two chunks (Japanese text is 3 bytes a char).
        private readonly Decoder _decoder = Encoding.UTF8.GetDecoder();
        private readonly SseParser _parser = new SseParser();
        private readonly StringBuilder _body = new StringBuilder();
        private readonly Action<SseEvent> _onEvent;

        public SseDownloadHandler(Action<SseEvent> onEvent) : base(new byte[4096])
        {
            _onEvent = onEvent;
        }

        /// <summary>The body received so far (for error answers; capped).</summary>
        public string Body
        {
            get { return _body.ToString(); }
        }

        protected override bool ReceiveData(byte[] data, int dataLength)
        {
            if (data == null || dataLength <= 0)
            {
                return true;
            }
            var chars = new char[_decoder.GetCharCount(data, 0, dataLength)];
            int count = _decoder.GetChars(data, 0, dataLength, chars, 0);
            string text = new string(chars, 0, count);
            if (_body.Length < MaxKeptChars)
            {
                _body.Append(text);
            }
            foreach (SseEvent ev in _parser.Feed(text))
            {
                _onEvent(ev);
            }
            return true;
        }

        protected override void CompleteContent()
        {
            // A final event not followed by a blank line still counts.
            foreach (SseEvent ev in _parser.Feed("\n\n"))
            {
                _onEvent(ev);
            }
        }
    }
}
