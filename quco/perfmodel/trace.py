"""One CU's modelled timeline as a Chrome trace (open in https://ui.perfetto.dev).

The model records spans as (track, name, begin, end) in GPU core cycles; each track (a
resident work-group's producer, its consumers, its ATT transfers) becomes a thread of
one process, and times become microseconds at the kernel's clock.
"""
from __future__ import annotations


def chrome_trace(spans: list, clock_mhz: float, title: str) -> dict:
    tracks = list(dict.fromkeys(track for track, *_ in spans))
    tid = {track: i + 1 for i, track in enumerate(sorted(tracks, key=_track_order))}
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": title}}]
    events += [{"ph": "M", "name": "thread_name", "pid": 1, "tid": tid[t], "args": {"name": t}} for t in tracks]
    events += [{"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": tid[t], "args": {"sort_index": tid[t]}}
               for t in tracks]
    for track, name, begin, end in spans:
        events.append({"ph": "X", "pid": 1, "tid": tid[track], "name": name,
                       "ts": begin / clock_mhz, "dur": (end - begin) / clock_mhz,
                       "args": {"begin_cycle": begin, "cycles": end - begin}})
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def _track_order(track: str):
    slot, _, kind = track.partition(" ")[2].partition(" ")
    return (int(slot) if slot.isdigit() else 0, {"producer": 0, "ATT": 1, "consumers": 2}.get(kind, 3), track)
