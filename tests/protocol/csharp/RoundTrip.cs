// The C# side of the protocol round trip (tests/protocol/test_csharp.py drives it).
//   roundtrip.exe serialize DIR          writes sample requests, built with the generated DTOs, as DIR/<name>.json
//   roundtrip.exe deserialize IN OUT     reads the server's real replies IN/<Type>[.tag].json (list-<Type>.json for
//                                        arrays, *.sse for a streamed turn), parses them with the DTOs and writes
//                                        them back to OUT/ as the DTOs serialise them
//   roundtrip.exe selftest               retry policy and error parsing of the client
//   roundtrip.exe error STATUS FILE [RETRY_AFTER]   parses a real error answer (body in FILE, the Retry-After
//                                        header as sent) the way the client does; prints it as one JSON line
//   roundtrip.exe events URL TYPES AGENTS N   the Agent Town sample's MachiEvents.ReceiveAsync on URL's
//                                        /v1/events: prints the first N events, one JSON line each
//   roundtrip.exe methods                MachiClient's public instance methods, one JSON line each: name,
//                                        parameter types, return type
// Exit code 0 on success; a failed check prints "FAIL: ..." and exits 1.
using System;
using System.Collections.Generic;
using System.IO;
using System.Reflection;
using System.Text;
using System.Threading;
using Machi.Client;
using Machi.Protocol;
using Machi.Samples;
using Newtonsoft.Json;

public static class RoundTrip
{
    public static int Main(string[] args)
    {
        try
        {
            switch (args[0])
            {
                case "serialize": Serialize(args[1]); break;
                case "deserialize": Deserialize(args[1], args[2]); break;
                case "selftest": SelfTest(); break;
                case "events": Events(args[1], args[2], args[3], int.Parse(args[4])); break;
                case "error": Error(long.Parse(args[1]), args[2], args.Length > 3 ? args[3] : null); break;
                case "methods": Methods(); break;
                default: throw new ArgumentException("unknown mode " + args[0]);
            }
            return 0;
        }
        catch (Exception exception)
        {
            Console.Error.WriteLine("FAIL: " + exception);
            return 1;
        }
    }

    private static void Write(string dir, string name, object value)
    {
        File.WriteAllText(Path.Combine(dir, name + ".json"), MachiClient.ToJson(value), new UTF8Encoding(false));
    }

