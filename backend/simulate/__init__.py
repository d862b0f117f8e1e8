"""`machi simulate`: the headless stand-in world (unity_protocol/python) driving a real server over HTTP.

Owns: no tables; a simulation run's scenario, scripted visitors and summary (it talks to the server over HTTP
like Unity).
Imports: anything (an entry point at the top): app to start a server in process, config, world (demo towns).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

CLIENT_DIR = Path(__file__).resolve().parents[2] / "unity_protocol" / "python"


def load_client_package() -> ModuleType:
    """Import `machi_client` (the reference client), from the repository when it is not installed.

    It lives in unity_protocol/python/ so Unity-side developers can copy or pip-install it on its own;
    the server's own command reuses it instead of keeping a second copy.
    """
    try:
        return importlib.import_module("machi_client")
    except ModuleNotFoundError:
        if not CLIENT_DIR.is_dir():
            raise
        sys.path.insert(0, str(CLIENT_DIR))
        return importlib.import_module("machi_client")
