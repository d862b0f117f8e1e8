"""The base of every request body: a key that spells a field another way (`agentId`, `AgentId`) is a 422.

Machi's JSON keys are snake_case. C# code written by hand serializes its own names (JsonUtility writes field
names as declared, Newtonsoft property names), and pydantic ignores a key it does not know: the value was lost
without a word, or the request was told a field it did send is missing. `RequestBody` refuses such a key,
naming it (the error's field) and the key it stands for. Other unknown keys are left to each model
(`extra="forbid"` where a typo must not pass).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError


def _squashed(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def misspelt_keys(data: dict[Any, Any], fields: dict[str, Any]) -> list[tuple[str, str]]:
    """(key sent, field meant) for each key of `data` that is not a field but spells one in another case."""
    meant = {_squashed(name): name for name in fields}
    return [
        (key, meant[_squashed(key)])
        for key in data
        if isinstance(key, str) and key not in fields and _squashed(key) in meant
    ]


class RequestBody(BaseModel):
    """A request body: keys are snake_case, and a camelCase (or PascalCase) spelling of a field is refused."""

    @model_validator(mode="before")
    @classmethod
    def _snake_case_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        wrong = misspelt_keys(data, cls.model_fields)
        if wrong:
            raise ValidationError.from_exception_data(
                cls.__name__,
                [
                    InitErrorDetails(
                        type=PydanticCustomError(
                            "snake_case_key",
                            "keys are snake_case: send '{field}', not '{key}' (in C#, name it with "
                            '[JsonProperty("{field}")], or use the Machi.Protocol classes)',
                            {"key": key, "field": field},
                        ),
                        loc=(key,),
                        input=data[key],
                    )
                    for key, field in wrong
                ],
            )
        return data
