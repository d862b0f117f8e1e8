"""Conversation: turns between two agents, end rules, transcripts."""
