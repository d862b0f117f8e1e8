"""The wire contract Unity speaks: every request, reply and event as a JSON Schema (`machi protocol export`).

Owns: no tables; the exported schemas (unity_protocol/schemas), the C# code generated from them and the
protocol README (`machi protocol readme` runs a fresh server to write its examples).
Imports: anything (an entry-point tool at the top): app, api and the concepts whose models are on the wire.
Nothing in the server imports it; the protocol version is `backend.PROTOCOL_VERSION`.
"""
