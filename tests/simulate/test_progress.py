"""`machi simulate`'s progress: a redrawn bar on a terminal, one plain line per game hour anywhere else."""

from __future__ import annotations

import io

from backend.simulate.cli import ProgressBar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _drive(bar: ProgressBar, hours: float) -> None:
    total = hours * 60
    for minute in range(0, int(total) + 1, 5):
        bar(float(minute), total)
    bar.close()


def test_not_a_terminal_gets_one_line_per_game_hour_and_no_carriage_returns() -> None:
    out = io.StringIO()
    _drive(ProgressBar(3, stream=out), 3)
    text = out.getvalue()
    assert "\r" not in text
    assert text.splitlines() == [
        "simulated 0.0/3 game hours (0%)",
        "simulated 1.0/3 game hours (33%)",
        "simulated 2.0/3 game hours (67%)",
        "simulated 3.0/3 game hours (100%)",
    ]


def test_a_terminal_gets_one_redrawn_line() -> None:
    out = Terminal()
    _drive(ProgressBar(1, stream=out), 1)
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    assert text.count("\r") == 5  # redrawn every game quarter hour: 0, 15, 30, 45, 60
    assert "[" + "#" * ProgressBar.WIDTH + "]   1.0/1 game hours" in text
