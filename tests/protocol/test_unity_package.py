"""The UPM package installs from git as Unity expects: every imported asset has a .meta with its own GUID, and
package.json names what the README's install instructions and the assemblies rely on."""

from __future__ import annotations

import json
import re

from tests.protocol.unity_meta import PACKAGE, assets, imported

FIX = "run `python -m tests.protocol.unity_meta` and commit the .meta files"


def test_every_imported_file_and_folder_has_a_meta_with_a_unique_guid() -> None:
    found = assets()
    assert any(p.name == "MachiProtocol.g.cs" for p in found) and all(
        "Samples~" not in p.parts for p in found
    )
    guids: dict[str, str] = {}
    for asset in found:
        meta = asset.with_name(asset.name + ".meta")
        assert meta.is_file(), f"{asset.relative_to(PACKAGE)} has no .meta (Unity would ignore it); {FIX}"
        text = meta.read_text(encoding="utf-8")
        match = re.search(r"^guid: ([0-9a-f]{32})$", text, re.MULTILINE)
        assert text.startswith("fileFormatVersion: 2\n") and match, f"{meta.name} is not a Unity .meta"
        assert ("folderAsset: yes" in text) == asset.is_dir(), meta.name
        assert match.group(1) not in guids, f"{meta.name} repeats the GUID of {guids.get(match.group(1))}"
        guids[match.group(1)] = meta.name


def test_no_meta_is_left_without_its_asset() -> None:
    for meta in PACKAGE.rglob("*.meta"):
        asset = meta.with_name(meta.name.removesuffix(".meta"))
        assert asset.exists() and imported(asset), (
            f"{meta.relative_to(PACKAGE)} describes nothing Unity imports"
        )


def test_package_json_declares_the_unity_version_dependencies_and_sample() -> None:
    package = json.loads((PACKAGE / "package.json").read_text(encoding="utf-8"))
    assert package["name"] == "com.machi.client" and re.fullmatch(r"\d+\.\d+\.\d+", package["version"])
    assert re.fullmatch(r"20\d\d\.\d", package["unity"])
    assert set(package["dependencies"]) == {"com.unity.nuget.newtonsoft-json", "com.cysharp.unitask"}
    for sample in package["samples"]:
        assert (PACKAGE / sample["path"]).is_dir(), sample["path"]
    runtime = json.loads((PACKAGE / "Runtime" / "Machi.Client.asmdef").read_text(encoding="utf-8"))
    town = json.loads(
        (PACKAGE / "Samples~" / "AgentTown" / "Machi.Samples.AgentTown.asmdef").read_text("utf-8")
    )
    assert runtime["references"] == ["UniTask"] and runtime["precompiledReferences"] == [
        "Newtonsoft.Json.dll"
    ]
    assert set(town["references"]) == {runtime["name"], "UniTask", "VRM10"}
