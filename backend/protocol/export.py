"""Write the protocol's JSON Schemas: one `<Name>.schema.json` per type plus an `index.json`.

Every named type (a top-level request/reply/event or a part of one, like `Position`) gets its own file and
references the others by file name, so code generators see each type once (one C# class per type).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from backend import PROTOCOL_VERSION
from backend.protocol.registry import PROTOCOL_MODELS

DRAFT = "https://json-schema.org/draft/2020-12/schema"
INDEX = "index.json"
SUFFIX = ".schema.json"
_LOCAL_REF = "#/$defs/"


def _rewrite_refs(node: Any) -> Any:
    """`#/$defs/Position` -> `Position.schema.json` (each type lives in its own file)."""
    if isinstance(node, dict):
        out = {key: _rewrite_refs(value) for key, value in node.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith(_LOCAL_REF):
            out["$ref"] = ref[len(_LOCAL_REF) :] + SUFFIX
        return out
    if isinstance(node, list):
        return [_rewrite_refs(value) for value in node]
    return node


def type_schemas() -> dict[str, dict[str, Any]]:
    """Type name -> its JSON Schema: requests as the server validates them, replies as it sends them."""
    pairs: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (e.model, "validation" if e.role == "request" else "serialization") for e in PROTOCOL_MODELS
    ]
    _, bundle = models_json_schema(pairs, ref_template=_LOCAL_REF + "{model}")
    roles = {e.name: e for e in PROTOCOL_MODELS}
    schemas = {}
    for name, schema in sorted(bundle["$defs"].items()):
        entry = roles.get(name)
        meta = {"role": entry.role, "used_by": entry.used_by} if entry else {"role": "part"}
        schemas[name] = {"$schema": DRAFT, **_rewrite_refs(schema), "x-machi": meta}
    return schemas


def render(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def export_documents() -> dict[str, str]:
    """File name -> text for every schema and the index (nothing written)."""
    schemas = type_schemas()
    files = {name + SUFFIX: render(schema) for name, schema in schemas.items()}
    index = {
        "protocol_version": PROTOCOL_VERSION,
        "header": "X-Machi-Protocol",
        "schemas": [
            {"name": name, "file": name + SUFFIX, **schema["x-machi"]} for name, schema in schemas.items()
        ],
    }
    files[INDEX] = render(index)
    return files


def write_export(out_dir: Path) -> list[Path]:
    """Write the export into `out_dir`, removing schema files of types that no longer exist."""
    out_dir.mkdir(parents=True, exist_ok=True)
    documents = export_documents()
    for stale in out_dir.glob("*" + SUFFIX):
        if stale.name not in documents:
            stale.unlink()
    written = []
    for name, text in documents.items():
        path = out_dir / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
