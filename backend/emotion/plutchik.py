"""Plutchik's wheel as pure functions: labels, decay toward a baseline, the VRM expression mapping.

The eight basic emotions each hold a value 0-100. A label names the strongest one at its intensity
(serenity < joy < ecstasy ...), or the primary dyad when two neighbours on the wheel are both high
(joy + trust = love ...). Values drift back toward the agent's resting baseline with a half-life in game
minutes. The VRM 1.0 expression a face shows is derived from the values (table in `VRM_MAPPING`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

PLUTCHIK = ("joy", "trust", "fear", "surprise", "sadness", "disgust", "anger", "anticipation")

#: Intensity labels per emotion, (mild, basic, intense), in Japanese and English.
INTENSITY_LABELS: dict[str, dict[str, tuple[str, str, str]]] = {
    "ja": {
        "joy": ("平穏", "喜び", "恍惚"),
        "trust": ("受容", "信頼", "敬愛"),
        "fear": ("不安", "恐れ", "恐怖"),
        "surprise": ("放心", "驚き", "驚嘆"),
        "sadness": ("哀愁", "悲しみ", "悲嘆"),
        "disgust": ("退屈", "嫌悪", "憎悪"),
        "anger": ("苛立ち", "怒り", "激怒"),
        "anticipation": ("関心", "期待", "警戒"),
    },
    "en": {
        "joy": ("serenity", "joy", "ecstasy"),
        "trust": ("acceptance", "trust", "admiration"),
        "fear": ("apprehension", "fear", "terror"),
        "surprise": ("distraction", "surprise", "amazement"),
        "sadness": ("pensiveness", "sadness", "grief"),
        "disgust": ("boredom", "disgust", "loathing"),
        "anger": ("annoyance", "anger", "rage"),
        "anticipation": ("interest", "anticipation", "vigilance"),
    },
}

#: Primary dyads: neighbours on the wheel felt together.
DYADS: dict[frozenset[str], dict[str, str]] = {
    frozenset({"joy", "trust"}): {"ja": "愛", "en": "love"},
    frozenset({"trust", "fear"}): {"ja": "服従", "en": "submission"},
    frozenset({"fear", "surprise"}): {"ja": "畏怖", "en": "awe"},
    frozenset({"surprise", "sadness"}): {"ja": "失望", "en": "disapproval"},
    frozenset({"sadness", "disgust"}): {"ja": "後悔", "en": "remorse"},
    frozenset({"disgust", "anger"}): {"ja": "軽蔑", "en": "contempt"},
    frozenset({"anger", "anticipation"}): {"ja": "攻撃性", "en": "aggressiveness"},
    frozenset({"anticipation", "joy"}): {"ja": "楽観", "en": "optimism"},
}

CALM_LABEL = {"ja": "平静", "en": "calm"}

#: Thresholds (0-100).
CALM_BELOW = 25.0  # nothing at or above this: the agent is calm / the face neutral
INTENSE_AT = 75.0  # the intense label (ecstasy, rage ...)
MILD_BELOW = 45.0  # below this the mild label (serenity, annoyance ...)
DYAD_AT = 50.0  # both neighbours at least this high: the dyad's label

#: VRM 1.0 preset <- the emotions that drive it. The preset whose strongest driver is highest wins;
#: when no emotion reaches CALM_BELOW (low arousal) the face is neutral.
VRM_MAPPING: dict[str, tuple[str, ...]] = {
    "happy": ("joy", "anticipation"),
    "angry": ("anger", "disgust"),
    "sad": ("sadness",),
    "surprised": ("surprise", "fear"),
    "relaxed": ("trust",),
}
VRM_PRESETS = ("neutral", "happy", "angry", "sad", "relaxed", "surprised")


def clamp_values(values: Mapping[str, float]) -> dict[str, float]:
    """All eight keys present, each within 0-100."""
    return {name: float(min(100.0, max(0.0, values.get(name, 0.0)))) for name in PLUTCHIK}


def label(values: Mapping[str, float], language: str = "ja") -> str:
    """One word for the state: a dyad, an intensity label, or calm."""
    lang = "en" if language.startswith("en") else "ja"
    ranked = sorted(PLUTCHIK, key=lambda n: (-values.get(n, 0.0), PLUTCHIK.index(n)))
    top, second = ranked[0], ranked[1]
    top_value = values.get(top, 0.0)
    if top_value < CALM_BELOW:
        return CALM_LABEL[lang]
    pair = frozenset({top, second})
    if pair in DYADS and values.get(second, 0.0) >= DYAD_AT:
        return DYADS[pair][lang]
    mild, basic, intense = INTENSITY_LABELS[lang][top]
    if top_value >= INTENSE_AT:
        return intense
    return mild if top_value < MILD_BELOW else basic


#: The value a wheel word sets its emotion to: the middle of the word's intensity band.
BAND_VALUES = (35.0, 60.0, 85.0)  # mild (CALM_BELOW..MILD_BELOW), basic (..INTENSE_AT), intense (above)


def feeling_targets(
    word: str, values: Mapping[str, float], baseline: Mapping[str, float], language: str
) -> dict[str, float] | None:
    """The values a wheel word points to from `values`: its emotion at the word's band (both emotions of a
    dyad at the basic band), the others as they are; calm points to the resting baseline. None for a word
    the wheel does not have in `language`."""
    lang = "en" if language.startswith("en") else "ja"
    word = word.strip()
    if word == CALM_LABEL[lang]:
        return clamp_values(baseline)
    targets = clamp_values(values)
    for name, words in INTENSITY_LABELS[lang].items():
        if word in words:
            targets[name] = BAND_VALUES[words.index(word)]
            return targets
    for pair, names in DYADS.items():
        if names[lang] == word:
            for name in pair:
                targets[name] = max(targets[name], BAND_VALUES[1])
            return targets
    return None


def vrm_preset(values: Mapping[str, float]) -> str:
    """The VRM 1.0 expression preset for a state (see VRM_MAPPING)."""
    best, best_value = "neutral", CALM_BELOW
    for preset, drivers in VRM_MAPPING.items():
        strength = max(values.get(d, 0.0) for d in drivers)
        if strength >= best_value and (best == "neutral" or strength > best_value):
            best, best_value = preset, strength
    return best


def decay(
    values: Mapping[str, float], baseline: Mapping[str, float], minutes: float, half_life_minutes: float
) -> dict[str, float]:
    """Values after `minutes` of game time drifting toward `baseline` with the given half-life."""
    if minutes <= 0 or half_life_minutes <= 0:
        return clamp_values(values)
    keep = math.pow(0.5, minutes / half_life_minutes)
    return clamp_values(
        {n: baseline.get(n, 0.0) + (values.get(n, 0.0) - baseline.get(n, 0.0)) * keep for n in PLUTCHIK}
    )


#: Persona trait words that raise (or lower) resting values; Japanese and English.
TRAIT_BIASES: dict[str, dict[str, float]] = {
    "明るい": {"joy": 20, "anticipation": 10},
    "cheerful": {"joy": 20, "anticipation": 10},
    "元気": {"joy": 15, "anticipation": 10},
    "好奇心": {"anticipation": 20, "surprise": 5},
    "curious": {"anticipation": 20, "surprise": 5},
    "優しい": {"trust": 20},
    "kind": {"trust": 20},
    "共感": {"trust": 15, "sadness": 5},
    "empathetic": {"trust": 15, "sadness": 5},
    "慎重": {"fear": 10, "anticipation": 10},
    "careful": {"fear": 10, "anticipation": 10},
    "分析": {"anticipation": 10},
    "analytical": {"anticipation": 10},
    "感情的": {"anger": 10, "joy": 10, "surprise": 5},
    "emotional": {"anger": 10, "joy": 10, "surprise": 5},
    "率直": {"anger": 5},
    "direct": {"anger": 5},
    "内気": {"fear": 15, "joy": -5},
    "shy": {"fear": 15, "joy": -5},
    "穏やか": {"trust": 10, "anger": -5},
    "calm": {"trust": 10, "anger": -5},
    "寂しがり": {"sadness": 15},
    "lonely": {"sadness": 15},
}
BASE_RESTING = {
    "joy": 20,
    "trust": 20,
    "fear": 5,
    "surprise": 5,
    "sadness": 5,
    "disgust": 3,
    "anger": 3,
    "anticipation": 15,
}


def baseline_for(traits: Iterable[str], backstory: str = "") -> dict[str, float]:
    """A resting state from persona words: every trait that mentions a known word nudges the baseline."""
    values: dict[str, float] = dict(BASE_RESTING)
    text = " ".join(traits).lower() + " " + backstory.lower()
    for word, bias in TRAIT_BIASES.items():
        if word in text:
            for name, delta in bias.items():
                values[name] = values[name] + delta
    return clamp_values({n: min(v, 60.0) for n, v in values.items()})
