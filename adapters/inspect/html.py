"""HTML building blocks for the inspector: escaping, the page frame with its inline CSS,
tables, and the two inline SVG charts (a decay curve and a status timeline).

Everything a memory holds is user data: every value goes through `esc` (or `attr` for
attribute values) before it reaches a page. The pages carry no script at all, and the
server's Content-Security-Policy forbids one, so a memory that holds markup shows as text.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from urllib.parse import urlencode

from reverie.core.models import Status

STATUS_COLOR = {
    Status.ACTIVE.value: "#2e7d32",
    Status.SUPERSEDED.value: "#b26a00",
    Status.CONSOLIDATED.value: "#1565c0",
    Status.ARCHIVED.value: "#757575",
}

CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;
 color:#1d2126;background:#f6f7f9}
header{background:#20252b;color:#fff;padding:10px 24px;display:flex;gap:18px;
 align-items:center;flex-wrap:wrap}
header a{color:#cfe3ff;text-decoration:none}
header .brand{font-weight:700;color:#fff;font-size:16px}
header form{margin-left:auto;display:flex;gap:6px}
header input[type=search]{width:280px;padding:5px 8px;border-radius:4px;border:0}
.mode{font-size:12px;padding:2px 8px;border-radius:10px;background:#3b434d}
.mode.rw{background:#8a1c1c}
main{max-width:1100px;margin:0 auto;padding:18px 24px 40px}
h1{font-size:20px;margin:6px 0 14px}
h2{font-size:16px;margin:22px 0 8px}
a{color:#0b57d0}
table{border-collapse:collapse;background:#fff;width:100%;margin:6px 0 10px}
th,td{border:1px solid #e1e4e8;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#eef1f4;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
table.kv th{width:210px}
.text{white-space:pre-wrap;word-break:break-word}
.memtext{background:#fff;border:1px solid #e1e4e8;border-left:4px solid #0b57d0;
 padding:10px 14px;font-size:15px;white-space:pre-wrap;word-break:break-word}
.badge{display:inline-block;padding:0 7px;border-radius:9px;font-size:12px;color:#fff;
 background:#555;white-space:nowrap}
.st-active{background:#2e7d32}.st-superseded{background:#b26a00}
.st-consolidated{background:#1565c0}.st-archived{background:#757575}
.tier{background:#e8eaed;color:#333}
.muted{color:#68717a}
.note{background:#fff8e1;border:1px solid #f0d98c;padding:8px 12px;margin:8px 0}
.flash{background:#e6f4ea;border:1px solid #a8dab5;padding:8px 12px;margin:8px 0}
.error{background:#fdecea;border:1px solid #f5b5ae;padding:12px 16px}
form.filters{display:flex;gap:10px;flex-wrap:wrap;align-items:end;background:#fff;
 border:1px solid #e1e4e8;padding:10px}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:#444}
select,input[type=text],input[type=search]{padding:4px 6px;font:inherit}
button{font:inherit;padding:4px 12px;cursor:pointer}
button.danger{background:#b3261e;color:#fff;border:1px solid #8c1d18;border-radius:4px}
.pager{display:flex;gap:14px;align-items:center;margin:8px 0}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px}
.card{background:#fff;border:1px solid #e1e4e8;padding:10px}
.card .n{font-size:22px;font-weight:600}
ol.chain{padding-left:22px}ol.chain li{margin:4px 0}
li.here{font-weight:600}
svg{background:#fff;border:1px solid #e1e4e8;max-width:100%;height:auto}
.actions{display:flex;gap:8px;flex-wrap:wrap}
#memory-list td:nth-child(5),#members td:nth-child(3){white-space:nowrap}
#hits td:nth-child(2){width:30%}
"""


def esc(value: object) -> str:
    """Text for an HTML body: `<`, `>`, `&` and quotes escaped."""
    return html.escape(str(value), quote=True)


def attr(value: object) -> str:
    """A value for a double-quoted attribute."""
    return html.escape(str(value), quote=True)