    private static void Serialize(string dir)
    {
        Write(dir, "poi-cafe", new PoiUpsert { Name = "中央カフェ", Kind = "cafe", Description = "窓際の席が人気。", Position = new Position { X = 0, Y = 0, Z = 0 } });
        Write(dir, "poi-park", new PoiUpsert { Name = "公園", Kind = "park", Position = new Position { X = 30.5, Z = 12 } });
        Write(dir, "agent-aoi", new AgentUpsert
        {
            Name = "葵", Language = Language.Ja, Age = 22, Traits = new List<string> { "読書好き", "好奇心旺盛" },
            Backstory = "図書館で過ごすのが好きな学生。", SpeakingStyle = "丁寧でやわらかい口調。", HomePoi = "cafe",
            WakeHour = 7, SleepHour = 23
        });
        Write(dir, "agent-hikari", new AgentUpsert
        {
            Name = "ひかり", Language = Language.Ja, Traits = new List<string> { "明るい" }, HomePoi = "park",
            WakeHour = 6, SleepHour = 22.5
        });
        Write(dir, "state", new StateReport
        {
            State = State.WanderingInPoi, LocationName = "中央カフェ", Position = new Position { X = 1.5, Y = 0, Z = -2 },
            Day = 1, TimeOfDay = 9.25
        });
        Write(dir, "plan", new PlanRequest { Day = 1 });
        Write(dir, "turn", new TurnRequest
        {
            AgentId = "aoi", TargetId = "hikari", SessionId = "cs-roundtrip-1", LocationName = "中央カフェ",
            History = new List<string>(), TimeOfDay = 14.5, Day = 1
        });
        Write(dir, "turn-stream", new TurnRequest
        {
            AgentId = "hikari", TargetId = "aoi", SessionId = "cs-roundtrip-1", LocationName = "中央カフェ",
            History = new List<string> { "葵: こんにちは、ひかりさん！" }, TimeOfDay = 14.5, Day = 1
        });
        Write(dir, "end", new EndRequest { SessionId = "cs-roundtrip-1", Reason = "distance", Day = 1, TimeOfDay = 14.75 });
        Write(dir, "memory", new MemoryCreate
        {
            Type = TypeElement.Observation, Content = "カフェで新しいケーキを見つけた", Importance = 6,
            LocationName = "中央カフェ", Tags = new List<string> { "cake" }, Day = 1, TimeOfDay = 10
        });
        Write(dir, "retrieve", new RetrieveRequest { Query = "ケーキ", K = 3 });
        // Protocol 2: visitors, groups, actions.
        Write(dir, "agent-ren", new AgentUpsert
        {
            Name = "蓮", Language = Language.Ja, Traits = new List<string> { "物静か" }, HomePoi = "park",
            WakeHour = 7, SleepHour = 23
        });
        Write(dir, "gestures", new GesturesUpdate { Gestures = new List<string> { "wave", "bow" } });
        Write(dir, "player", new PlayerUpsert { DisplayName = "ユキ", Language = Language.Ja });
        Write(dir, "player-turn", new PlayerTurnRequest
        {
            SessionId = "cs-visit-1", PlayerId = "player:cs-guest", AgentId = "aoi", Text = "こんにちは！おすすめの本は？",
            LocationName = "中央カフェ", History = new List<string>(), TimeOfDay = 11, Day = 1
        });
        Write(dir, "player-turn-stream", new PlayerTurnRequest
        {
            SessionId = "cs-visit-2", PlayerId = "player:cs-guest", AgentId = "hikari", Text = "やあ、ひかりさん。",
            History = new List<string>(), TimeOfDay = 11.5, Day = 1, Language = Language.Ja
        });
        Write(dir, "group-turn", new TurnRequest
        {
            AgentId = "aoi", TargetId = "hikari", SessionId = "cs-group-1", LocationName = "公園",
            Participants = new List<string> { "aoi", "hikari", "ren" }, History = new List<string>(), TimeOfDay = 12, Day = 1
        });
        Write(dir, "action-give", new ActionResult
        {
            Action = new AgentAction { Type = AgentActionType.Give, Target = "hikari", Item = "本" }, Outcome = Outcome.Done,
            SessionId = "cs-roundtrip-1", Day = 1, TimeOfDay = 14.8
        });
        Write(dir, "action-gesture", new ActionResult
        {
            Action = new AgentAction { Type = AgentActionType.Gesture, Target = "wave" }, Outcome = Outcome.Failed,
            Detail = "手がふさがっていた", TimeOfDay = 14.9
        });
        Write(dir, "action-go-to", new ActionResult
        {
            Action = new AgentAction { Type = AgentActionType.GoTo, Target = "park" }, Outcome = Outcome.Interrupted,
            Detail = "stopped on the way", SessionId = "cs-group-1", Day = 1, TimeOfDay = 15
        });
        // The council, the judge, the interview.
        Write(dir, "council", new CouncilCreate
        {
            Title = "公園に図書コーナーを作る", Background = "公園のベンチで本を読む人が増えた。", Members = new List<string> { "aoi", "hikari", "ren" },
            Moderator = "aoi", Rounds = 1, Language = Language.Ja
        });
        Write(dir, "interview", new InterviewRequest { Question = "新しいケーキのこと、覚えてる？", Day = 1, TimeOfDay = 16.5 });
        Write(dir, "judge", new JudgeRequest { Content = "葵: こんにちは、ひかりさん！", Criteria = new List<string> { "in_character", "coherence" } });
    }

    private static void Deserialize(string inDir, string outDir)
    {
        foreach (string path in Directory.GetFiles(inDir))
        {
            string file = Path.GetFileName(path);
            string text = File.ReadAllText(path, Encoding.UTF8);
            if (file.EndsWith(".sse", StringComparison.Ordinal))
            {
                File.WriteAllText(Path.Combine(outDir, file + ".json"), ParseStream(File.ReadAllBytes(path)), new UTF8Encoding(false));
                continue;
            }
            string name = file.Substring(0, file.IndexOf('.'));
            bool list = name.StartsWith("list-", StringComparison.Ordinal);
            Type type = typeof(TurnResult).Assembly.GetType("Machi.Protocol." + (list ? name.Substring(5) : name), true);
            if (list)
            {
                type = typeof(List<>).MakeGenericType(type);
            }
            object value = JsonConvert.DeserializeObject(text, type, ConverterSettings());
            File.WriteAllText(Path.Combine(outDir, file), JsonConvert.SerializeObject(value, ConverterSettings()), new UTF8Encoding(false));
        }
    }

