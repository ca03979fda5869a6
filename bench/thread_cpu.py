"""CPU per thread of a running process tree, over a window, from /proc (Linux).

    .venv/bin/python bench/thread_cpu.py --pid "$(pgrep -f 'python -m producer' | head -1)" --seconds 60

Threads are grouped by executable and name, digits folded (`rdk:broker12` and `rdk:broker3`
are `rdk:brokerN`), and printed as shares of one core, largest first: where an idle
producer's or consumer's floor goes (docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections import Counter
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
Group = tuple[str, str]  # executable, thread name with digits folded


def tree(pid: int) -> list[int]:
    """pid and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += children.get(current, [])
    return found


def ticks(pids: list[int]) -> Counter[Group]:
    """User and system clock ticks so far, per thread group."""
    used: Counter[Group] = Counter()
    for pid in pids:
        try:
            exe = Path(os.readlink(f"/proc/{pid}/exe")).name
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                stat = (task / "stat").read_text()
            except OSError:
                continue
            name = re.sub(r"[0-9]+", "N", stat[stat.index("(") + 1 : stat.rindex(")")])
            fields = stat.rsplit(")", 1)[1].split()
            used[(exe, name)] += int(fields[11]) + int(fields[12])  # utime, stime
    return used


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--pid", type=int, required=True, help="the process tree's root")
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--top", type=int, default=15)
    args = p.parse_args()
    pids = tree(args.pid)
    before = ticks(pids)
    time.sleep(args.seconds)
    spent = ticks(pids) - before
    share = 100 / TICKS / args.seconds
    print(f"total {sum(spent.values()) * share:.1f}% of a core over {args.seconds:.0f} s")
    for (exe, name), used in spent.most_common(args.top):
        print(f"{used * share:6.2f}%  {exe}  {name}")


if __name__ == "__main__":
    main()
