"""The reply's actions as the grammar offers them: each type's target an enum of the ids the prompt lists.

A small model asked for "the id of a place" writes a sentence there; under a grammar (llama.cpp, Ollama's
`format`, OpenAI's strict mode) an enum leaves it nothing else to write than an offered id. One model per set
of ids (`ActionTargets`), cached, so a speaker's every turn in one place reuses its schema and grammar.

Only the schema is strict: the reply's `actions` still validate as lenient `ActionChoice`s, so a provider
that ignores the schema keeps its line and `validate.py` drops what does not fit the world, with a reason.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    PlainSerializer,
    TypeAdapter,
    ValidatorFunctionWrapHandler,
    WrapValidator,
    create_model,
)
from pydantic.json_schema import JsonDict

from backend.action.schemas import MAX_ACTIONS, MAX_ITEM_CHARS, ActionChoices
from backend.world.facts import WorldFacts

#: Distinct sets of ids whose reply models are kept (a world's places and gestures times the pairs talking).
MODELS_KEPT = 256


@dataclass(frozen=True)
class ActionTargets:
    """What the actions of one turn may name: the ids the prompt offers, in its order."""

    places: tuple[str, ...]
    people: tuple[str, ...]
    gestures: tuple[str, ...]


def offered_targets(
    facts: WorldFacts, people: Iterable[str], places: Iterable[str] | None = None
) -> ActionTargets:
    """`places` (those the prompt offers: world/nearby.py; default every place of the world), the world's
    gestures, and `people` (the others in the conversation, not the speaker)."""
    offered = tuple(places) if places is not None else tuple(facts.pois)
    return ActionTargets(offered, tuple(people), tuple(facts.gestures))


def _enum(schema: JsonDict) -> None:
    # One type is a `const` to pydantic; every structured-output dialect takes a one-value enum.
    if "const" in schema:
        schema["enum"] = [schema.pop("const")]


def _target(schema: JsonDict) -> None:
    _enum(schema)
    schema["echo_check"] = False  # copying an offered id is the answer (llm/echo.py)


def _ids(values: tuple[str, ...]) -> Any:
    return Literal[values]  # a Literal of the ids: an enum in the schema, refused otherwise


def _variant(name: str, kinds: tuple[str, ...], ids: tuple[str, ...] | None, item: bool = False) -> type:
    """One action shape: its type(s), its target an enum of `ids` (None: no target), and an item for give."""
    fields: dict[str, Any] = {
        "type": (_ids(kinds), Field(description="What to do.", json_schema_extra=_enum))
    }
    if ids is not None:
        fields["target"] = (_ids(ids), Field(description="The id it is about.", json_schema_extra=_target))
    if item:
        fields["item"] = (
            str,
            Field(min_length=1, max_length=MAX_ITEM_CHARS, description="What is handed over."),
        )
    model: type = create_model(
        name,
        __config__=ConfigDict(extra="forbid"),
        __doc__=f"{' or '.join(kinds)}: what the speaker does with this line.",
        **fields,
    )
    return model


@functools.lru_cache(maxsize=MODELS_KEPT)
def action_choice_for(targets: ActionTargets) -> Any:
    """The union of the action shapes `targets` allows (a type with nothing to name is left out): each
    target a Literal of the offered ids, so pydantic refuses, and a grammar cannot write, anything else."""
    variants: list[type] = []
    if targets.places:
        variants.append(_variant("GoTo", ("go_to",), targets.places))
    if targets.people:
        variants.append(_variant("ToPerson", ("follow", "look_at"), targets.people))
        variants.append(_variant("Give", ("give",), targets.people, item=True))
    if targets.gestures:
        variants.append(_variant("Gesture", ("gesture",), targets.gestures))
    variants.append(_variant("EndConversation", ("end_conversation",), None))
    union: Any = variants[0]
    for variant in variants[1:]:
        union = union | variant
    return union


_LENIENT: TypeAdapter[Any] = TypeAdapter(ActionChoices)


def _lenient(value: Any, _strict: ValidatorFunctionWrapHandler) -> Any:
    # The strict union is the schema's; the reply keeps the kinder ActionChoice list (module docstring).
    return _LENIENT.validate_python(value)


def _dumped(value: list[Any]) -> list[Any]:
    # What was validated is the lenient list: dumped as it is, not as the schema's shapes.
    return _LENIENT.dump_python(value)


@functools.lru_cache(maxsize=MODELS_KEPT)
def actions_field_for(targets: ActionTargets) -> Any:
    """A reply model's `actions` annotation for `targets`: at most MAX_ACTIONS of `action_choice_for`'s
    shapes in the schema, validated as lenient `ActionChoice`s."""
    return Annotated[
        list[action_choice_for(targets)],  # type: ignore[misc]
        WrapValidator(_lenient),
        PlainSerializer(_dumped),
        Field(
            description=f"At most {MAX_ACTIONS} things the speaker does with this line; empty unless the line "
            "really involves doing something.",
            json_schema_extra={"maxItems": MAX_ACTIONS},  # a longer list is validate.py's to cut
        ),
    ]