def url(path: str, **params: object) -> str:
    """A link with its query string; None and empty values are left out."""
    kept = {k: str(v) for k, v in params.items() if v is not None and v != ""}
    return path + ("?" + urlencode(kept) if kept else "")


def link(href: str, text: object, *, cls: str | None = None) -> str:
    c = f' class="{attr(cls)}"' if cls else ""
    return f'<a href="{attr(href)}"{c}>{esc(text)}</a>'


def fmt_time(ts: datetime | None) -> str:
    return "-" if ts is None else ts.strftime("%Y-%m-%d %H:%M")


def fmt_num(x: float, digits: int = 4) -> str:
    return f"{x:.{digits}f}"


def status_badge(status: str) -> str:
    return f'<span class="badge st-{attr(status)}">{esc(status)}</span>'


def tier_badge(tier: str) -> str:
    return f'<span class="badge tier">{esc(tier)}</span>'


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    *,
    cls: str | None = None,
    num: Iterable[int] = (),
    test_id: str | None = None,
) -> str:
    """A table from cells that are already HTML (escape text with `esc` first)."""
    numeric = set(num)
    c = f' class="{attr(cls)}"' if cls else ""
    tid = f' id="{attr(test_id)}"' if test_id else ""
    head = "".join(
        f'<th{" class=num" if i in numeric else ""}>{esc(h)}</th>' for i, h in enumerate(headers)
    )
    body = "".join(
        "<tr>" + "".join(
            f'<td{" class=num" if i in numeric else ""}>{cell}</td>' for i, cell in enumerate(r)
        ) + "</tr>"
        for r in rows
    )
    return f"<table{c}{tid}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def kv_table(pairs: Iterable[tuple[str, str]], *, test_id: str | None = None) -> str:
    """Two columns, a name and an HTML value."""
    tid = f' id="{attr(test_id)}"' if test_id else ""
    body = "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in pairs)
    return f'<table class="kv"{tid}><tbody>{body}</tbody></table>'


def page(
    title: str,
    body: str,
    *,
    namespace: str | None = None,
    query: str = "",
    allow_changes: bool = False,
    refresh: int | None = None,
) -> str:
    """The frame every page shares: a header with the namespace links and a search box.
    `refresh`: reload the page after that many seconds (a page still being computed)."""
    nav = [link("/", "namespaces")]
    search = ""
    if namespace is not None:
        nav.append(link(url("/namespace", ns=namespace), namespace))
        nav.append(link(url("/memories", ns=namespace), "memories"))
        search = (
            '<form method="get" action="/search" role="search">'
            f'<input type="hidden" name="ns" value="{attr(namespace)}">'
            f'<input type="search" name="q" value="{attr(query)}" '
            'placeholder="recall: ask the memory..." aria-label="recall query">'
            "<button type=submit>recall</button></form>"
        )
    mode = (
        '<span class="mode rw">changes allowed</span>' if allow_changes
        else '<span class="mode">read-only</span>'
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        + (f'<meta http-equiv="refresh" content="{int(refresh)}">' if refresh else "")
        + f"<title>{esc(title)} · reverie inspector</title><style>{CSS}</style></head><body>"
        f'<header><span class="brand">reverie inspector</span>{" · ".join(nav)}{mode}'
        f"{search}</header><main>{body}</main></body></html>"
    )


# ---------------------------------------------------------------------------- charts


