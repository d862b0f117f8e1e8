"""Player request and reply shapes."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field

from backend.body import RequestBody
from backend.text import one_line


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value.strip()


class PlayerUpsert(RequestBody):
    """A visitor as Unity registers them (PUT /v1/players/{player_id})."""

    display_name: Annotated[str, AfterValidator(one_line), AfterValidator(_not_blank)] = Field(
        min_length=1,
        max_length=64,
        description=(
            "How the characters call the visitor (shown, quoted, in prompts, memories and the dashboard): "
            "1-24 characters of letters (any script), digits, spaces and ・ ー - _ . ' &; not a character's "
            "name in the world, and nothing moderation holds back (else a 422 naming display_name)."
        ),
    )
    language: Literal["ja", "en"] | None = Field(
        None, description="The visitor's language; unset: the character speaks its own."
    )


class PlayerPublic(BaseModel):
    id: str = Field(description="`player:` and the id Unity chose.")
    display_name: str
    language: str | None
    registered: bool
    lines: int = Field(description="Lines the visitor has said in this world.")
    created_at: datetime
    last_seen_at: datetime


class PlayerList(BaseModel):
    players: list[PlayerPublic]
