"""The `machi` command: `machi serve`, `machi worker`, and subcommands contributed by each concept."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any

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


log = logging.getLogger("machi")

#: Seconds open requests may still take after SIGTERM before they are cancelled.
SHUTDOWN_GRACE_S = 3


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    """`machi serve`: the API process(es) and, unless told otherwise, one worker process beside them."""
    from backend.security.connection import raise_open_files

    raise_open_files()  # every connection is a file descriptor: a soft limit of 1024 runs out at a flood
    if args.reload:
        return _serve_reloading(args, settings)
    single = args.workers == 0 or settings.llm_provider == "llamacpp"
    if single and args.workers > 1:  # asked for several API processes: say why there is one
        log.warning("llamacpp runs the model inside the process: one process serves HTTP and runs the jobs")
    role = "all" if single else "api"
    os.environ["PROCESS_ROLE"] = role  # uvicorn's worker processes build their settings from the environment
    settings = settings.model_copy(update={"process_role": role})
    worker = None if single or args.no_worker else WorkerProcess()
    from backend.storage.lock import hold_database

    # Taken here as well as in the app's start-up, so a command holding the database alone (a world import)
    # refuses this server with one line, not a traceback from inside uvicorn.
    with hold_database(settings.database_url, role="server", shared=True):
        if worker is not None:
            worker.start()
        try:
            _run_uvicorn(args, settings, processes=max(1, args.workers))
        finally:
            if worker is not None:
                worker.stop()
    return 0


def _serve_reloading(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from backend.security.connection import uvicorn_options

    # The reloader pickles its options for a child process, and the guarded protocol class is built per
    # setting: development runs without the head deadline (the body deadline is the app's own). One process
    # does everything (PROCESS_ROLE=all), so a code change reloads the jobs too.
    options = uvicorn_options(settings)
    del options["http"]
    os.environ["PROCESS_ROLE"] = "all"
    host, port = args.host or settings.machi_host, args.port or settings.machi_port
    uvicorn.run("backend.app:create_app", factory=True, host=host, port=port, reload=True, **options)
    return 0


def _run_uvicorn(args: argparse.Namespace, settings: Settings, *, processes: int) -> None:
    import uvicorn

    from backend.app import create_app
    from backend.llm.registry import build_provider, check_dependencies
    from backend.security.connection import uvicorn_options

    host, port = args.host or settings.machi_host, args.port or settings.machi_port
    # On SIGTERM open requests get SHUTDOWN_GRACE_S, then are cancelled (a model call stops at its next
    # token); uvicorn's default waits for them however long the model takes.
    common: dict[str, Any] = {
        "host": host,
        "port": port,
        "log_level": settings.log_level,
        "timeout_graceful_shutdown": SHUTDOWN_GRACE_S,
        **uvicorn_options(settings),  # slow and idle clients, proxy headers: backend/security/connection.py
    }
    # Built before uvicorn starts, so a model it cannot load is one config-error line, not a traceback.
    check_dependencies(settings)
    provider = build_provider(settings)
    if processes == 1:
        uvicorn.run(create_app(settings, llm=provider), **common)
        return
    # Several API processes share the port (uvicorn's supervisor); each builds its app from the environment.
    from backend.security.connection import PROTOCOL_FROM_ENVIRONMENT

    common["http"] = PROTOCOL_FROM_ENVIRONMENT
    uvicorn.run("backend.app:create_app", factory=True, workers=processes, **common)


class WorkerProcess:
    """The `machi worker` child of `machi serve`, restarted if it dies (a crash, the OOM killer)."""

    RESTART_DELAY_S = 1.0

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()
        self._watch: threading.Thread | None = None

    def start(self) -> None:
        self._spawn()
        self._watch = threading.Thread(target=self._keep_alive, name="machi-worker-watch", daemon=True)
        self._watch.start()

    def _spawn(self) -> None:
        # MACHI_PARENT_PID: the worker ends when this process is gone, however it ended (uvicorn re-raises
        # SIGTERM after its shutdown, so no `finally` here runs; a kill -9 runs nothing either).
        env = {**os.environ, "PROCESS_ROLE": "worker", "MACHI_PARENT_PID": str(os.getpid())}
        self.proc = subprocess.Popen([sys.executable, "-m", "backend.cli", "worker"], env=env)

    def _keep_alive(self) -> None:
        while not self._stopping.is_set():
            assert self.proc is not None
            code = self.proc.wait()
            if self._stopping.is_set():
                return
            log.error("the worker process exited (%s): starting another", code)
            if self._stopping.wait(self.RESTART_DELAY_S):
                return
            self._spawn()

    def stop(self, timeout: float = 15.0) -> None:
        self._stopping.set()
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def _until_gone(parent_pid: int, stop: asyncio.Event, every_s: float = 1.0) -> None:
    """Set `stop` once the process that started this one has ended (this one is then adopted)."""
    while os.getppid() == parent_pid:
        await asyncio.sleep(every_s)
    log.info("the machi serve process %d is gone: the worker stops", parent_pid)
    stop.set()


def _worker(args: argparse.Namespace, settings: Settings) -> int:
    """`machi worker`: background jobs only (PROCESS_ROLE=worker), no HTTP, until SIGTERM or Ctrl-C."""
    from backend.app import create_app

    settings = settings.model_copy(update={"process_role": "worker"})
    app = create_app(settings)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):  # Windows: Ctrl-C raises KeyboardInterrupt
                loop.add_signal_handler(signum, stop.set)
        parent = os.environ.get("MACHI_PARENT_PID")
        watch = asyncio.create_task(_until_gone(int(parent), stop)) if parent else None
        async with app.router.lifespan_context(app):
            log.info("worker ready: running background jobs (JOB_WORKERS=%d)", settings.job_workers)
            await stop.wait()
        if watch is not None:
            watch.cancel()
        log.info("worker stopped")

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="machi", description="Minds for the characters of a Unity world.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP server")
    serve.add_argument("--host", help="address to bind (default MACHI_HOST, 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default MACHI_PORT, 8000)")
    serve.add_argument("--reload", action="store_true", help="restart on code changes (development)")
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="API processes sharing the port (default 1); 0: one process serves HTTP and runs the jobs",
    )
    serve.add_argument(
        "--no-worker",
        action="store_true",
        help="start no worker process beside the API processes (`machi worker` runs elsewhere)",
    )
    serve.set_defaults(func=_serve)
    worker = sub.add_parser("worker", help="run background jobs only, no HTTP (any number, on one database)")
    worker.set_defaults(func=_worker)
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
