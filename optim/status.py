"""A run's status as text: evaluations, failures, the best, what is in flight and for how long.

For a campaign that runs for days on a cluster, the first questions are whether it is alive, what it has
found, which evaluations are out and whether one of them hangs. `treezoo status JOURNAL` answers them from
the journal alone (read without the writer's lock, so the campaign keeps running), using the wall-clock
stamps every ask and tell carries (optim.loop; absent in runs saved before 2026-12-07, which are reported
without times).
"""

from __future__ import annotations

import time
from collections import Counter

#: failure reasons listed by name before the rest are counted together
MAX_REASONS = 3


def duration(seconds: float) -> str:
    """'42 s', '3 min 05 s', '2 h 04 min', '3 d 2 h': a span as a person reads it."""
    s = max(0.0, float(seconds))
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{int(s // 60)} min {int(s % 60):02d} s"
    if s < 86400:
        return f"{int(s // 3600)} h {int(s % 3600 // 60):02d} min"
    return f"{int(s // 86400)} d {int(s % 86400 // 3600)} h"


def _reason(error: str | None) -> str:
    """A failure's reason without its details: 'timeout', 'ValueError', the first words otherwise."""
    text = (error or "non-finite value").strip()
    head = text.split(":", 1)[0]
    return head if len(head) <= 40 else head[:37] + "..."


def run_status(opt, now: float | None = None) -> list[str]:
    """The report's lines for a `BayesOpt` (a loaded journal or a live run); `now`: wall-clock seconds since
    the epoch (default: this moment), against which in-flight evaluations and the last result are timed."""
    now = time.time() if now is None else float(now)
    history, flying = opt.history, opt.in_flight
    failed = [h for h in history if h["status"] != "ok"]
    lines = [f"surrogate:   {opt.surrogate_spec}" + ("" if opt.auto_choice is None else " (picked by auto)")
             + f", seed {opt.seed}, {opt.n_init} initial points"]
    told = f"{len(history)} told"
    if failed:
        reasons = Counter(_reason(h.get("error")) for h in failed).most_common()
        named = [f"{r} x{c}" for r, c in reasons[:MAX_REASONS]]
        if len(reasons) > MAX_REASONS:
            named.append(f"{sum(c for _, c in reasons[MAX_REASONS:])} other")
        told += f", {len(failed)} failed ({', '.join(named)})"
    lines.append(f"evaluations: {told}, {len(flying)} in flight")
    best = opt.best
    if best is None:
        lines.append("best:        none yet")
    else:
        number = next(i for i, h in enumerate(history) if h is best) + 1
        lines.append(f"best:        {best['value']:.6g} (evaluation {number}, source {best['source']}): "
                     f"{_config_text(best['config'])}")
    for p in flying:
        since = "asked before time stamps" if p["asked_at"] is None else f"out {duration(now - p['asked_at'])}"
        lines.append(f"in flight:   evaluation {p['index'] + 1} ({p['source']}), {since}: {_config_text(p['config'])}")
    stamps = [t for h in history for t in (h.get("asked_at"), h.get("told_at")) if t is not None]
    stamps += [p["asked_at"] for p in flying if p["asked_at"] is not None]
    if not stamps:
        lines.append("time:        no time stamps (a run saved before 2026-12-07)")
    else:
        start = min(stamps)
        text = f"time:        started {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(start))}, " \
               f"{duration(now - start)} ago"
        last = [h["told_at"] for h in history if h.get("told_at") is not None]
        if last:
            text += f"; last result {duration(now - max(last))} ago"
        lines.append(text)
    return lines


def _config_text(config: dict) -> str:
    """A configuration on one line, numbers to 4 significant digits."""
    return "{" + ", ".join(f"{k}: {v:.4g}" if isinstance(v, float) else f"{k}: {v}" for k, v in config.items()) + "}"