    private static JsonSerializerSettings ConverterSettings()
    {
        return Converter.Settings;
    }

    /// <summary>Feeds the SSE body to the client's download handler in 5-byte chunks (splitting UTF-8
    /// characters, as a network does) and checks that the deltas add up to the reply's dialogue.</summary>
    private static string ParseStream(byte[] body)
    {
        var events = new List<SseEvent>();
        var handler = new SseDownloadHandler(events.Add);
        MethodInfo receive = typeof(SseDownloadHandler).GetMethod("ReceiveData", BindingFlags.Instance | BindingFlags.NonPublic);
        MethodInfo complete = typeof(SseDownloadHandler).GetMethod("CompleteContent", BindingFlags.Instance | BindingFlags.NonPublic);
        for (int offset = 0; offset < body.Length; offset += 5)
        {
            int n = Math.Min(5, body.Length - offset);
            var chunk = new byte[n];
            Array.Copy(body, offset, chunk, 0, n);
            receive.Invoke(handler, new object[] { chunk, n });
        }
        complete.Invoke(handler, new object[0]);
        var shown = new StringBuilder();
        TurnResult reply = null;
        PlayerTurnResult playerReply = null;
        foreach (SseEvent ev in events)
        {
            if (ev.Name == "delta") shown.Append(TurnDelta.FromJson(ev.Data).Text);
            else if (ev.Name == "reset") shown.Length = 0;
            else if (ev.Name == "reply")
            {
                reply = TurnResult.FromJson(ev.Data);
                playerReply = PlayerTurnResult.FromJson(ev.Data); // a player-turn's reply carries its extra fields
            }
        }
        Check(reply != null, "the stream has a reply event");
        Check(shown.ToString() == reply.Dialogue, "deltas concatenate to the dialogue: '" + shown + "' vs '" + reply.Dialogue + "'");
        return JsonConvert.SerializeObject(new
        {
            events = events.ConvertAll(e => new { name = e.Name, data = e.Data }),
            dialogue = shown.ToString(),
            player_line = playerReply.PlayerLine,
            next_speaker = reply.NextSpeaker
        });
    }

    private static void SelfTest()
    {
        Check(RetryPolicy.IsRetryable(0, true, false), "network errors are retried");
        Check(RetryPolicy.IsRetryable(0, false, true), "timeouts are retried");
        Check(RetryPolicy.IsRetryable(503, false, false), "5xx is retried");
        Check(!RetryPolicy.IsRetryable(404, false, false) && !RetryPolicy.IsRetryable(422, false, false), "4xx is never retried");
        TimeSpan first = RetryPolicy.Backoff(0, TimeSpan.FromMilliseconds(500), TimeSpan.FromSeconds(8), 1.0);
        TimeSpan capped = RetryPolicy.Backoff(10, TimeSpan.FromMilliseconds(500), TimeSpan.FromSeconds(8), 1.0);
        Check(first == TimeSpan.FromMilliseconds(500) && capped == TimeSpan.FromSeconds(8), "backoff doubles and is capped");
        Check(RetryPolicy.Backoff(1, TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(8), 0.0) == TimeSpan.FromSeconds(1), "jitter halves at most");
        var parsed = Attempt.ParseError(422, "{\"error\":{\"code\":\"validation_error\",\"message\":\"invalid request: time_of_day\",\"details\":[{\"field\":\"time_of_day\"}]}}", "");
        Check(parsed.Code == "validation_error" && parsed.StatusCode == 422 && parsed.DetailsJson.Contains("time_of_day"), "error body surfaces code and details");
        var html = Attempt.ParseError(502, "<html>bad gateway</html>", "");
        Check(html.Code == "http_502" && html.ApiMessage.Contains("bad gateway"), "a non-JSON error body is kept as text");
        var attempt = Attempt.From(UnityEngine.Networking.UnityWebRequest.Result.ProtocolError, 409, "{}", "");
        Check(!attempt.Ok && !attempt.Retryable, "a 409 is final");
        attempt = Attempt.From(UnityEngine.Networking.UnityWebRequest.Result.ConnectionError, 0, "", "refused");
        Check(attempt.Retryable && attempt.Failure == TransportFailure.Network, "a connection error is retried");
        var parser = new SseParser();
        var got = parser.Feed("event: delta\r\ndata: {\"text\":\"こん\"}\r\n\r\n: keep-alive\n\nevent: reply\ndata: {\"a\":\n");
        Check(got.Count == 1 && got[0].Name == "delta", "CRLF events parse, comments are skipped");
        got = parser.Feed("data: 1}\n\n");
        Check(got.Count == 1 && got[0].Name == "reply" && got[0].Data == "{\"a\":\n1}", "multi-line data joins with newlines");
        RateLimitSelfTest();
        Check(MachiClient.IsPlayer("player:yuki") && !MachiClient.IsPlayer("aoi") && !MachiClient.IsPlayer(null), "player ids are told apart");
        Check(MachiClient.PlayerId("yuki") == "player:yuki" && MachiClient.PlayerId("player:yuki") == "player:yuki", "the player: prefix is added once");
        Check(Uri.EscapeDataString(MachiClient.PlayerId("guest-1")) == "player%3Aguest-1", "a player id is escaped in a path");
        Console.WriteLine("selftest ok");
    }

