"""The gate of the C# and quicktype tests: it names exactly what is missing, so they skip instead of failing."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from backend.protocol.codegen import QUICKTYPE_VERSION
from tests.protocol.unity_tools import CSHARP_NEEDS, find_newtonsoft, install_line, missing_tools


def _executable(folder: Path, name: str, script: str = "exit 0") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _dll(root: Path) -> str:
    dll = root / "cli" / "Newtonsoft.Json-5.0" / "Newtonsoft.Json.dll"
    dll.parent.mkdir(parents=True)
    dll.write_bytes(b"MZ")
    return str(root / "cli" / "Newtonsoft.Json*" / "Newtonsoft.Json.dll")


@pytest.fixture(autouse=True)
def _no_chosen_dll(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MACHI_NEWTONSOFT_DLL", raising=False)


def test_mono_without_newtonsoft_is_reported_missing_with_its_debian_package(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _executable(bin_dir, "mcs")
    _executable(bin_dir, "mono")
    missing = missing_tools(
        CSHARP_NEEDS, path=str(bin_dir), newtonsoft_globs=[str(tmp_path / "none" / "*.dll")]
    )
    assert missing == ["Newtonsoft.Json.dll"]
    line = install_line(missing)
    assert "apt-get install -y libnewtonsoft-json-cil-dev" in line and "\n" not in line
    assert "mono-mcs" not in line  # only what is missing


def test_nothing_installed_names_every_package(tmp_path: Path) -> None:
    missing = missing_tools(CSHARP_NEEDS, path=str(tmp_path), newtonsoft_globs=[])
    assert missing == ["mcs", "mono", "Newtonsoft.Json.dll"]
    assert "apt-get install -y mono-mcs mono-runtime libnewtonsoft-json-cil-dev" in install_line(missing)


def test_everything_present_means_nothing_missing(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    _executable(bin_dir, "mcs")
    _executable(bin_dir, "mono")
    assert missing_tools(CSHARP_NEEDS, path=str(bin_dir), newtonsoft_globs=[_dll(tmp_path)]) == []


def test_a_chosen_dll_wins_and_a_missing_chosen_dll_counts_as_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = tmp_path / "13.0" / "Newtonsoft.Json.dll"
    chosen.parent.mkdir()
    chosen.write_bytes(b"MZ")
    debian = _dll(tmp_path)
    monkeypatch.setenv("MACHI_NEWTONSOFT_DLL", str(chosen))
    assert find_newtonsoft([debian]) == chosen
    monkeypatch.setenv("MACHI_NEWTONSOFT_DLL", str(tmp_path / "gone.dll"))
    assert missing_tools(["newtonsoft"], newtonsoft_globs=[debian]) == ["Newtonsoft.Json.dll"]


def test_quicktype_absent_or_at_another_version_is_missing(tmp_path: Path) -> None:
    assert missing_tools(["quicktype"], quicktype=lambda: None) == ["quicktype"]
    other = _executable(tmp_path, "quicktype", 'echo "quicktype version 23.0.0"')
    assert missing_tools(["quicktype"], quicktype=lambda: str(other)) == [
        f"quicktype {QUICKTYPE_VERSION} (found 23.0.0)"
    ]
    broken = _executable(tmp_path, "broken", "exit 3")
    assert missing_tools(["quicktype"], quicktype=lambda: str(broken))[0].startswith(
        f"quicktype {QUICKTYPE_VERSION}"
    )
    pinned = _executable(tmp_path, "pinned", f'echo "quicktype version {QUICKTYPE_VERSION}"')
    assert missing_tools(["quicktype"], quicktype=lambda: str(pinned)) == []
    assert f"quicktype@{QUICKTYPE_VERSION}" in install_line(["quicktype"])
