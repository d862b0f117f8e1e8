"""C# DTOs from the exported schemas, with quicktype (npm) pinned to one version: one run over all schemas.

Install once: `npm install --prefix ~/.cache/machi-tools/quicktype quicktype@<QUICKTYPE_VERSION>`
(`.ci/unity-tools.sh` does it). The output is committed under `unity_protocol/csharp/Runtime/Generated/`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from backend.protocol.export import SUFFIX

QUICKTYPE_VERSION = "26.0.0"
NAMESPACE = "Machi.Protocol"
GENERATED_FILE = "MachiProtocol.g.cs"
#: Newtonsoft attributes, C# 6 (what Mono's mcs and Unity accept), List<T> so Unity code can append.
QUICKTYPE_ARGS = (
    "--src-lang", "schema",
    "--lang", "cs",
    "--framework", "NewtonSoft",
    "--namespace", NAMESPACE,
    "--csharp-version", "6",
    "--features", "complete",
    "--array-type", "list",
)  # fmt: skip


def tools_dir() -> Path:
    return Path(os.environ.get("MACHI_TOOLS_DIR", Path.home() / ".cache" / "machi-tools"))


def find_quicktype() -> str | None:
    """The quicktype executable: $MACHI_QUICKTYPE, the pinned install in the tools dir, or one on PATH."""
    candidates = [
        os.environ.get("MACHI_QUICKTYPE"),
        str(tools_dir() / "quicktype" / "node_modules" / ".bin" / "quicktype"),
        shutil.which("quicktype"),
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def quicktype_version(executable: str) -> str:
    result = subprocess.run(
        [executable, "--version"], capture_output=True, text=True, check=True, timeout=120
    )
    # "quicktype version 26.0.0"
    return result.stdout.split("version", 1)[-1].split()[0].strip()


def generate_csharp(schema_dir: Path, out_dir: Path, executable: str | None = None) -> Path:
    """Run quicktype once over every `*.schema.json` in `schema_dir`; returns the generated file.

    Raises:
        FileNotFoundError: quicktype is not installed.
        RuntimeError: quicktype is not the pinned version, or it failed (its stderr is in the message).
    """
    executable = executable or find_quicktype()
    if executable is None:
        raise FileNotFoundError(
            f"quicktype not found; npm install --prefix {tools_dir() / 'quicktype'} quicktype@{QUICKTYPE_VERSION}"
        )
    version = quicktype_version(executable)
    if version != QUICKTYPE_VERSION:
        raise RuntimeError(f"{executable} is quicktype {version}; the DTOs are pinned to {QUICKTYPE_VERSION}")
    schemas = sorted(str(path.name) for path in schema_dir.glob("*" + SUFFIX))
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / GENERATED_FILE
    command = [executable, *QUICKTYPE_ARGS, "--out", str(target), *schemas]
    # Run inside the schema folder: the schemas reference each other by relative file name.
    result = subprocess.run(command, cwd=schema_dir, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"quicktype failed ({result.returncode}): {result.stderr[-2000:]}")
    return target
