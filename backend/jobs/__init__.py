"""Persisted background jobs: rows written with what they are about, run by a runner in the app."""
