"""Reply schemas and prompts for the memory concept's model calls.

Purposes: `importance` (rate one memory 1-10, or several in one call), `reflection` (summarise a finished
conversation), `questions` (the 3 most salient questions about recent memories) and `insight` (up to 5
insights citing memory ids).
Each prompt is built from a `facts` dict that is also passed to the model call, so the scripted engine
(backend/scripted/writers/memory.py) answers from the same facts a real model reads in the prompt.
Prompts name and describe the reply's fields in words, never as a JSON example with placeholder values
(a small model copies them); the provider enforces the shape.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from backend.llm.base import Message
from backend.text import clean_text


class ImportanceRating(BaseModel):
    """How poignant a memory is: 1 mundane (brushing teeth) to 10 life-changing (a break-up)."""

    model_config = ConfigDict(extra="ignore")
    importance: int = Field(ge=1, le=10)


class ImportanceRatings(BaseModel):
    """One 1-10 rating per numbered memory, in the order they were listed (a batch shares one model call)."""

    model_config = ConfigDict(extra="ignore")
    # One call rates at most reflection.RATE_BATCH (16); each call's schema asks for its exact count.
    ratings: list[Annotated[int, Field(ge=1, le=10)]] = Field(min_length=1, max_length=16)


class ConversationReflection(BaseModel):
    """A first-person, one-paragraph summary of a conversation, and how important it was."""

    model_config = ConfigDict(extra="ignore")
    summary: str = Field(min_length=1, max_length=800)
    importance: int = Field(ge=1, le=10)


class SalientQuestions(BaseModel):
    """The most salient high-level questions one can answer about the recent memories."""

    model_config = ConfigDict(extra="ignore")
    questions: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(min_length=1, max_length=3)


class Insight(BaseModel):
    # A reflection is shown on the dashboard and quoted into later prompts: no control characters.
    content: Annotated[str, AfterValidator(clean_text)] = Field(min_length=1, max_length=300)
    evidence_ids: list[Annotated[int, Field(ge=1, le=2**63 - 1)]] = Field(min_length=1, max_length=10)
    importance: int = Field(5, ge=1, le=10)


class InsightList(BaseModel):
    """High-level insights, each citing the ids of the memories it rests on."""

    model_config = ConfigDict(extra="ignore")
    insights: list[Insight] = Field(max_length=5)


def _system(facts: dict[str, Any], en: str, ja: str) -> Message:
    ja_lang = str(facts.get("language", "ja")).startswith("ja")
    return {"role": "system", "content": ja if ja_lang else en}


def importance_messages(facts: dict[str, Any]) -> list[Message]:
    system = _system(
        facts,
        "On a scale of 1 to 10, where 1 is purely mundane (e.g. brushing teeth, making bed) and 10 is "
        "extremely poignant (e.g. a break up, college acceptance), rate the likely poignancy of the memory. "
        "Reply with a JSON object whose one field, importance, is that rating: an integer from 1 to 10.",
        "1から10の尺度で、1はごく日常的なこと(歯磨き、ベッドを整える)、10は非常に心に残ること(別れ、合格)として、"
        "次の記憶の重要度を評価してください。JSONオブジェクトで答え、importance にその評価を1〜10の整数で"
        "入れてください。",
    )
    user = f"{facts.get('agent_name', '')}: {facts['memory']}"
    return [system, {"role": "user", "content": user}]


def importance_batch_messages(facts: dict[str, Any]) -> list[Message]:
    """Rate several memories in one call: `facts["memories"]` is the list, numbered from 1 in the prompt."""
    memories = [str(text) for text in facts["memories"]]
    system = _system(
        facts,
        "On a scale of 1 to 10, where 1 is purely mundane (e.g. brushing teeth, making bed) and 10 is "
        "extremely poignant (e.g. a break up, college acceptance), rate the likely poignancy of each numbered "
        f"memory. Reply with a JSON object whose one field, ratings, is a list of exactly {len(memories)} "
        "integers from 1 to 10, one per memory, in the order they are numbered.",
        "1から10の尺度で、1はごく日常的なこと(歯磨き、ベッドを整える)、10は非常に心に残ること(別れ、合格)として、"
        "番号つきの記憶それぞれの重要度を評価してください。JSONオブジェクトで答え、ratings に"
        f"番号の順に{len(memories)}個の評価(1〜10の整数)を並べたリストを入れてください。",
    )
    listed = "\n".join(f"{n}. {text}" for n, text in enumerate(memories, start=1))
    return [system, {"role": "user", "content": f"{facts.get('agent_name', '')}:\n{listed}"}]


def conversation_messages(facts: dict[str, Any]) -> list[Message]:
    system = _system(
        facts,
        f"You are {facts['agent_name']}. Summarise the conversation you just had with {facts['partner_name']} "
        "in one first-person paragraph (what was said, how you feel about it), then rate its importance 1-10.\n"
        "Reply with a JSON object with these fields:\n"
        "- summary: that paragraph, in your own words\n"
        "- importance: an integer from 1 to 10",
        f"あなたは{facts['agent_name']}です。{facts['partner_name']}と今した会話を、一人称の一段落で要約してください"
        "(話した内容と、それをどう感じたか)。重要度を1から10で評価してください。\n"
        "次の項目をもつJSONオブジェクトで答えてください。\n"
        "- summary: その要約を自分の言葉で\n"
        "- importance: 重要度(1〜10の整数)",
    )
    where = f" ({facts['location_name']})" if facts.get("location_name") else ""
    user = f"Day {facts['day']} {facts['clock']}{where}\n" + "\n".join(facts["transcript"])
    return [system, {"role": "user", "content": user}]


def _numbered(memories: list[dict[str, Any]]) -> str:
    return "\n".join(f"[{m['id']}] {m['content']}" for m in memories)


def questions_messages(facts: dict[str, Any]) -> list[Message]:
    system = _system(
        facts,
        f"You are {facts['agent_name']}. Given only the statements below, what are the 3 most salient "
        "high-level questions we can answer about the subjects in the statements?\n"
        "Reply with a JSON object with one field:\n"
        "- questions: those 3 questions, each a full sentence",
        f"あなたは{facts['agent_name']}です。以下の記憶だけを手がかりに、そこに登場する人や物事について答えられる、"
        "最も重要な高次の問いを3つ挙げてください。\n次の項目をもつJSONオブジェクトで答えてください。\n"
        "- questions: その3つの問い(それぞれ一文で)",
    )
    return [system, {"role": "user", "content": _numbered(facts["memories"])}]


def insight_messages(facts: dict[str, Any]) -> list[Message]:
    system = _system(
        facts,
        f"You are {facts['agent_name']}. What 5 high-level insights can you infer from the statements below? "
        "Cite the ids of the statements each insight rests on, and rate each insight's importance 1-10.\n"
        "Reply with a JSON object with one field:\n"
        "- insights: the insights, each with content (the insight, one sentence of your own), evidence_ids "
        "(the bracketed ids of the statements it rests on) and importance (an integer from 1 to 10)",
        f"あなたは{facts['agent_name']}です。以下の記憶から導ける高次の洞察を最大5つ書いてください。"
        "それぞれ根拠とした記憶のidを挙げ、重要度を1から10で評価してください。\n"
        "次の項目をもつJSONオブジェクトで答えてください。\n"
        "- insights: 洞察のリスト。各洞察には content(自分の言葉で書いた一文の洞察)、"
        "evidence_ids(根拠にした記憶の角括弧内のid)、importance(1〜10の整数)を入れる",
    )
    questions = "\n".join(f"- {q}" for q in facts.get("questions", []))
    return [system, {"role": "user", "content": f"{questions}\n\n{_numbered(facts['memories'])}"}]


# --- person memory (purpose `person`; see person.py) ---
#: A running summary may come back unchanged when a conversation taught nothing new (llm/echo.py).
KEPT_SUMMARY: dict[str, Any] = {"echo_check": "may_repeat"}
PersonItem = Annotated[str, Field(min_length=1, max_length=100)]
#: A trait is a few words ("cheerful", "好奇心旺盛").
PersonTrait = Annotated[str, Field(min_length=1, max_length=40)]


class PersonUpdate(BaseModel):
    """What one conversation taught an agent about a person: new traits, new notes, the updated summary."""

    model_config = ConfigDict(extra="ignore")
    traits_noticed: list[PersonTrait] = Field(default_factory=list, max_length=5)
    notes: list[PersonItem] = Field(default_factory=list, max_length=5)
    #: Rewritten from the summary in the prompt: the same summary again is an answer (llm/echo.py).
    summary: str = Field(min_length=1, max_length=2000, json_schema_extra=KEPT_SUMMARY)


class PersonSummary(BaseModel):
    """A shorter running summary about a person (the recompression step)."""

    model_config = ConfigDict(extra="ignore")
    #: Rewritten from the summary in the prompt: the same summary again is an answer (llm/echo.py).
    summary: str = Field(min_length=1, max_length=2000, json_schema_extra=KEPT_SUMMARY)


def _known(facts: dict[str, Any]) -> str:
    traits = ", ".join(facts.get("traits_noticed") or []) or "-"
    notes = "\n".join(f"- {n}" for n in facts.get("notes") or []) or "-"
    return f"Summary: {facts.get('summary') or '-'}\nTraits: {traits}\nNotes:\n{notes}"


def person_update_messages(facts: dict[str, Any]) -> list[Message]:
    me, other = facts["agent_name"], facts["other_name"]
    system = _system(
        facts,
        f"You are {me}. Below is what you knew about {other} and the conversation you just had with them. "
        f"List personality traits of {other} you newly noticed (short words), new concrete facts worth "
        f"remembering about {other} (notes), and rewrite your running summary of {other} so it includes this "
        "conversation.\nReply with a JSON object with these fields:\n"
        "- traits_noticed: the traits you newly noticed, in short words\n"
        "- notes: the new facts worth remembering\n"
        f"- summary: your rewritten summary of {other}",
        f"あなたは{me}です。以下は、あなたが{other}について知っていたことと、今{other}とした会話です。"
        f"今回新たに気づいた{other}の性格(短い言葉)、覚えておくべき{other}についての具体的な事実(メモ)を挙げ、"
        f"この会話を含めて{other}についての要約を書き直してください。\n"
        "次の項目をもつJSONオブジェクトで答えてください。\n"
        "- traits_noticed: 新しく気づいた性格(短い言葉)\n"
        "- notes: 新しく知った、覚えておくべき事実\n"
        f"- summary: 書き直した{other}についての要約",
    )
    where = f" ({facts['location_name']})" if facts.get("location_name") else ""
    user = f"{_known(facts)}\n\nDay {facts['day']} {facts['clock']}{where}\n" + "\n".join(facts["transcript"])
    return [system, {"role": "user", "content": user}]


def person_compress_messages(facts: dict[str, Any]) -> list[Message]:
    me, other, limit = facts["agent_name"], facts["other_name"], facts["max_chars"]
    system = _system(
        facts,
        f"You are {me}. Shorten your running summary of {other} to at most {limit} characters, keeping what "
        "matters most about them and your relationship.\nReply with a JSON object with one field:\n"
        "- summary: the shortened summary",
        f"あなたは{me}です。{other}についての要約を、{other}の人柄とあなたとの関係で大切なことを残して"
        f"{limit}文字以内に短くしてください。\n次の項目をもつJSONオブジェクトで答えてください。\n"
        "- summary: 短くした要約",
    )
    return [system, {"role": "user", "content": _known(facts)}]
