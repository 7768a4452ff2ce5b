"""Memory of the current process, read from ``/proc/self/status`` (Linux): the one place the
benchmarks read VmRSS/VmHWM/RssAnon and reset the kernel's high-water mark.

Why VmHWM and not ``ru_maxrss``: a forked child's ``ru_maxrss`` (from ``wait4`` or
``getrusage(RUSAGE_CHILDREN)``) starts at the parent's resident size at fork, so a small child
of a big parent reports the parent's size. A process reports its own peak instead, with
:func:`lifetime_peak_mb`, and its parent reads it from the child's output.

Invariant: :func:`reset_hwm` folds the high-water mark it discards into the process's lifetime
peak first, so :func:`lifetime_peak_mb` is the peak since the process started whatever phases
reset the mark in between, and :func:`hwm_mb` is the peak since the last reset.
"""

from __future__ import annotations

_folded_kb = 0  # the largest VmHWM discarded by reset_hwm


def status_kb(field: str) -> int:
    """A ``/proc/self/status`` field in KiB (``VmRSS``, ``VmHWM``, ``RssAnon``...); 0 if absent."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_hwm() -> bool:
    """Reset VmHWM to the current RSS (``5`` into ``/proc/self/clear_refs``); False if the
    kernel refused, in which case VmHWM keeps counting from the process start."""
    global _folded_kb
    _folded_kb = max(_folded_kb, status_kb("VmHWM"))
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def hwm_mb() -> float:
    """Peak resident MB since the last :func:`reset_hwm` (or the process start)."""
    return status_kb("VmHWM") / 1024


def lifetime_peak_mb() -> float:
    """Peak resident MB since the process started, across resets."""
    return max(_folded_kb, status_kb("VmHWM")) / 1024
