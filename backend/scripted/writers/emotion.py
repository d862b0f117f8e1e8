"""Scripted writer for emotion evaluations: nudges the previous state by cues in the recent lines."""

from __future__ import annotations

from typing import Any

from backend.emotion.plutchik import PLUTCHIK, clamp_values, label
from backend.scripted.engine import WriterContext

#: Words that move an emotion, Japanese and English (the scripted engine's whole "understanding").
CUES: dict[str, tuple[str, ...]] = {
    "joy": (
        "楽しい",
        "嬉しい",
        "うれしい",
        "好き",
        "最高",
        "いいね",
        "笑",
        "fun",
        "happy",
        "great",
        "love",
        "glad",
    ),
    "trust": ("ありがとう", "信じ", "一緒", "助かる", "thanks", "thank you", "together", "trust"),
    "fear": ("怖い", "こわい", "不安", "心配", "scared", "afraid", "worried", "nervous"),
    "surprise": ("えっ", "びっくり", "本当に", "まさか", "驚", "wow", "really?", "surprised", "no way"),
    "sadness": (
        "悲しい",
        "寂しい",
        "残念",
        "つらい",
        "またね",
        "さようなら",
        "sad",
        "lonely",
        "sorry",
        "bye",
    ),
    "disgust": ("嫌", "いや", "気持ち悪", "gross", "disgusting", "hate"),
    "anger": ("怒", "むかつく", "ひどい", "許せない", "angry", "annoying", "unfair"),
    "anticipation": ("楽しみ", "明日", "今度", "予定", "計画", "looking forward", "tomorrow", "plan", "soon"),
}


def write_emotion(ctx: WriterContext) -> dict[str, Any]:
    previous = clamp_values(ctx.facts.get("previous") or {})
    baseline = clamp_values(ctx.facts.get("baseline") or previous)
    text = (
        " ".join(str(line) for line in ctx.facts.get("lines") or []).lower()
        + " "
        + str(ctx.facts.get("cause", ""))
    )
    values: dict[str, float] = {}
    for name in PLUTCHIK:
        hits = sum(text.count(cue) for cue in CUES[name])
        # Each cue pushes the value up; with no cue it settles a little toward the baseline.
        target = previous[name] + 12 * min(hits, 4) if hits else (previous[name] * 2 + baseline[name]) / 3
        values[name] = target + ctx.rng.uniform(-3, 3)
    values = clamp_values(values)
    reply: dict[str, Any] = {name: int(round(values[name])) for name in PLUTCHIK}
    reply["label"] = label(values, ctx.language)
    return reply


WRITERS = {"EmotionEvaluation": write_emotion}
