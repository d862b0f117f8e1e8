"""The prompt lines that offer a speaker its actions, in Japanese or English.

They name the real ids the speaker may use (places, people, gestures) and say what each type does, in words:
no placeholder values and no JSON example, because small models copy an example's values into their reply.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.action.schemas import MAX_ACTIONS

#: Words for the default gestures (world/schemas.py DEFAULT_GESTURES), shown beside the names in a prompt.
GESTURE_WORDS: dict[str, dict[str, str]] = {
    "ja": {
        "wave": "手を振る",
        "bow": "お辞儀",
        "nod": "うなずく",
        "shake_head": "首を横に振る",
        "laugh": "笑う",
        "think": "考え込む",
        "point": "指さす",
    },
    "en": {},  # the English names say it themselves
}

_JA = {
    "head": f"行動: 返答の actions には、このせりふと一緒に実際にすることを{MAX_ACTIONS}つまで入れられる。"
    "せりふが本当に何かをすることを伴うとき（どこかへ行く、誰かに何かを渡す、しぐさをする）だけ入れ、"
    "それ以外は空のままにする。",
    "go_to": "- go_to: その場所へ歩いて行く。target は次の場所IDのどれか: {places}",
    "follow": "- follow: 誰かについて行く。target は次の人のIDのどれか: {people}",
    "look_at": "- look_at: 誰かの方を見る。target は follow と同じ人のID",
    "give": "- give: 誰かに物を渡す。target は渡す相手の人のID（follow と同じ）、item は渡す物を短い言葉で",
    "gesture": "- gesture: しぐさをする。target は次のどれか: {gestures}",
    "end_conversation": "- end_conversation: 会話を終えて立ち去る。target はなし",
    "sep": "、",
}
_EN = {
    "head": f"Actions: the reply's actions may hold up to {MAX_ACTIONS} things you really do along with this "
    "line. Add one only when the line involves doing something (going somewhere, handing something over, a "
    "gesture); otherwise leave actions empty.",
    "go_to": "- go_to: walk to a place. target is one of these place ids: {places}",
    "follow": "- follow: walk along with someone. target is one of these person ids: {people}",
    "look_at": "- look_at: turn to look at someone. target is a person id, as for follow",
    "give": "- give: hand something to someone. target is the recipient's person id (as for follow); item is "
    "what you hand over, in a few words",
    "gesture": "- gesture: make a gesture. target is one of: {gestures}",
    "end_conversation": "- end_conversation: end the conversation and leave. no target",
    "sep": ", ",
}


def describe_actions(
    language: str,
    *,
    pois: Sequence[tuple[str, str]],
    gestures: Sequence[str],
    people: Sequence[tuple[str, str]],
) -> str:
    """The prompt lines offering the speaker its actions, one a line.

    Args:
        language: the speaker's language ("ja"; anything starting with "en" is English).
        pois: (id, name) of the places the speaker may go to.
        gestures: the world's gesture names.
        people: (id, display name) of those the speaker may follow, look at or give to (not itself; a player's
            id keeps its `player:` prefix).

    Returns:
        The lines, without the types that have nothing to name (no places: no go_to line).
    """
    key = "en" if language.lower().startswith("en") else "ja"
    words = _EN if key == "en" else _JA
    sep = words["sep"]
    named = {
        "places": sep.join(_with_name(poi_id, name, key) for poi_id, name in pois),
        "people": sep.join(_with_name(person_id, name, key) for person_id, name in people),
        "gestures": sep.join(_with_name(g, GESTURE_WORDS[key].get(g, g), key) for g in gestures),
    }
    needs = {"go_to": pois, "follow": people, "look_at": people, "give": people, "gesture": gestures}
    lines = [words["head"]]
    for kind in ("go_to", "follow", "look_at", "give", "gesture", "end_conversation"):
        if kind in needs and not needs[kind]:
            continue
        lines.append(words[kind].format(**named))
    return "\n".join(lines)


def _with_name(item_id: str, name: str, key: str) -> str:
    if not name or name == item_id:
        return item_id
    return f"{item_id}（{name}）" if key == "ja" else f"{item_id} ({name})"
