"""The monthly report as one self-contained HTML page: the tables and three inline SVG charts.

The page opens from disk with no network: styles are inline, the charts are SVG drawn by
matplotlib (:mod:`gate.reporters.report_charts`) and embedded, there is no script, and a
Content-Security-Policy of ``default-src 'none'`` forbids the browser to fetch anything
should something slip in. Every string from a spec, a tag or a record is HTML-escaped, its
bidirectional overrides shown as U+FFFD.
"""

from __future__ import annotations

from html import escape as _escape

from gate.report.model import MonthReport
from gate.reporters.markup import without_bidi
from gate.reporters.report_charts import charts
from gate.reporters.report_tables import Table, headline, note_lines, tables

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 80rem;
       padding: 0 1rem; color: #1d2327; }
h1 { font-size: 1.3rem; } h2 { font-size: 1.05rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { border-bottom: 1px solid #dcdcde; padding: .25rem .6rem; }
th { text-align: left; background: #f6f7f7; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1rem 0; } figure svg { max-width: 100%; height: auto; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(30rem, 1fr)); gap: 1rem; }
"""
_TITLES = {
    "budget": "Spend against budget per team",
    "cost-per-qualified": "Cost per qualified model over the months",
    "waste": "Waste by kind",
}


def render(report: MonthReport) -> str:
    """The whole page."""
    drawn = charts(report)
    figures = "".join(
        f'<figure class="chart" id="chart-{name}" aria-label="{escape(_TITLES[name])}">'
        f"{svg}<figcaption>{escape(_TITLES[name])}</figcaption></figure>"
        for name, svg in drawn.items()
    )
    body = [
        f"<h1>{escape(headline(report))}</h1>",
        f'<section class="charts">{figures}</section>',
        *(_table(table) for table in tables(report)),
    ]
    notes = note_lines(report)
    if notes:
        items = "".join(f"<li>{escape(note)}</li>" for note in notes)
        body.append(f"<h2>Notes</h2><ul>{items}</ul>")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>budget-gate report {escape(str(report.period))}</title>"
        f"<style>{_CSS}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def escape(value: str) -> str:
    """HTML text that shows as written: escaped, and no bidirectional override kept."""
    return _escape(without_bidi(value))


def _table(table: Table) -> str:
    title = f"<h2>{escape(table.title)}</h2>"
    if not table.rows:
        return f"{title}<p>{escape(table.empty)}</p>"
    head = "".join(f"<th>{escape(cell)}</th>" for cell in table.header)
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{escape(cell)}</td>" if i in table.left else f'<td class="n">{escape(cell)}</td>'
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in table.rows
    )
    return f"{title}<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
