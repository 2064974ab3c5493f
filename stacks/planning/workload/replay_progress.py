"""What a long replay says while it runs: the work it will do, about how long, and each replay as it ends, to a
reporter the CLI installs (its stderr; `reporting`). Nothing is said without one, or where the estimate is short.
The capacity plan (capacity_plan.py) and the tier curve (workload_plan.py) report here."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

# A replay estimated past this says what it replays and reports each replay as it ends: a plan runs four at the
# least (the configured run, a run and a probe of another scenario, the tier curve's band), 10 s of waiting.
# Shorter ones stay quiet.
PROGRESS_AFTER_S = 2.5
Report = Callable[[str], None]


@dataclass
class Progress:
    """The replays of one command: counted and timed, said while the workload's replay is estimated long."""

    report: Report
    workload: object = None  # what identifies the workload estimated last
    seconds_each: float = 0.0
    done: int = 0
    spent: float = 0.0
    measured: list[float] = field(default_factory=list)  # the seconds of this workload's replays

    def knows(self, workload: object) -> bool:
        return workload == self.workload

    def estimated(self, workload: object, requests: int, steps: int, seconds_each: float) -> None:
        """A workload's first replay: what it replays and the estimate of each."""
        self.workload, self.seconds_each, self.measured = workload, seconds_each, []
        if self.loud:
            self.report(
                f"the time model replays {requests:,} requests ({steps / 1e6:.1f} million steps and block updates):"
                f" about {seconds_each:.0f} s a replay (at the rates capacity_plan.py measured)"
            )

    @property
    def loud(self) -> bool:
        return self.seconds_each >= PROGRESS_AFTER_S

    def ran(self, what: str, fits: bool, asks: float, seconds: float) -> None:
        """A replay ended: said with its time against the estimate, which becomes the mean of those measured."""
        loud, estimate = self.loud, self.seconds_each
        self.done += 1
        self.spent += seconds
        self.measured.append(seconds)
        self.seconds_each = sum(self.measured) / len(self.measured)
        if loud or seconds >= PROGRESS_AFTER_S:  # a replay the estimate made short that was not
            verdict = "keeps up" if fits else "does not keep up"
            self.report(
                f"replay {self.done} ({what}): {verdict}, asks {asks:.0%}; {seconds:.0f} s (estimated"
                f" {estimate:.0f} s), {self.spent:.0f} s so far; about {self.seconds_each:.0f} s a replay from here"
            )


_LISTENING: list[Progress] = []  # the command's, while `reporting`


@contextmanager
def reporting(report: Report) -> Iterator[None]:
    """While inside, long replays say what they replay, their estimate, and each replay as it ends."""
    _LISTENING.append(Progress(report))
    try:
        yield
    finally:
        _LISTENING.pop()


def current() -> Progress | None:
    return _LISTENING[-1] if _LISTENING else None


def say_long(line: str, seconds: float) -> None:
    """Report `line` where a reporter listens and the work it announces is estimated past PROGRESS_AFTER_S."""
    if _LISTENING and seconds >= PROGRESS_AFTER_S:
        _LISTENING[-1].report(line)
