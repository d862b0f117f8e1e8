"""`machi council "topic" [--rounds N] [--members a,b,c]`: hold a council in-process and print its record.

It builds the same app the server runs (database, model, memory, demo world) without serving HTTP, so the
council uses the configured database and model and its members remember it. It skips the start-up crash
recovery: a server may be running on the same database, and its councils are not this command's to fail.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from pydantic import ValidationError

from backend.config import Settings
from backend.council.record import render_record
from backend.council.schemas import MAX_ROUNDS, MIN_ROUNDS, CouncilCreate
from backend.errors import MachiError
from backend.world.models import DEFAULT_WORLD


def register(subparsers: Any) -> None:
    """Add `machi council` to the CLI."""
    council = subparsers.add_parser("council", help="hold a council on a topic and print its decision record")
    council.add_argument("topic", help="the proposal's title")
    council.add_argument("--rounds", type=int, default=2, help=f"{MIN_ROUNDS}-{MAX_ROUNDS} (default 2)")
    council.add_argument("--members", help="comma-separated agent ids (default: the world's council)")
    council.add_argument("--moderator", help="agent id of the moderator (default: the council's moderator)")
    council.add_argument("--background", default="", help="why the proposal is made")
    council.add_argument("--effects", default="", help="what it is expected to change")
    council.add_argument("--category", help="a category for the record")
    council.add_argument("--proposer", help="who proposes it")
    council.add_argument("--language", choices=("ja", "en"), help="default: the moderator's language")
    council.add_argument("--world", default=DEFAULT_WORLD, help="world id (default: default)")
    council.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    council.set_defaults(func=_council)


def _request(args: argparse.Namespace) -> CouncilCreate:
    members = [m.strip() for m in args.members.split(",") if m.strip()] if args.members else None
    return CouncilCreate(
        title=args.topic,
        background=args.background,
        expected_effects=args.effects,
        category=args.category,
        proposer=args.proposer,
        members=members,
        moderator=args.moderator,
        rounds=args.rounds,
        language=args.language,
    )


def _council(args: argparse.Namespace, settings: Settings) -> int:
    try:
        request = _request(args)
    except ValidationError as exc:
        for error in exc.errors():
            field = ".".join(str(p) for p in error["loc"]) or "input"
            print(f"error: {field}: {error['msg']}", file=sys.stderr)
        return 2
    return asyncio.run(_hold(request, args, settings))


async def _hold(request: CouncilCreate, args: argparse.Namespace, settings: Settings) -> int:
    from backend.app import create_app
    from backend.council.service import create_council, flight_name, new_council_id, run_council

    app = create_app(settings)
    app.state.recover_councils = False
    async with app.router.lifespan_context(app):
        state, council_id = app.state, new_council_id()
        # Held from before it is stored, so a server's recovery never takes it for an interrupted council.
        async with state.flights.hold(flight_name(council_id)):
            try:
                row = await asyncio.to_thread(create_council, state.engine, args.world, request, council_id)
            except MachiError as exc:
                print(f"error: {exc.message}", file=sys.stderr)
                return 2
            progress = None if args.quiet else _Progress()
            row = await run_council(state.engine, state.llm, row.id, memory=state.memory, on_update=progress)
        await state.tasks.drain(timeout=60)  # e.g. importance ratings of the members' new memories
    sys.stdout.write(render_record(row))
    return 0 if row.status == "done" else 1


class _Progress:
    """Prints a line on stderr each time the council moves to a new stage."""

    def __init__(self) -> None:
        self.last: str | None = None

    def __call__(self, update: dict[str, Any]) -> None:
        if update["stage"] != self.last:
            self.last = update["stage"]
            print(f"[No.{update['number']:03d}] {update['status']}: {update['stage']}", file=sys.stderr)
