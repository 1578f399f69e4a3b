"""Resident memory of processes over time, for the soak benchmarks (Linux: read from /proc).

    sampler = MemorySampler(server_pid, {"neo4j": neo4j_pid}, every_s=5)
    task = asyncio.create_task(sampler.run(deadline))     # beside the load
    ...
    print_summary(sampler.series, sampler.cpu, warmup_s=60, window_s=60, every_s=5)

`server_pid` is followed with its descendants (uvicorn's worker processes, a worker respawned after a
crash); the other pids are sampled on their own. Each series is `(seconds since the start, MiB)`.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

Series = dict[str, list[tuple[float, float]]]
# "Flat": after warm-up, the fitted growth over the rest of the run is at most this many MiB, or at most
# this share of the process's resident size, whichever is larger (allocator and GC noise stay inside it).
FLAT_MIB = 5.0
FLAT_SHARE = 0.02


def rss_mib(pid: int) -> float | None:
    """VmRSS of `pid` in MiB, None when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of `pid` so far, None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _parent(pid: int) -> int | None:
    try:
        # The command name (field 2) is in parentheses and may hold spaces: split after the last ")".
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def descendants(pid: int) -> list[int]:
    """Every live process below `pid`, in pid order."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            parent = _parent(int(entry.name))
            if parent is not None:
                children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return sorted(found)


class MemorySampler:
    """Samples `root` ("server", its descendants as "worker <pid>", their sum as "server total") and
    each of `others` every `every_s` seconds."""

    def __init__(self, root: int, others: dict[str, int], *, every_s: float) -> None:
        self.root = root
        self.others = others
        self.every_s = every_s
        self.series: Series = {}
        # CPU seconds of each process at its first and its latest sample: who did the work.
        self.cpu: dict[str, tuple[float, float]] = {}
        self._started = time.monotonic()

    def sample(self) -> None:
        at = time.monotonic() - self._started
        total = 0.0
        for label, pid in [("server", self.root), *((f"worker {child}", child) for child in descendants(self.root))]:
            mib = self._record(label, pid, at)
            total += mib or 0.0
        self.series.setdefault("server total", []).append((at, total))
        for label, pid in self.others.items():
            self._record(label, pid, at)

    def _record(self, label: str, pid: int, at: float) -> float | None:
        mib, cpu = rss_mib(pid), cpu_seconds(pid)
        if mib is not None:
            self.series.setdefault(label, []).append((at, mib))
        if cpu is not None:
            self.cpu[label] = (self.cpu.get(label, (cpu, cpu))[0], cpu)
        return mib

    async def run(self, deadline: float) -> None:
        """Sample until `deadline` (time.monotonic()), the first sample at once."""
        self._started = time.monotonic()
        while True:
            self.sample()
            if time.monotonic() + self.every_s > deadline:
                return
            await asyncio.sleep(self.every_s)


@dataclass(frozen=True)
class MemorySummary:
    samples: int
    first_median: float
    last_median: float
    peak: float
    growth_per_min: float  # least-squares slope after warm-up, MiB per minute
    growth_window_min: float  # minutes the slope was fitted over

    @property
    def flat(self) -> bool:
        fitted = self.growth_per_min * self.growth_window_min
        return fitted <= max(FLAT_MIB, FLAT_SHARE * self.last_median)


def summarise(points: list[tuple[float, float]], *, window_s: float, warmup_s: float) -> MemorySummary:
    """Medians of the first and the last `window_s` seconds, the peak, and the growth after `warmup_s`."""
    end = points[-1][0]
    first = [mib for at, mib in points if at < window_s]
    last = [mib for at, mib in points if at >= end - window_s]
    after = [(at, mib) for at, mib in points if at >= warmup_s]
    slope = 0.0
    if len(after) >= 3 and after[-1][0] > after[0][0]:
        slope = statistics.linear_regression([at for at, _ in after], [mib for _, mib in after]).slope * 60
    return MemorySummary(
        samples=len(points),
        first_median=statistics.median(first or [points[0][1]]),
        last_median=statistics.median(last),
        peak=max(mib for _, mib in points),
        growth_per_min=slope,
        growth_window_min=(after[-1][0] - after[0][0]) / 60 if len(after) >= 2 else 0.0,
    )


def print_summary(
    series: Series, cpu: dict[str, tuple[float, float]], *, warmup_s: float, window_s: float, every_s: float
) -> None:
    print(
        f"\nresident memory (MiB), sampled every {every_s:g} s; medians of the first and last {window_s:g} s, "
        f"growth = least-squares slope after {warmup_s:g} s of warm-up; CPU s used between the samples"
    )
    print(f"{'process':<22}{'samples':>8}{'first':>9}{'last':>9}{'max':>9}{'MiB/min':>9}{'CPU s':>8}  verdict")
    for label, points in series.items():
        s = summarise(points, window_s=window_s, warmup_s=warmup_s)
        verdict = "flat" if s.flat else "GROWS"
        used = f"{cpu[label][1] - cpu[label][0]:.1f}" if label in cpu else "-"
        print(
            f"{label:<22}{s.samples:>8}{s.first_median:>9.1f}{s.last_median:>9.1f}{s.peak:>9.1f}"
            f"{s.growth_per_min:>+9.2f}{used:>8}  {verdict}"
        )
    print(
        f"(flat: fitted growth after warm-up ≤ {FLAT_MIB:g} MiB or ≤ {FLAT_SHARE:.0%} of the last median, "
        "whichever is larger)"
    )


def print_series(series: Series) -> None:
    """Every sample, one line per time, one column per process."""
    labels = list(series)
    times = sorted({round(at, 1) for points in series.values() for at, _ in points})
    by_label = {label: {round(at, 1): mib for at, mib in points} for label, points in series.items()}
    print("\nt s     " + "  ".join(f"{label:>14}" for label in labels))
    for at in times:
        cells = (by_label[label].get(at) for label in labels)
        print(f"{at:>6.1f}  " + "  ".join(f"{mib:>14.1f}" if mib is not None else f"{'-':>14}" for mib in cells))
