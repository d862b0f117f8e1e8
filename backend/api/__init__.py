"""HTTP routers. The only layer that knows about status codes."""
