"""World: agents (personas and their reported state) and points of interest."""
