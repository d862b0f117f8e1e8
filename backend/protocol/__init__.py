"""The wire contract Unity speaks: every request, reply and event as a JSON Schema (`machi protocol export`)."""
