"""`machi protocol export [--out DIR] [--csharp]`: write the wire contract's JSON Schemas (and C# DTOs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from backend.config import Settings

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SCHEMA_DIR = REPO / "unity_protocol" / "schemas"
DEFAULT_CSHARP_DIR = REPO / "unity_protocol" / "csharp" / "Runtime" / "Generated"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    protocol = subparsers.add_parser("protocol", help="the Unity wire contract (JSON Schemas, C# DTOs)")
    actions = protocol.add_subparsers(dest="protocol_command", required=True)
    export = actions.add_parser("export", help="write a JSON Schema for every request, reply and event")
    export.add_argument(
        "--out", type=Path, default=DEFAULT_SCHEMA_DIR, help=f"(default {DEFAULT_SCHEMA_DIR})"
    )
    export.add_argument(
        "--csharp",
        type=Path,
        nargs="?",
        const=DEFAULT_CSHARP_DIR,
        help=f"also regenerate the C# DTOs with quicktype into this folder (default {DEFAULT_CSHARP_DIR})",
    )
    export.set_defaults(func=_export)
    readme = actions.add_parser("readme", help="rewrite unity_protocol/README.md with real replies")
    readme.add_argument("--out", type=Path, default=REPO / "unity_protocol" / "README.md")
    readme.set_defaults(func=_readme)


def _readme(args: argparse.Namespace, _settings: Settings) -> int:
    from backend.protocol.readme import render_readme

    args.out.write_text(render_readme(), encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _export(args: argparse.Namespace, _settings: Settings) -> int:
    from backend.protocol.codegen import generate_csharp
    from backend.protocol.export import write_export

    written = write_export(args.out)
    print(f"wrote {len(written)} files to {args.out}", file=sys.stderr)
    if args.csharp is not None:
        try:
            target = generate_csharp(args.out, args.csharp)
        except (FileNotFoundError, RuntimeError) as exc:
            print(f"C# generation failed: {exc}", file=sys.stderr)
            return 1
        print(f"wrote {target}", file=sys.stderr)
    return 0
