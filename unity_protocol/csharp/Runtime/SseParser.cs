using System;
using System.Collections.Generic;
using System.Text;

namespace Machi.Client
{
    /// <summary>One server-sent event: its name ("delta", "reset", "reply", "error") and data (JSON).</summary>
    public struct SseEvent
    {
        public string Name;
        public string Data;

        public SseEvent(string name, string data)
        {
            Name = name;
            Data = data;
        }
    }

    /// <summary>Incremental text/event-stream parser: feed it text as it arrives, in any pieces.</summary>
    public sealed class SseParser
    {
        private readonly StringBuilder _line = new StringBuilder();
        private readonly StringBuilder _data = new StringBuilder();
        private string _event;
        private bool _hasData;
        private bool _lastWasCr;

        /// <summary>Parses `text` and returns the events it completed (an event ends at a blank line).</summary>
        public List<SseEvent> Feed(string text)
        {
            var done = new List<SseEvent>();
            foreach (char ch in text)
            {
                // "\r\n", "\r" and "\n" all end a line; skip the "\n" of a "\r\n".
                if (ch == '\n' && _lastWasCr)
                {
                    _lastWasCr = false;
                    continue;
                }
                _lastWasCr = ch == '\r';
                if (ch == '\r' || ch == '\n')
                {
                    EndLine(done);
                }
                else
                {
                    _line.Append(ch);
                }
            }
            return done;
        }

        private void EndLine(List<SseEvent> done)
        {
            string line = _line.ToString();
            _line.Length = 0;
            if (line.Length == 0)
            {
                if (_hasData || _event != null)
                {
                    done.Add(new SseEvent(_event ?? "message", _data.ToString()));
                }
                _event = null;
                _data.Length = 0;
                _hasData = false;
                return;
            }
            if (line[0] == ':')
            {
                return; // a comment (keep-alive)
            }
            int colon = line.IndexOf(':');
            string field = colon < 0 ? line : line.Substring(0, colon);
            string value = colon < 0 ? "" : line.Substring(colon + 1);
            if (value.StartsWith(" ", StringComparison.Ordinal))
            {
                value = value.Substring(1);
            }
            if (field == "event")
            {
                _event = value;
            }
            else if (field == "data")
            {
                if (_hasData)
                {
                    _data.Append('\n');
                }
                _data.Append(value);
                _hasData = true;
            }
        }
    }
}
