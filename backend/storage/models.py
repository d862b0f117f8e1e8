"""Storage's own table: named leases that make work single-flight across processes (see flights.py)."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel


class Flight(SQLModel, table=True):
    """One named piece of work under way somewhere ("plan:default:aoi:3", "council:council-ab12"...).

    The row is the lease: its `owner` (a process) holds it until `until`, renewing it while the work runs. A
    row past its `until` belongs to nobody: its owner died, and the next process to ask takes it.
    """

    __tablename__ = "machi_flight"

    name: str = Field(primary_key=True, max_length=200)
    owner: str = Field(max_length=128)
    until: datetime
