"""The failover benchmark's printed figures: one block per Lease setting."""

from __future__ import annotations

from typing import Any


def _s(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f} s"


def _lag(p: dict[str, float]) -> str:
    if not p:
        return "(none)"
    return f"p50 {p['p50']:.3f} s, p99 {p['p99']:.3f} s, max {p['max']:.3f} s (n={p['count']})"


def lines(setting: str, f: dict[str, Any]) -> list[str]:
    la = f["load_average"]
    lost = f["admission_lost"]
    out = [
        f"Lease {setting} (duration/renew deadline/retry period, s); load average {la['start']:.1f} at the "
        f"start, {la['kill']:.1f} at the kill, {la['end']:.1f} at the end",
        f"  {f['base_jobs']} jobs all Running {f['all_running_seconds']:.1f} s after the "
        f"first create; the longest time between two renewals: {f['lease_gap_creating']:.1f} s while they were "
        f"made, {f['lease_gap_loaded']:.1f} s under the load before the kill",
        f"  the kill: {f['wave']['sent']} new jobs being created ({f['pods_before_kill']} of their pods made by then)",
        f"  the other replica holds the Lease {_s(f['lease_taken'])} after the kill; its first status write "
        f"{_s(f['first_status_write'])}; the dead replica out of the webhook endpoints {_s(f['endpoint_removed'])}",
        f"  status lag recovered {f['recovered']:.1f} s after the kill (no change reflected later than the "
        f"worst before it, {f['worst_before']:.3f} s)",
    ]
    for p in ("before", "during", "after"):
        out.append(f"    status lag {p:<6}  {_lag(f['lag'][p])}")
    ch = f["changes"]
    out.append(
        f"  changes: {ch['sent']} sent, {ch['refused']} refused by the apiserver (a webhook unreachable), "
        f"{ch['never_reflected']} never reflected; jobs behind their last change at the end: {f['behind_at_end']}"
    )
    out.append(
        f"  admission answers lost: {lost['count']}"
        + (
            f" (sent {lost['first']:.1f} s to {lost['last']:.1f} s after the kill: {'; '.join(lost['messages'])})"
            if lost["count"]
            else ""
        )
    )
    for p in ("before", "during", "after"):
        a = f["admission"][p]
        out.append(
            f"    admission {p:<6}  {a['sent']} sent, {a['failed']} failed, {a['timeout']} timed out; "
            f"answered {_lag(a['ok_latency'])}"
        )
    out.append(
        f"  duplicates: {f['duplicate_pods']} replica indexes with two pods, {f['duplicate_services']} jobs with "
        f"two Services ({f['pods_seen']} pods of {f['expected_pods']} expected, {f['services_seen']} Services)"
    )
    return out
