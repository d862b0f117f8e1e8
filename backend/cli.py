"""The `machi` command: `machi serve`, and subcommands contributed by each concept."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from pydantic import ValidationError

from backend.config import Settings, describe_settings_error, load_settings
from backend.errors import ConfigError
from backend.logs import configure_logging

#: Modules that add subcommands: each defines `register(subparsers) -> None`, and every subparser it adds
#: sets `func=callable(args, settings) -> int` via `set_defaults`.
COMMAND_MODULES: tuple[str, ...] = (
    "backend.transfer.cli",
    "backend.storage.cli",
    "backend.council.cli",
    "backend.protocol.cli",
    "backend.simulate.cli",
    "backend.simulate.scenario_cli",
    "backend.intention.cli",
    "backend.interview.cli",
)


#: Seconds open requests may still take after SIGTERM before they are cancelled.
SHUTDOWN_GRACE_S = 3


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from backend.security.connection import raise_open_files, uvicorn_limits

    host = args.host or settings.machi_host
    port = args.port or settings.machi_port
    limits = uvicorn_limits(settings)
    raise_open_files()  # every connection is a file descriptor: a soft limit of 1024 runs out at a flood
    if args.reload:
        # The reloader pickles its options for a child process, and the guarded protocol class is built per
        # setting: development runs without the head deadline (the body deadline is the app's own).
        del limits["http"]
        uvicorn.run("backend.app:create_app", factory=True, host=host, port=port, reload=True, **limits)
        return 0
    from backend.app import create_app
    from backend.llm.registry import build_provider, check_dependencies
    from backend.storage.lock import hold_database

    # Taken here as well as in the app's start-up, so a second server is refused with one line, not a
    # traceback from inside uvicorn (with --reload the server process takes it itself).
    with hold_database(settings.database_url, role="server", shared=True):
        # Built before uvicorn starts, so a model it cannot load is one config-error line, not a traceback.
        check_dependencies(settings)
        provider = build_provider(settings)
        # On SIGTERM open requests get SHUTDOWN_GRACE_S, then are cancelled (a model call stops at its next
        # token); uvicorn's default waits for them however long the model takes.
        uvicorn.run(
            create_app(settings, llm=provider),
            host=host,
            port=port,
            log_level=settings.log_level,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
            **limits,  # slow and idle clients: backend/security/connection.py
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="machi", description="Minds for the characters of a Unity world.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP server")
    serve.add_argument("--host", help="address to bind (default MACHI_HOST, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default MACHI_PORT, 8000)")
    serve.add_argument("--reload", action="store_true", help="restart on code changes (development)")
    serve.set_defaults(func=_serve)
    for module in COMMAND_MODULES:
        importlib.import_module(module).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
    except ValidationError as exc:
        print(describe_settings_error(exc), file=sys.stderr)
        return 2
    configure_logging(settings.log_level)
    try:
        result: int = args.func(args, settings)
    except ConfigError as exc:  # a missing extra or an unloadable model file: one line, not a traceback
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    return result


if __name__ == "__main__":
    sys.exit(main())
