"""The protocol README's Unity part (install, scene, C#) is what the generator makes from the package today:
the manifest from package.json, the C# from the sample's compiled README regions."""

from __future__ import annotations

import json
import re

from backend.protocol.readme import PACKAGE, render_unity, snippets
from backend.protocol.readme_text import UNITY

README = PACKAGE.parent / "README.md"
FIX = "run `machi protocol readme` and commit unity_protocol/README.md"


def test_committed_readme_has_the_unity_part_as_generated_now() -> None:
    assert render_unity() in README.read_text(encoding="utf-8"), f"the Unity part is stale; {FIX}"


def test_manifest_installs_this_package_from_its_folder_with_its_dependencies() -> None:
    package = json.loads((PACKAGE / "package.json").read_text(encoding="utf-8"))
    block = re.search(r"```json\n(\{\n  \"scopedRegistries\".*?)```", render_unity(), re.S)
    assert block, "no manifest block"
    manifest = json.loads(block.group(1))
    url = manifest["dependencies"][package["name"]]
    assert url.endswith(f".git?path=unity_protocol/csharp#v{package['version']}")
    for name, version in package["dependencies"].items():
        assert manifest["dependencies"][name] == version
    assert {"com.vrmc.gltf", "com.vrmc.vrm"} <= set(manifest["dependencies"])
    (openupm,) = manifest["scopedRegistries"]
    assert openupm["url"] == "https://package.openupm.com" and "com.cysharp.unitask" in openupm["scopes"]


def test_every_csharp_region_of_the_sample_is_shown_and_none_is_missing() -> None:
    regions = snippets()
    used = {
        name.removeprefix("snippet_").replace("_", "-") for name in re.findall(r"\{(snippet_\w+)\}", UNITY)
    }
    assert used == set(regions), f"README text uses {sorted(used)}, the sample has {sorted(regions)}"
    rendered = render_unity()
    assert all(code in rendered for code in regions.values())
    assert "client.TurnAsync(request, ct)" in regions["turn"] and "TurnStreamAsync" in regions["stream"]
    assert "GetPlanNowAsync" in regions["plan-now"] and "ClientWebSocket" in regions["events"]
