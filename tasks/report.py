"""The job report a person reads: `report.html` (self-contained, escaped, phone-friendly) and
`report.md`. Flagged citations and unsupported claims come first, each with its reason.

Pure functions from the job's frames to text; tasks/store.py writes the files."""

import html
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from tasks.dedupe.cluster import UNDIRECTED_LINKS
from tasks.dedupe.job import repeats_within_jobs
from tasks.metrics import MISSING_REASON

FLAGGED = ("mismatch", "not_found", "unmatched")
STATUS_ORDER = ("verified", "mismatch", "not_found", "unmatched", "unverified")
STATUS_COLOURS = {
    "verified": "#1a7f37",
    "mismatch": "#cf222e",
    "not_found": "#cf222e",
    "unmatched": "#bc4c00",
    "unverified": "#6e7781",
}


@dataclass
class ReportData:
    job_id: str
    citations: pl.DataFrame
    claims: pl.DataFrame = field(default_factory=pl.DataFrame)
    input_errors: pl.DataFrame = field(default_factory=pl.DataFrame)
    metrics: dict[str, Any] = field(default_factory=dict)
    style: str = ""
    bibliography_html: list[str] = field(default_factory=list)  # already escaped by render
    bibliography_markdown: list[str] = field(default_factory=list)  # escaped by pandoc
    changes: pl.DataFrame | None = None  # scheduled audits: what changed since the last one
    links: pl.DataFrame = field(default_factory=pl.DataFrame)  # work_id_a, work_id_b, kind


def _column(frame: pl.DataFrame, name: str) -> bool:
    return name in frame.columns


def status_counts(citations: pl.DataFrame) -> dict[str, int]:
    counts = dict(citations.group_by("status").len().iter_rows()) if citations.height else {}
    return {s: int(counts.get(s, 0)) for s in STATUS_ORDER}


def flagged_citations(citations: pl.DataFrame) -> pl.DataFrame:
    """Citations a reader must look at, worst first: retracted, then failed statuses, then
    corrections/concerns, then the ones we could not check."""
    if not citations.height:
        return citations
    rank = (
        pl.when(pl.col("retracted"))
        .then(0)
        .when(pl.col("status").is_in(FLAGGED))
        .then(1)
        .when(pl.col("corrected") | pl.col("expression_of_concern"))
        .then(2)
        .when(pl.col("status") == "unverified")
        .then(3)
        .otherwise(None)
    )
    return (
        citations.with_columns(rank.alias("_rank"))
        .filter(pl.col("_rank").is_not_null())
        .sort(["_rank", "status", "source_file", "entry_key"])
        .drop("_rank")
    )


def flag_label(row: dict[str, Any]) -> str:
    labels = []
    if row.get("retracted"):
        labels.append("RETRACTED")
    if row.get("corrected"):
        labels.append("corrected")
    if row.get("expression_of_concern"):
        labels.append("expression of concern")
    labels.append(str(row["status"]))
    return ", ".join(labels)


def flagged_list(citations: pl.DataFrame) -> list[dict[str, Any]]:
    """The flagged citations as plain dicts (the CLI's and the flows' summaries)."""
    return [
        {
            "source_file": row["source_file"],
            "entry_key": row["entry_key"],
            "label": flag_label(row),
            "reason": row["reason"] or row["error"] or "",
            "error": row["error"],
        }
        for row in flagged_citations(citations).iter_rows(named=True)
    ]


def several_jobs(citations: pl.DataFrame) -> bool:
    """A scheduled audit's report covers several jobs: one file audited as two jobs gives two
    identical rows, which only the job tells apart."""
    return _column(citations, "job_id") and citations["job_id"].n_unique() > 1


def cited_as(row: dict[str, Any]) -> str:
    title = row.get("claimed_title") or row.get("raw") or row.get("doi") or row.get("pmid") or ""
    who = row.get("claimed_authors") or ""
    year = row.get("claimed_year")
    head = ", ".join(str(x) for x in (who.split(";")[0] if who else "", year) if x)
    return f"{head}: {title}" if head else str(title)


def claim_citations(
    claims: pl.DataFrame, citations: pl.DataFrame
) -> dict[str, list[dict[str, Any]]]:
    """Each claim's citations (entry key, status, flags, reason), in the order the claim cites
    them: what a crew reader checks first when a claim is unsupported."""
    if not claims.height or not _column(claims, "citation_ids"):
        return {}
    by_id = {row["citation_id"]: row for row in citations.iter_rows(named=True)}
    return {
        claim["claim_id"]: [by_id[cid] for cid in claim["citation_ids"] or [] if cid in by_id]
        + [_missing_citation(written) for written in claim.get("missing_citations") or []]
        for claim in claims.iter_rows(named=True)
    }


