"""`machi world export FILE | import FILE | reset | load NAME | generate --agents N`: save, restore, reset a
world, or make a seeded town of any size, from the shell.

Run these while the server is stopped (or restart it afterwards): a running server keeps cached memory
matrices that an import from another process cannot invalidate.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import IO, Any

from backend.config import Settings
from backend.errors import ConfigError, MachiError, NotFound
from backend.ids import id_problem
from backend.memory.relationship import relationship_density
from backend.storage.db import create_db_engine, init_db, session_scope
from backend.storage.lock import hold_database
from backend.transfer import demo
from backend.transfer import service as transfer
from backend.transfer.generate import MAX_AGENTS, generate_town
from backend.world.models import DEFAULT_WORLD


def world_id(value: str) -> str:
    """An argparse type: a world id by the API's rule (backend/ids.py), or a usage error saying why."""
    problem = id_problem(value)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return value


def register(subparsers: Any) -> None:
    """Add `machi world ...` to the CLI."""
    world = subparsers.add_parser("world", help="export, import, reset, load or generate a world")
    sub = world.add_subparsers(dest="world_command", required=True)
    export = sub.add_parser("export", help="write a world to a JSON file ('-' for stdout)")
    export.add_argument("file")
    export.add_argument("--world", type=world_id, default=DEFAULT_WORLD, help="world id (default: default)")
    export.set_defaults(func=_export)
    load = sub.add_parser("import", help="replace a world with a JSON file's contents")
    load.add_argument("file")
    load.add_argument("--world", type=world_id, help="target world id (default: the id saved in the file)")
    load.set_defaults(func=_import)
    reset = sub.add_parser("reset", help="wipe a world and load the demo world into it")
    reset.add_argument("--world", type=world_id, default=DEFAULT_WORLD, help="world id (default: default)")
    reset.set_defaults(func=_reset)
    town = sub.add_parser("load", help="wipe a world and load a bundled town into it (demo, town25, ...)")
    town.add_argument("name", help="the bundled town's name")
    town.add_argument("--world", type=world_id, default=DEFAULT_WORLD, help="world id (default: default)")
    town.set_defaults(func=_load)
    _register_generate(sub)


def _register_generate(sub: Any) -> None:
    generate = sub.add_parser(
        "generate", help="make a seeded town of N agents: write its JSON (a bundled-town file), or --load it"
    )
    generate.add_argument("--agents", type=agent_count, required=True, help=f"agents, 1-{MAX_AGENTS}")
    generate.add_argument("--seed", type=int, default=1, help="same seed, same town (default: 1)")
    generate.add_argument("--language", choices=("ja", "en", "mixed"), default="ja", help="default: ja")
    where = generate.add_mutually_exclusive_group()
    where.add_argument("--out", default="-", metavar="FILE", help="write the town here (default: -, stdout)")
    where.add_argument("--load", type=world_id, metavar="WORLD", help="wipe WORLD and load the town instead")
    generate.set_defaults(func=_generate)


def agent_count(value: str) -> int:
    """An argparse type: the number of agents of a generated town, 1 to MAX_AGENTS."""
    try:
        count = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if not 1 <= count <= MAX_AGENTS:
        raise argparse.ArgumentTypeError(f"a town has 1-{MAX_AGENTS} agents, not {count}")
    return count


def _engine(settings: Settings) -> Any:
    engine = create_db_engine(settings.database_url)
    init_db(engine)
    return engine


def _export(args: argparse.Namespace, settings: Settings) -> int:
    with session_scope(_engine(settings)) as session:
        doc = transfer.export_world(session, args.world)
    text = json.dumps(doc, ensure_ascii=False, indent=1)
    if args.file == "-":
        sys.stdout.write(text + "\n")
    else:
        Path(args.file).write_text(text, encoding="utf-8")
        counts = ", ".join(f"{len(doc[name])} {name}" for name in transfer.SECTIONS)
        print(f"exported world {args.world!r} to {args.file}: {counts}")
    return 0


def _import(args: argparse.Namespace, settings: Settings) -> int:
    """Read the file as a stream (checked whole first, then inserted in batches): memory does not grow with
    the file. The database is taken first, so a running server refuses the import before the file is read."""
    try:
        with (
            hold_database(settings.database_url, role="world import"),
            open(args.file, "rb") as source,
        ):
            return _import_from(source, args, settings)
    except OSError as exc:
        print(f"cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    except ConfigError:
        raise  # a server holds the database: `machi` says so
    except MachiError as exc:  # a bad document (422) or not JSON at all (400)
        print(f"not imported: {exc.message}", file=sys.stderr)
        return 2


def _import_from(source: IO[bytes], args: argparse.Namespace, settings: Settings) -> int:
    checked = transfer.check_stream(source)
    target = args.world or checked.world_id or DEFAULT_WORLD
    problem = id_problem(str(target))
    if problem is not None:
        print(f"not imported: the file's world_id {problem}; choose one with --world", file=sys.stderr)
        return 2
    with session_scope(_engine(settings)) as session:
        counts = transfer.import_stream(session, target, source, checked)
    print(f"imported {args.file} into world {target!r}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return 0


def _reset(args: argparse.Namespace, settings: Settings) -> int:
    with (
        hold_database(settings.database_url, role="world reset"),
        session_scope(_engine(settings)) as session,
    ):
        counts = transfer.reset_world(session, args.world)
    print(f"world {args.world!r} reset to the demo world: {counts['agents']} agents, {counts['pois']} places")
    return 0


def _load(args: argparse.Namespace, settings: Settings) -> int:
    try:
        demo.bundled_town(args.name)  # an unknown name is refused before the database is touched
    except NotFound as exc:
        print(f"not loaded: {exc.message}", file=sys.stderr)
        return 2
    with (
        hold_database(settings.database_url, role="world load"),
        session_scope(_engine(settings)) as session,
    ):
        counts = transfer.reset_world(session, args.world, args.name)
        density = relationship_density(session, args.world)
    print(
        f"world {args.world!r} loaded with {args.name!r}: {counts['agents']} agents, {counts['pois']} places, "
        f"{counts['people']} relationships (density {density.value:.3f})"
    )
    return 0


def _generate(args: argparse.Namespace, settings: Settings) -> int:
    """The town passes the bundled-town checks (`demo.Town`) and, with --load, goes through the same
    wipe-and-load as `machi world load`; the summary goes to stderr, so stdout holds the JSON alone."""
    doc = generate_town(args.agents, seed=args.seed, language=args.language)
    town = demo.Town.model_validate(doc)
    made = f"--agents {args.agents} --seed {args.seed} --language {args.language}"
    counts = f"{len(town.agents)} agents, {len(town.pois)} places, {len(town.relationships)} relationships"
    if args.load is None:
        text = json.dumps(doc, ensure_ascii=False, indent=1) + "\n"
        try:
            if args.out == "-":
                sys.stdout.write(text)
            else:
                Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"cannot write {args.out}: {exc}", file=sys.stderr)
            return 2
        written = "stdout" if args.out == "-" else args.out
        print(f"generated town ({made}): {counts}, written to {written}", file=sys.stderr)
        return 0
    with (
        hold_database(settings.database_url, role="world generate"),
        session_scope(_engine(settings)) as session,
    ):
        transfer.reset_world(session, args.load, town)
        density = relationship_density(session, args.load)
    loaded = f"world {args.load!r} loaded with a generated town ({made})"
    print(f"{loaded}: {counts} (density {density.value:.3f})", file=sys.stderr)
    return 0
