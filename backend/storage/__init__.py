"""Storage: the SQLModel engine, sessions and additive migrations."""