def _missing_citation(written: str) -> dict[str, Any]:
    """A citation the input names but does not hold (`[12]` past the end of its list): scored as
    not found (tasks/metrics.py), and shown so, for the reader to see why the claim fails."""
    return {"entry_key": written, "status": "not_found", "reason": MISSING_REASON}


def unsupported_claims(claims: pl.DataFrame, citations: pl.DataFrame) -> list[dict[str, Any]]:
    """Claims whose citations do not hold them up, weakest first, each with its citations'
    statuses and reasons."""
    if not claims.height or not _column(claims, "unsupported"):
        return []
    cited = claim_citations(claims, citations)
    return [
        {
            "claim_id": row["claim_id"],
            "claim_text": row["claim_text"],
            "strength": row["strength"],
            "citations": [
                {
                    "entry_key": c["entry_key"],
                    "status": flag_label(c),
                    "reason": c.get("reason") or c.get("error") or "",
                }
                for c in cited.get(row["claim_id"], [])
            ],
        }
        for row in claims.filter(pl.col("unsupported")).sort("strength").iter_rows(named=True)
    ]


def histogram(values: list[float], bins: int = 10) -> list[int]:
    counts = [0] * bins
    for v in values:
        counts[min(int(v * bins), bins - 1)] += 1
    return counts


# ---------------------------------------------------------------- HTML

