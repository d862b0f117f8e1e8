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
    # The repository has no release tags: the URL names none, and the text says to pin a commit.
    assert url.endswith(".git?path=unity_protocol/csharp") and "#" not in url
    assert "git rev-parse HEAD" in render_unity()
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


def test_the_package_can_be_installed_from_disk_by_a_file_path_to_its_folder() -> None:
    """The `file:` entry points, from a Unity project's Packages/ folder beside a clone named machi/, at the
    folder holding package.json; the text names Unity's Add package from disk."""
    package = json.loads((PACKAGE / "package.json").read_text(encoding="utf-8"))
    rendered = render_unity()
    entry = json.loads(
        re.search(r"```json\n(\{\n  \"com\.machi\.client\": \"file:.*?)```", rendered, re.S).group(1)
    )
    path = entry[package["name"]].removeprefix("file:")
    project_packages = PACKAGE.parents[2] / "UnityProject" / "Packages"  # a project beside the clone
    clone = PACKAGE.parents[1]
    resolved = (project_packages / path.replace("../../machi/", f"../../{clone.name}/")).resolve()
    assert resolved == PACKAGE.resolve() and (resolved / "package.json").is_file()
    assert "Add package from disk" in rendered


def test_the_protocol_rule_names_the_versions_the_server_serves() -> None:
    """The header rule states what the middleware does: the current major, the ones still served."""
    from backend import PROTOCOL_VERSION
    from backend.api.protocol import SUPPORTED_VERSIONS
    from backend.protocol.readme_text import RULES

    rules = " ".join(RULES.split())
    assert f"Send `X-Machi-Protocol: {PROTOCOL_VERSION}`" in rules
    assert f"A missing header means {PROTOCOL_VERSION}" in rules
    assert f'"supported": {list(SUPPORTED_VERSIONS)}' in rules
