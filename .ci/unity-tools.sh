#!/usr/bin/env bash
# Tools for the Unity protocol tests: Mono's C# compiler and runtime with Debian's Newtonsoft.Json (to compile
# unity_protocol/csharp against the stubs and run the round trip), and quicktype pinned to the version the
# committed DTOs were generated with (backend/protocol/codegen.py QUICKTYPE_VERSION).
#
# Newtonsoft.Json: Unity's com.unity.nuget.newtonsoft-json 3.2.1 (the package's dependency) ships Json.NET
# 13.0.x; Debian ships 6.0.8, and neither PyPI nor npm has a well-known package that carries the 13.x dll
# (NuGet is not reachable here). 6.0 is equivalent for what the package uses, all present with the same
# behaviour in 6.0 and 13.0: [JsonProperty(name, NullValueHandling = Ignore)], [JsonConverter(typeof(...))],
# JsonConverter subclasses (CanConvert/ReadJson/WriteJson over JsonReader.TokenType/Read, JsonToken.Null/
# EndArray, JsonWriter.WriteStart/EndArray, JsonSerializer.Serialize/Deserialize<T>), JsonSerializerSettings
# { MetadataPropertyHandling.Ignore, DateParseHandling.None, Converters }, IsoDateTimeConverter { DateTimeStyles
# = AssumeUniversal }, JsonConvert.SerializeObject/DeserializeObject<T>, JsonException, and `object` /
# Dictionary<string, object> members read as JToken. The one default that differs: 13.0.1 limits reading to
# MaxDepth 64 (6.0: no limit); protocol payloads nest 5 levels at most, so nothing relies on it. To
# compile against a 13.x dll (e.g. the one under a Unity project's Library/PackageCache/
# com.unity.nuget.newtonsoft-json@3.2.1/), set MACHI_NEWTONSOFT_DLL; tests/protocol/unity_tools.py also picks
# up ~/.nuget/packages/newtonsoft.json/13.*. unity_protocol/csharp/README.md lists the APIs.
set -euo pipefail
cd "$(dirname "$0")/.."

QUICKTYPE_VERSION="$(.venv/bin/python -c 'from backend.protocol.codegen import QUICKTYPE_VERSION; print(QUICKTYPE_VERSION)' 2>/dev/null || echo 26.0.0)"
TOOLS="${MACHI_TOOLS_DIR:-$HOME/.cache/machi-tools}"

if ! command -v mcs >/dev/null || ! command -v mono >/dev/null || ! ls /usr/lib/cli/Newtonsoft.Json*/Newtonsoft.Json.dll >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        mono-mcs mono-runtime libnewtonsoft-json-cil-dev >/dev/null
fi

if [ ! -x "$TOOLS/quicktype/node_modules/.bin/quicktype" ] \
    || [ "$("$TOOLS/quicktype/node_modules/.bin/quicktype" --version | awk '{print $3}')" != "$QUICKTYPE_VERSION" ]; then
    npm install --silent --no-audit --no-fund --prefix "$TOOLS/quicktype" "quicktype@$QUICKTYPE_VERSION"
fi
echo "unity tools: $(mcs --version), quicktype $("$TOOLS/quicktype/node_modules/.bin/quicktype" --version | awk '{print $3}')"