    /// <summary>429s: waited out once within the budget, otherwise a typed exception naming the limit.</summary>
    private static void RateLimitSelfTest()
    {
        var now = new DateTimeOffset(2026, 12, 4, 3, 0, 0, TimeSpan.Zero);
        Check(RetryPolicy.ParseRetryAfter("12", now) == TimeSpan.FromSeconds(12), "Retry-After in seconds");
        Check(RetryPolicy.ParseRetryAfter("Fri, 04 Dec 2026 03:00:30 GMT", now) == TimeSpan.FromSeconds(30), "Retry-After as an HTTP date");
        Check(RetryPolicy.ParseRetryAfter("Fri, 04 Dec 2026 02:00:00 GMT", now) == TimeSpan.Zero, "a past date is no wait");
        Check(RetryPolicy.ParseRetryAfter(null, now) == null && RetryPolicy.ParseRetryAfter("soon", now) == null
            && RetryPolicy.ParseRetryAfter("-3", now) == null, "no or unreadable Retry-After");
        TimeSpan budget = TimeSpan.FromSeconds(2);
        Check(RetryPolicy.WaitForRateLimit(429, TimeSpan.FromSeconds(1), budget, false), "a short 429 is waited out");
        Check(RetryPolicy.WaitForRateLimit(429, budget, budget, false), "the budget itself is waited out");
        Check(!RetryPolicy.WaitForRateLimit(429, TimeSpan.FromSeconds(1), budget, true), "only once per call");
        Check(!RetryPolicy.WaitForRateLimit(429, TimeSpan.FromSeconds(30), budget, false), "a long wait is the caller's");
        Check(!RetryPolicy.WaitForRateLimit(429, null, budget, false), "no Retry-After: no guessing");
        Check(!RetryPolicy.WaitForRateLimit(429, TimeSpan.FromSeconds(1), TimeSpan.Zero, false), "budget zero: never wait");
        Check(!RetryPolicy.WaitForRateLimit(503, TimeSpan.FromSeconds(1), budget, false), "only a 429 is a rate limit");
        Check(new MachiClientOptions().MaxRateLimitWait == budget, "the default budget is 2 s");
        string body = "{\"error\":{\"code\":\"too_many_requests\",\"message\":\"PLAYER_LINES_PER_MINUTE=12\","
            + "\"details\":{\"limit\":\"PLAYER_LINES_PER_MINUTE\",\"value\":12,\"retry_after_s\":41.5,\"field\":\"text\"}}}";
        var attempt = Attempt.From(UnityEngine.Networking.UnityWebRequest.Result.ProtocolError, 429, body, "", "42");
        Check(!attempt.Ok && !attempt.Retryable && attempt.RetryAfter == TimeSpan.FromSeconds(42), "a 429 keeps its Retry-After and is not retried by backoff");
        var limited = attempt.ToApiException() as MachiRateLimitException;
        Check(limited != null && limited.Limit == "PLAYER_LINES_PER_MINUTE" && limited.RetryAfter == TimeSpan.FromSeconds(42)
            && limited.Code == "too_many_requests" && limited.StatusCode == 429, "a 429 is a MachiRateLimitException naming the limit");
        limited = Attempt.ParseError(429, body, "") as MachiRateLimitException;
        Check(limited != null && limited.RetryAfter == TimeSpan.FromSeconds(41.5), "without the header, details.retry_after_s says when");
        limited = Attempt.ParseError(429, "<html>slow down</html>", "") as MachiRateLimitException;
        Check(limited != null && limited.Limit == null && limited.RetryAfter == null, "a bare 429 is still typed");
        Check(!(Attempt.ParseError(422, body, "") is MachiRateLimitException), "only a 429 is a rate limit exception");
    }

