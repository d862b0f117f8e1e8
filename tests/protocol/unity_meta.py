"""The Unity package's `.meta` files: Unity ignores every asset without one in a package installed from git
("has no meta file, but it's in an immutable folder"), so each file and folder it imports ships one.

`python -m tests.protocol.unity_meta` writes the missing ones (stable GUIDs derived from the path), e.g. after
adding a `.cs` file; tests/protocol/test_unity_package.py fails until it is run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "unity_protocol" / "csharp"
IMPORTERS = {
    ".cs": "MonoImporter:\n  externalObjects: {}\n  serializedVersion: 2\n  defaultReferences: []\n"
    "  executionOrder: 0\n  icon: {instanceID: 0}\n",
    ".asmdef": "AssemblyDefinitionImporter:\n  externalObjects: {}\n",
    ".json": "PackageManifestImporter:\n  externalObjects: {}\n",
    ".md": "TextScriptImporter:\n  externalObjects: {}\n",
}
DEFAULT_IMPORTER = "DefaultImporter:\n  externalObjects: {}\n"
TAIL = "  userData:\n  assetBundleName:\n  assetBundleVariant:\n"


def imported(path: Path) -> bool:
    """Whether Unity imports this path: not hidden, not a `~` folder's (Samples~), not a .meta itself."""
    parts = path.relative_to(PACKAGE).parts
    return path.suffix != ".meta" and not any(p.startswith(".") or p.endswith("~") for p in parts)


def assets(package: Path = PACKAGE) -> list[Path]:
    """Every file and folder of the package that Unity imports (so needs a .meta)."""
    return sorted(p for p in package.rglob("*") if imported(p))


def meta_text(asset: Path, package: Path = PACKAGE) -> str:
    """A Unity .meta for `asset`, its GUID derived from its path in the package (the same on every run)."""
    relative = asset.relative_to(package).as_posix()
    guid = hashlib.md5(f"com.machi.client/{relative}".encode()).hexdigest()
    if asset.is_dir():
        return f"fileFormatVersion: 2\nguid: {guid}\nfolderAsset: yes\n{DEFAULT_IMPORTER}{TAIL}"
    return f"fileFormatVersion: 2\nguid: {guid}\n{IMPORTERS.get(asset.suffix, DEFAULT_IMPORTER)}{TAIL}"


def write_missing(package: Path = PACKAGE) -> list[Path]:
    """Write a .meta beside each asset that lacks one; returns the files written."""
    written = []
    for asset in assets(package):
        meta = asset.with_name(asset.name + ".meta")
        if not meta.exists():
            meta.write_text(meta_text(asset, package), encoding="utf-8")
            written.append(meta)
    return written


if __name__ == "__main__":
    for path in write_missing():
        print(f"wrote {path.relative_to(PACKAGE.parents[1])}")
