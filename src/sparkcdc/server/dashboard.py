"""The status page (``GET /dashboard``): changefeeds, their checkpoint lag over the last hour, and the captures.

One self-contained HTML document rendered on the server: inline CSS, the charts as inline SVG, no script (the
page reloads itself every ``REFRESH_S`` seconds), so it works offline and in any browser. Every value shown is
escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from sparkcdc import __version__
from sparkcdc.changefeed.info import RUNNING, ChangefeedInfo, ChangefeedStatus
from sparkcdc.model import tso
from sparkcdc.server.api_model import json_time
from sparkcdc.server.catchup import describe_lag
from sparkcdc.server.cluster import CaptureInfo
from sparkcdc.server.lag_history import WINDOW_S, Sample

REFRESH_S = 10
_W, _H, _PAD = 640, 160, 36  # chart size and left/bottom margin (px)

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fafbfc}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:28px 0 8px} .sub{color:#5b6475}
table{border-collapse:collapse;background:#fff;min-width:640px} th,td{padding:6px 12px;border-bottom:1px solid #e3e6ec;
text-align:left;vertical-align:top} th{background:#f0f2f6;font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.state{font-weight:600} .normal{color:#18794e} .warning,.pending{color:#b35c00} .failed{color:#c62828}
.stopped,.finished{color:#5b6475} .error{color:#c62828;max-width:420px;word-break:break-word}
figure{margin:0 0 16px;background:#fff;border:1px solid #e3e6ec;padding:8px;display:inline-block}
figcaption{font-weight:600;margin-bottom:4px} svg text{font-size:11px;fill:#5b6475}
"""


@dataclass(frozen=True)
class FeedRow:
    info: ChangefeedInfo
    status: ChangefeedStatus
    rows_per_s: float
    lag: list[Sample]


def render(cluster_id: str, feeds: Sequence[FeedRow], captures: Sequence[CaptureInfo], now: float) -> str:
    rows = "".join(_feed_row(f, now) for f in feeds) or '<tr><td colspan="6">no changefeeds</td></tr>'
    charts = "".join(_chart(f, now) for f in feeds if f.info.state in RUNNING) or "<p>no running changefeeds</p>"
    caps = "".join(
        f'<tr data-capture="{escape(c.id)}"><td>{escape(c.id)}</td><td>{escape(c.address)}</td>'
        f"<td>{'owner' if c.is_owner else ''}</td></tr>"
        for c in captures
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>sparkcdc status</title>'
        f'<meta http-equiv="refresh" content="{REFRESH_S}"><style>{_CSS}</style></head><body>'
        f"<h1>sparkcdc</h1><div class=sub>cluster {escape(cluster_id)} &middot; v{escape(__version__)} &middot; "
        f"refreshes every {REFRESH_S}s</div>"
        '<h2>Changefeeds</h2><table id="changefeeds"><tr><th>Changefeed</th><th>State</th><th>Checkpoint</th>'
        f"<th>Lag</th><th>Rows/s</th><th>Last error</th></tr>{rows}</table>"
        f'<h2>Checkpoint lag, last hour</h2><div id="charts">{charts}</div>'
        f'<h2>Captures</h2><table id="captures"><tr><th>ID</th><th>Address</th><th>Role</th></tr>{caps}</table>'
        "</body></html>"
    )


def _feed_row(f: FeedRow, now: float) -> str:
    info, st = f.info, f.status
    running = info.state in RUNNING
    lag = describe_lag(tso.lag_seconds(st.checkpoint_ts, now)) if running else ""
    error = info.error or st.last_warning
    err = f"[{escape(error.code)}] {escape(error.message)}" if error else ""
    name = f"{info.namespace}/{info.id}"
    return (
        f'<tr data-changefeed="{escape(name)}"><td>{escape(name)}</td>'
        f'<td class="state {escape(info.state.value)}">{escape(info.state.value)}</td>'
        f"<td>{escape(json_time(st.checkpoint_ts))}<br><span class=sub>{st.checkpoint_ts}</span></td>"
        f'<td class="num lag">{lag}</td><td class="num rate">{f.rows_per_s:.0f}</td>'
        f'<td class="error">{err}</td></tr>'
    )


def _chart(f: FeedRow, now: float) -> str:
    """The lag samples as a polyline over the last hour; the y axis runs from 0 to the hour's largest lag."""
    name = escape(f"{f.info.namespace}/{f.info.id}")
    top = max([s.lag_s for s in f.lag] + [1.0])
    plot_w, plot_h = _W - _PAD - 8, _H - _PAD
    points = " ".join(
        f"{_PAD + plot_w * (1 - min(WINDOW_S, now - s.at) / WINDOW_S):.1f},{8 + plot_h * (1 - s.lag_s / top):.1f}"
        for s in f.lag
    )
    line = f'<polyline class="lag" fill="none" stroke="#2f6fdf" stroke-width="2" points="{points}"/>' if points else ""
    axis = (
        f'<line x1="{_PAD}" y1="8" x2="{_PAD}" y2="{8 + plot_h}" stroke="#c5cad3"/>'
        f'<line x1="{_PAD}" y1="{8 + plot_h}" x2="{_W - 8}" y2="{8 + plot_h}" stroke="#c5cad3"/>'
        f'<text x="2" y="14">{escape(describe_lag(top))}</text><text x="2" y="{8 + plot_h}">0</text>'
        f'<text x="{_PAD}" y="{_H - 8}">-60 min</text><text x="{_W - 40}" y="{_H - 8}">now</text>'
    )
    return (
        f'<figure data-changefeed="{name}"><figcaption>{name}</figcaption>'
        f'<svg width="{_W}" height="{_H}" viewBox="0 0 {_W} {_H}" role="img" aria-label="checkpoint lag of {name}">'
        f"{axis}{line}</svg></figure>"
    )
