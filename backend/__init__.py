"""Machi: a server that gives the characters of a Unity world their minds."""

__version__ = "0.1.0"
PROTOCOL_VERSION = 1