def decay_svg(
    points: Sequence[tuple[float, float]],
    *,
    now_days: float,
    now_value: float,
    thresholds: Mapping[str, float],
    width: int = 640,
    height: int = 220,
) -> str:
    """A decay curve: salience (0..1) over days since the last access, the point for
    now, and dashed lines at the policy's thresholds."""
    left, right, top, bottom = 46, 14, 12, 34
    horizon = max((x for x, _ in points), default=1.0) or 1.0
    plot_w, plot_h = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + plot_w * min(max(x / horizon, 0.0), 1.0)

    def sy(y: float) -> float:
        return top + plot_h * (1.0 - min(max(y, 0.0), 1.0))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="decay curve" '
        'id="decay-curve">',
        f'<line x1="{left}" y1="{sy(0)}" x2="{left + plot_w}" y2="{sy(0)}" stroke="#999"/>',
        f'<line x1="{left}" y1="{sy(0)}" x2="{left}" y2="{sy(1)}" stroke="#999"/>',
    ]
    for y in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" font-size="10" text-anchor="end" '
            f'fill="#555">{y:.2f}</text>'
        )
    for i in range(5):
        x = horizon * i / 4
        parts.append(
            f'<text x="{sx(x):.1f}" y="{height - 18}" font-size="10" text-anchor="middle" '
            f'fill="#555">{x:.0f} d</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 4}" font-size="10" text-anchor="middle" '
        'fill="#555">days since the last access</text>'
    )
    for i, (name, y) in enumerate(thresholds.items()):
        # labels alternate right and middle, so close thresholds do not overprint
        x, anchor = (left + plot_w - 2, "end") if i % 2 == 0 else (left + plot_w * 0.55, "middle")
        parts.append(
            f'<line x1="{left}" y1="{sy(y):.1f}" x2="{left + plot_w}" y2="{sy(y):.1f}" '
            'stroke="#c62828" stroke-dasharray="4 3" stroke-width="0.8"/>'
            f'<text x="{x:.1f}" y="{sy(y) - 3:.1f}" font-size="9" '
            f'text-anchor="{anchor}" fill="#c62828">{esc(name)} {y:g}</text>'
        )
    path = " ".join(
        f"{'M' if i == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for i, (x, y) in enumerate(points)
    )
    parts.append(f'<path d="{path}" fill="none" stroke="#0b57d0" stroke-width="2"/>')
    parts.append(
        f'<circle cx="{sx(now_days):.1f}" cy="{sy(now_value):.1f}" r="4.5" fill="#e65100"/>'
        f'<text x="{sx(now_days) + 7:.1f}" y="{sy(now_value) - 6:.1f}" font-size="11" '
        f'fill="#e65100">now {now_value:.3f}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def timeline_svg(
    buckets: Sequence[tuple[str, Mapping[str, int]]],
    *,
    width: int = 760,
    height: int = 200,
) -> str:
    """Stacked bars, one per period: the memories created then, by their status now."""
    left, right, top, bottom = 46, 10, 22, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((sum(c.values()) for _, c in buckets), default=0) or 1
    bar = plot_w / max(len(buckets), 1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="timeline" id="timeline">',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        'stroke="#999"/>',
        f'<text x="{left - 6}" y="{top + 4}" font-size="10" text-anchor="end" '
        f'fill="#555">{peak}</text>',
        f'<text x="{left - 6}" y="{top + plot_h}" font-size="10" text-anchor="end" '
        'fill="#555">0</text>',
    ]
    lx = left
    for status, color in STATUS_COLOR.items():
        parts.append(
            f'<rect x="{lx}" y="4" width="10" height="10" fill="{color}"/>'
            f'<text x="{lx + 14}" y="13" font-size="11" fill="#333">{status}</text>'
        )
        lx += 110
    longest = max((len(label) for label, _ in buckets), default=1)
    label_every = max(1, math.ceil((longest * 6 + 10) / bar))  # ~6 px a character at 10 px
    for i, (label, counts) in enumerate(buckets):
        x = left + i * bar
        y = float(top + plot_h)
        for status, color in STATUS_COLOR.items():
            n = counts.get(status, 0)
            if not n:
                continue
            h = plot_h * n / peak
            y -= h
            parts.append(
                f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{max(bar - 2, 1):.1f}" '
                f'height="{h:.1f}" fill="{color}"><title>{esc(label)}: {n} {status}</title></rect>'
            )
        if i % label_every == 0:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{top + plot_h + 14}" font-size="10" '
                f'text-anchor="middle" fill="#555">{esc(label)}</text>'
            )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 4}" font-size="10" text-anchor="middle" '
        'fill="#555">created in (colour: status now)</text></svg>'
    )
    return "".join(parts)
