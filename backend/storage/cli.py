"""`machi db vacuum`: prune what the retention settings no longer keep, then give the space back.

Run it while the server is stopped: it takes the database's server lock (refused, naming the holder, while a
server runs), since VACUUM rewrites the whole file and would stall a running town meanwhile.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from backend.app import retention_rules
from backend.config import Settings
from backend.storage import retention
from backend.storage.db import create_db_engine, init_db
from backend.storage.lock import hold_database


def register(subparsers: Any) -> None:
    """Add `machi db ...` to the CLI."""
    db = subparsers.add_parser("db", help="database upkeep")
    sub = db.add_subparsers(dest="db_command", required=True)
    vacuum = sub.add_parser(
        "vacuum",
        help="prune old LLM call traces and finished jobs now (the retention settings), then VACUUM",
    )
    vacuum.set_defaults(func=_vacuum)


def _vacuum(args: argparse.Namespace, settings: Settings) -> int:
    with hold_database(settings.database_url, role="db vacuum"):
        engine = create_db_engine(settings.database_url)
        try:
            init_db(engine)
            before = _size(settings.database_url)
            gone = retention.prune_now(engine, retention_rules(settings))
            retention.vacuum(engine)
            after = _size(settings.database_url)
        finally:
            engine.dispose()
    pruned = ", ".join(f"{name}: {n}" for name, n in gone.items())
    sizes = (
        f": {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB" if before is not None and after is not None else ""
    )
    print(f"pruned {pruned}; vacuumed{sizes}")
    return 0


def _size(url: str) -> int | None:
    """Bytes of a SQLite database file and its WAL; None for PostgreSQL (the server tells, not the file)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:":
        return None
    path = Path(parsed.database).expanduser()
    files = (path, path.with_name(path.name + "-wal"))
    return sum(f.stat().st_size for f in files if f.exists())
