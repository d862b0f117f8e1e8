"""What the Unity protocol tests need on the machine, and one line saying how to install what is missing.

The C# tests need Mono's `mcs` and `mono` and a Newtonsoft.Json.dll to compile against; the DTO test needs
quicktype at the pinned version. `.ci/unity-tools.sh` installs all of them on a fresh Debian machine.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from backend.protocol.codegen import QUICKTYPE_VERSION, find_quicktype, quicktype_version, tools_dir

#: Where a Newtonsoft.Json.dll is looked for, best first: $MACHI_NEWTONSOFT_DLL, then a 13.x from a NuGet
#: cache (the major Unity's com.unity.nuget.newtonsoft-json ships), then Debian's 6.0.8 (see .ci/unity-tools.sh).
NEWTONSOFT_GLOBS: tuple[str, ...] = (
    "~/.nuget/packages/newtonsoft.json/13.*/lib/net45/Newtonsoft.Json.dll",
    "/usr/lib/cli/Newtonsoft.Json*/Newtonsoft.Json.dll",
    "/usr/lib/mono/gac/Newtonsoft.Json/*/Newtonsoft.Json.dll",
)
CSHARP_NEEDS = ("mcs", "mono", "newtonsoft")
APT_PACKAGES = {
    "mcs": "mono-mcs",
    "mono": "mono-runtime",
    "Newtonsoft.Json.dll": "libnewtonsoft-json-cil-dev",
}


def find_newtonsoft(globs: Sequence[str] = NEWTONSOFT_GLOBS) -> Path | None:
    """The Newtonsoft.Json.dll the C# tests compile against, or None."""
    chosen = os.environ.get("MACHI_NEWTONSOFT_DLL")
    if chosen:
        return Path(chosen) if Path(chosen).is_file() else None
    for pattern in globs:
        found = sorted(
            glob.glob(os.path.expanduser(pattern)), reverse=True
        )  # the highest version (by name) first
        if found:
            return Path(found[0])
    return None


def _quicktype_problem(find: Callable[[], str | None]) -> str | None:
    executable = find()
    if executable is None:
        return "quicktype"
    try:
        version = quicktype_version(executable)
    except (OSError, subprocess.SubprocessError):
        version = f"{executable}, which does not run: is node on PATH?"
    return None if version == QUICKTYPE_VERSION else f"quicktype {QUICKTYPE_VERSION} (found {version})"


def missing_tools(
    needs: Iterable[str],
    *,
    path: str | None = None,
    newtonsoft_globs: Sequence[str] = NEWTONSOFT_GLOBS,
    quicktype: Callable[[], str | None] = find_quicktype,
) -> list[str]:
    """The needed tools (`mcs`, `mono`, `newtonsoft`, `quicktype`) that this machine lacks.

    Args:
        needs: the tools a test uses.
        path: the PATH to look executables up in (default: the environment's).
        newtonsoft_globs: where to look for Newtonsoft.Json.dll.
        quicktype: finds the quicktype executable (its version is checked against the pinned one).

    Returns:
        What is missing, as `install_line` takes it; empty when the test can run.

    Raises:
        ValueError: an unknown tool name.
    """
    problems = [_problem(need, path, newtonsoft_globs, quicktype) for need in needs]
    return [problem for problem in problems if problem]


def _problem(
    need: str, path: str | None, globs: Sequence[str], quicktype: Callable[[], str | None]
) -> str | None:
    if need in ("mcs", "mono"):
        return None if shutil.which(need, path=path) else need
    if need == "newtonsoft":
        return None if find_newtonsoft(globs) else "Newtonsoft.Json.dll"
    if need == "quicktype":
        return _quicktype_problem(quicktype)
    raise ValueError(f"unknown tool {need!r}")


def install_line(missing: Sequence[str]) -> str:
    """One line: what is missing and the commands that install it (or the CI script that does all)."""
    packages = [APT_PACKAGES[m] for m in missing if m in APT_PACKAGES]
    steps = [f"apt-get install -y {' '.join(packages)}"] if packages else []
    if any(m.startswith("quicktype") for m in missing):
        steps.append(f"npm install --prefix {tools_dir() / 'quicktype'} quicktype@{QUICKTYPE_VERSION}")
    return f"missing {', '.join(missing)}: {' && '.join(steps)} (or run .ci/unity-tools.sh; CI does)"
