"""A process's line in /proc/PID/stat: its start time, which pins a PID to one process, and
whether it still runs. Kept apart, with nothing but `os` imported, because the supervisor every
fabench command starts reads it (:mod:`fabench.host.supervisor`)."""


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields after the command name (field 3 onwards), or None when pid is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    return stat.rsplit(")", 1)[-1].split()


def proc_start(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat)."""
    fields = stat_fields(pid)
    try:
        return int(fields[19]) if fields is not None else None
    except (IndexError, ValueError):
        return None


def running(pid: int) -> bool:
    """Whether pid still runs. A zombie has ended (its memory, files and namespaces are
    released); only its parent can reap it, and a testbed's holders and links belong to the
    `up` that started them, or to whoever adopted them: `down` in another process waited
    out its whole timeout on each of them (4 s of every `testbed down` with one fb-link)."""
    fields = stat_fields(pid)
    return fields is not None and fields[:1] not in (["Z"], ["X"])