    /// <summary>A real error answer, parsed as the client does (Attempt.From with the Retry-After header).</summary>
    private static void Error(long status, string file, string retryAfter)
    {
        string body = File.ReadAllText(file, Encoding.UTF8);
        var attempt = Attempt.From(UnityEngine.Networking.UnityWebRequest.Result.ProtocolError, status, body, "", retryAfter);
        MachiApiException error = attempt.ToApiException();
        var limited = error as MachiRateLimitException;
        bool wait = RetryPolicy.WaitForRateLimit(status, attempt.RetryAfter, new MachiClientOptions().MaxRateLimitWait, false);
        Console.WriteLine(JsonConvert.SerializeObject(new
        {
            type = error.GetType().Name,
            status = error.StatusCode,
            code = error.Code,
            details = error.DetailsJson,
            retryable = attempt.Retryable,
            limit = limited != null ? limited.Limit : null,
            retry_after_s = limited != null && limited.RetryAfter.HasValue ? limited.RetryAfter.Value.TotalSeconds : (double?)null,
            waits = wait
        }));
    }

    private static void Events(string baseUrl, string types, string agents, int count)
    {
        var options = new MachiClientOptions { BaseUrl = baseUrl, WorldId = "default" };
        int received = 0;
        using (var stop = new CancellationTokenSource(TimeSpan.FromSeconds(60)))
        {
            Action<string> print = json =>
            {
                MachiEvent ev = MachiClient.FromJson<MachiEvent>(json);
                Console.WriteLine(JsonConvert.SerializeObject(new { type = ev.Type, world = ev.WorldId, at = ev.At, agent = ev.Text("agent_id"), state = ev.Text("state") }));
                Console.Out.Flush();
                if (++received >= count) stop.Cancel();
            };
            try
            {
                MachiEvents.ReceiveAsync(options, types, agents, print, stop.Token).Wait();
            }
            catch (AggregateException) when (received >= count)
            {
                // cancelled once enough events came
            }
        }
        Check(received >= count, "received " + received + " of " + count + " events");
    }

    private static void Methods()
    {
        foreach (MethodInfo method in typeof(MachiClient).GetMethods(BindingFlags.Public | BindingFlags.Instance | BindingFlags.DeclaredOnly))
        {
            Console.WriteLine(JsonConvert.SerializeObject(new
            {
                name = method.Name,
                parameters = Array.ConvertAll(method.GetParameters(), p => TypeName(p.ParameterType)),
                returns = TypeName(method.ReturnType)
            }));
        }
    }

    /// <summary>"UniTask<InterviewResult>", "String", "List<PoiPublic>": short names, generics spelled out.</summary>
    private static string TypeName(Type type)
    {
        if (!type.IsGenericType)
        {
            return type.Name;
        }
        string name = type.Name.Substring(0, type.Name.IndexOf('`'));
        return name + "<" + string.Join(",", Array.ConvertAll(type.GetGenericArguments(), TypeName)) + ">";
    }

    private static void Check(bool condition, string what)
    {
        if (!condition)
        {
            throw new Exception("check failed: " + what);
        }
    }
}