_CSS = """
body{font:16px/1.5 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2328}
main{max-width:960px;margin:auto;padding:1rem}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #d0d7de}
.counts{display:flex;flex-wrap:wrap;gap:.5rem}
.badge{border-radius:1rem;padding:.2rem .8rem;color:#fff;font-weight:600}
.card{border:1px solid #d0d7de;border-left-width:6px;border-radius:6px;padding:.5rem .8rem;
margin:.5rem 0;overflow-wrap:anywhere}
.reason{color:#57606a}.key{font-family:ui-monospace,monospace;font-size:.85rem}
.bar{background:#eaeef2;border-radius:4px;height:.8rem}
.bar>span{display:block;height:100%;border-radius:4px}
.hist{display:flex;align-items:flex-end;gap:2px;height:120px}
.hist div{flex:1;background:#0969da;min-height:1px}
.axis{display:flex;justify-content:space-between;font-size:.8rem;color:#57606a}
table{border-collapse:collapse;width:100%;font-size:.9rem}td,th{border-bottom:1px solid #d0d7de;
padding:.3rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
.csl-entry{margin:.4rem 0;padding-left:2em;text-indent:-2em;overflow-wrap:anywhere}
@media (max-width:600px){body{font-size:15px}main{padding:.5rem}}
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _html_counts(counts: dict[str, int]) -> str:
    return "".join(
        f'<span class="badge" style="background:{STATUS_COLOURS[s]}">{_e(s)}: {n}</span>'
        for s, n in counts.items()
    )


def _html_flagged(flagged: pl.DataFrame) -> str:
    if not flagged.height:
        return "<p>No citation needs attention.</p>"
    cards = []
    jobs = several_jobs(flagged)
    for row in flagged.iter_rows(named=True):
        colour = "#cf222e" if row.get("retracted") else STATUS_COLOURS.get(row["status"], "#6e7781")
        cards.append(
            f'<div class="card" style="border-left-color:{colour}">'
            f"<strong>{_e(flag_label(row))}</strong> "
            f'<span class="key">{_e(row["job_id"]) + " · " if jobs else ""}'
            f"{_e(row['source_file'])} · {_e(row['entry_key'])}</span>"
            f"<div>{_e(cited_as(row))}</div>"
            f'<div class="reason">{_e(row.get("reason") or row.get("error") or "")}</div></div>'
        )
    return "".join(cards)


def _html_claim_citations(cited: list[dict[str, Any]]) -> str:
    if not cited:
        return '<div class="reason">no citation</div>'
    items = "".join(
        f'<li><span class="key">{_e(c["entry_key"])}</span> <strong>{_e(flag_label(c))}'
        f'</strong> <span class="reason">{_e(c.get("reason") or c.get("error") or "")}</span></li>'
        for c in cited
    )
    return f"<ul>{items}</ul>"


def _html_claims(claims: pl.DataFrame, citations: pl.DataFrame) -> str:
    if not claims.height or not _column(claims, "strength"):
        return "<p>This job has no claims.</p>"
    ordered = claims.sort(["unsupported", "strength"], descending=[True, False])
    cited = claim_citations(claims, citations)
    rows = []
    for row in ordered.iter_rows(named=True):
        pct = round(100 * (row["strength"] or 0))
        colour = "#cf222e" if row["unsupported"] else "#1a7f37" if pct >= 60 else "#bc4c00"
        label = " <strong>unsupported</strong>" if row["unsupported"] else ""
        rows.append(
            f'<div class="card" style="border-left-color:{colour}">{_e(row["claim_text"])}{label}'
            f'<div class="bar" title="strength {pct}%"><span style="width:{pct}%;'
            f'background:{colour}"></span></div><div class="reason">strength {pct}% · '
            f"{row.get('verified_count', 0)} of {row.get('citation_count', 0)} citations "
            f"verified</div>{_html_claim_citations(cited.get(row['claim_id'], []))}</div>"
        )
    return "".join(rows)


def _html_histogram(citations: pl.DataFrame) -> str:
    if not _column(citations, "confidence") or not citations.height:
        return "<p>No confidence scores.</p>"
    counts = histogram([float(v) for v in citations["confidence"].drop_nulls()])
    top = max(counts) or 1
    bars = "".join(
        f'<div style="height:{round(100 * c / top)}%" title="{i / 10:.1f}-{(i + 1) / 10:.1f}: '
        f'{c}"></div>'
        for i, c in enumerate(counts)
    )
    return f'<div class="hist">{bars}</div><div class="axis"><span>0</span><span>1</span></div>'


def _html_table(frame: pl.DataFrame, columns: list[str]) -> str:
    present = [c for c in columns if _column(frame, c)]
    head = "".join(f"<th>{_e(c)}</th>" for c in present)
    body = "".join(
        "<tr>" + "".join(f"<td>{_e(row[c])}</td>" for c in present) + "</tr>"
        for row in frame.select(present).iter_rows(named=True)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


# How a link between works reads, from its first work to its second.
RELATIONS = {
    "preprint-of": "is a preprint of",
    "version-of": "is another version of",
    "co-publication": "is co-published with",
    "erratum-of": "is an erratum to",
    "retraction-of": "is the retraction notice of",
    "expression-of-concern-for": "is an expression of concern for",
    "chapter-of-same-book": "is a chapter of the same book as",
    "part-of": "is part of",
}


def related_citations(citations: pl.DataFrame, links: pl.DataFrame) -> list[dict[str, str]]:
    """Citations of this job whose works are related but not the same (a preprint and its
    published version, a conference paper and its journal version, a paper and its retraction
    notice): one row per link of a kind in RELATIONS, naming the first citation of each work
    (file and entry), in input order of the citation each row starts with."""
    if links.is_empty() or not _column(citations, "work_id"):
        return []
    first = citations.with_row_index("position").group_by("work_id", maintain_order=True).first()
    cited = {row["work_id"]: row for row in first.iter_rows(named=True)}
    rows = []
    for a, b, kind in links.select("work_id_a", "work_id_b", "kind").iter_rows():
        if a in cited and b in cited and kind in RELATIONS:
            x, y = cited[a], cited[b]
            if kind in UNDIRECTED_LINKS and y["position"] < x["position"]:
                x, y = y, x
            rows.append(
                (
                    (x["position"], y["position"]),
                    {
                        "citation": f"{x['source_file']}: {x['entry_key']}",
                        "relation": RELATIONS[kind],
                        "related to": f"{y['source_file']}: {y['entry_key']}",
                    },
                )
            )
    return [row for _, row in sorted(rows, key=lambda pair: pair[0])]


def render_html(data: ReportData) -> str:
    cites = data.citations
    counts = status_counts(cites)
    flagged = flagged_citations(cites)
    dups = repeats_within_jobs(cites)
    sections = [
        f"<h1>Citation audit: {_e(data.job_id)}</h1>",
        f"<p>{cites.height} citations · {data.input_errors.height} input errors</p>",
        f'<div class="counts">{_html_counts(counts)}</div>',
        f"<h2>Needs attention ({flagged.height})</h2>{_html_flagged(flagged)}",
        f"<h2>Claims</h2>{_html_claims(data.claims, cites)}",
        f"<h2>Confidence</h2>{_html_histogram(cites)}",
    ]
    if data.changes is not None:
        sections.append(
            f"<h2>Changes since the last audit ({data.changes.height})</h2>"
            + _html_table(data.changes, list(data.changes.columns))
        )
    sections.append(
        f"<h2>Duplicates found ({dups.height})</h2>"
        + (
            _html_table(dups, ["source_file", "entry_key", "duplicate_of", "dup_reason", "work_id"])
            if dups.height
            else "<p>No citation duplicates another.</p>"
        )
    )
    related = related_citations(cites, data.links)
    if related:
        sections.append(
            f"<h2>Related works cited together ({len(related)})</h2>"
            + _html_table(pl.DataFrame(related), ["citation", "relation", "related to"])
        )
    if data.input_errors.height:
        sections.append(
            "<h2>Input errors</h2>"
            + _html_table(data.input_errors, ["source_file", "entry_key", "line", "reason"])
        )
    if data.bibliography_html:
        sections.append(
            f"<h2>Bibliography ({_e(data.style)})</h2>"
            + "".join(f'<div class="csl-entry">{entry}</div>' for entry in data.bibliography_html)
        )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>citeaudit: {_e(data.job_id)}</title><style>{_CSS}</style></head>"
        f"<body><main>{''.join(sections)}</main></body></html>\n"
    )


# ---------------------------------------------------------------- Markdown


def _md(value: Any) -> str:
    """Plain text safe in a Markdown table cell or list item (no HTML, no table breaks)."""
    text = "" if value is None else str(value)
    return html.escape(text, quote=False).replace("|", "\\|").replace("\n", " ")


def render_markdown(data: ReportData) -> str:
    cites = data.citations
    counts = status_counts(cites)
    lines = [f"# Citation audit: {_md(data.job_id)}", ""]
    lines.append(f"{cites.height} citations, {data.input_errors.height} input errors.")
    lines.append("")
    lines.append("| status | count |")
    lines.append("|---|---:|")
    lines.extend(f"| {s} | {n} |" for s, n in counts.items())
    flagged = flagged_citations(cites)
    lines += ["", f"## Needs attention ({flagged.height})", ""]
    jobs = several_jobs(flagged)
    for row in flagged.iter_rows(named=True):
        job = f"job `{_md(row['job_id'])}` " if jobs else ""
        lines.append(
            f"- **{_md(flag_label(row))}** {job}`{_md(row['entry_key'])}`"
            f" ({_md(row['source_file'])}):"
            f" {_md(cited_as(row))} — {_md(row.get('reason') or row.get('error'))}"
        )
    if data.claims.height and _column(data.claims, "strength"):
        lines += ["", "## Claims", ""]
        ordered = data.claims.sort(["unsupported", "strength"], descending=[True, False])
        cited = claim_citations(data.claims, cites)
        for row in ordered.iter_rows(named=True):
            mark = " **unsupported**" if row["unsupported"] else ""
            lines.append(
                f"- {_md(row['claim_text'])}{mark} (strength {row['strength']:.2f}, "
                f"{row.get('verified_count', 0)}/{row.get('citation_count', 0)} verified)"
            )
            lines.extend(
                f"  - `{_md(c['entry_key'])}` {_md(flag_label(c))}: "
                f"{_md(c.get('reason') or c.get('error'))}"
                for c in cited.get(row["claim_id"], [])
            )
    if data.changes is not None:
        lines += ["", f"## Changes since the last audit ({data.changes.height})", ""]
        for row in data.changes.iter_rows(named=True):
            lines.append("- " + "; ".join(f"{k}: {_md(v)}" for k, v in row.items()))
    dups = repeats_within_jobs(cites)
    if dups.height:
        lines += ["", f"## Duplicates found ({dups.height})", ""]
        for row in dups.iter_rows(named=True):
            lines.append(
                f"- `{_md(row['entry_key'])}` duplicates `{_md(row['duplicate_of'])}`"
                f" ({_md(row.get('dup_reason'))})"
            )
    related = related_citations(cites, data.links)
    if related:
        lines += ["", f"## Related works cited together ({len(related)})", ""]
        lines.extend(
            f"- `{_md(row['citation'])}` {_md(row['relation'])} `{_md(row['related to'])}`"
            for row in related
        )
    if data.input_errors.height:
        lines += ["", "## Input errors", ""]
        for row in data.input_errors.iter_rows(named=True):
            where = row["entry_key"] or row["line"] or ""
            lines.append(f"- {_md(row['source_file'])} {_md(where)}: {_md(row['reason'])}")
    if data.bibliography_markdown:
        lines += ["", f"## Bibliography ({_md(data.style)})", ""]
        lines.extend(f"- {' '.join(entry.split())}" for entry in data.bibliography_markdown)
    return "\n".join(lines) + "\n"
