"""Planning: each agent's daily plan, validated against the world before it is stored."""
