"""The language-model layer: interface, provider adapters, wrappers, embedders. See README.md."""
