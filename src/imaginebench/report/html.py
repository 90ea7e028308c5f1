"""One self-contained HTML page of a report: the markdown tables as HTML tables, the PNG figures
embedded as data URIs (the page opens anywhere, offline, with no side files).

The converter reads only what :func:`imaginebench.report.aggregate.markdown` writes — ``#``
headings, paragraphs, ``- `` lists and pipe tables with ``*italic*`` rows and ``code`` spans — it is not a
general markdown parser.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping
from pathlib import Path

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.reference td { font-style: italic; color: #555; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #ddd; }
code { background: #f4f4f4; padding: 0 0.2em; }
"""


def _inline(text: str) -> str:
    """Escape ``text``, then ``code`` spans and ``*italic*``."""
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*([^*]+)\*", r"<em>\1</em>", out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(lines: list[str]) -> str:
    header, align, body = _cells(lines[0]), _cells(lines[1]), [_cells(x) for x in lines[2:]]
    numeric = [a.endswith(":") for a in align]
    rows = ["<tr>" + "".join(f"<th>{_inline(h)}</th>" for h in header) + "</tr>"]
    for cells in body:
        reference = bool(cells) and cells[0].startswith("*") and cells[0].endswith("*")
        tds = "".join(f'<td class="num">{_inline(c)}</td>' if i < len(numeric) and numeric[i] else
                      f"<td>{_inline(c.strip('*') if reference and i == 0 else c)}</td>"
                      for i, c in enumerate(cells))
        rows.append(f'<tr class="reference">{tds}</tr>' if reference else f"<tr>{tds}</tr>")
    return "<table>\n" + "\n".join(rows) + "\n</table>"


def markdown_to_html(text: str) -> str:
    """The body HTML of a report's markdown (headings, paragraphs, pipe tables)."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("#"):
            level = min(len(line) - len(line.lstrip("#")), 6)
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
            i += 1
        elif line.startswith("- "):
            j = i
            while j < len(lines) and lines[j].startswith("- "):
                j += 1
            out.append("<ul>\n" + "\n".join(f"<li>{_inline(x[2:].strip())}</li>" for x in lines[i:j]) + "\n</ul>")
            i = j
        elif line.lstrip().startswith("|"):
            j = i
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            out.append(_table(lines[i:j]) if j - i >= 2 else f"<p>{_inline(line)}</p>")
            i = j
        else:
            j = i
            while j < len(lines) and lines[j].strip() and not lines[j].startswith(("#", "|", "- ")):
                j += 1
            out.append(f"<p>{_inline(' '.join(x.strip() for x in lines[i:j]))}</p>")
            i = j
    return "\n".join(out)


def _data_uri(png: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode("ascii")


def html_page(report_markdown: str, figures: Mapping[str, Path], title: str = "ImagineBench results") -> str:
    """A whole HTML page: the report's tables, then each figure (caption → PNG file) embedded."""
    figs = "\n".join(f'<figure><img alt="{html.escape(caption)}" src="{_data_uri(Path(path))}">'
                     f"<figcaption>{html.escape(caption)}</figcaption></figure>"
                     for caption, path in figures.items())
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n'
            f"<style>{_STYLE}</style>\n</head>\n<body>\n{markdown_to_html(report_markdown)}\n"
            f"{'<h2>Figures</h2>' if figures else ''}\n{figs}\n</body>\n</html>\n")
