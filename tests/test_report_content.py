"""What a researcher reads in the report: duplicates and changes by title and entry key, the
changes of a scheduled audit grouped by kind with old and new values, each flagged citation
beside its registry record with the disagreeing fields marked and a suggested fix, identifiers
as links, a histogram with axes and counts, identical problems once, retractions first."""

import re
from datetime import UTC, datetime

import duckdb
import polars as pl

from tasks.job.changes import detect_changes
from tasks.report import ReportData, render_html, render_markdown
from tasks.report.changes import CHANGE_KINDS
from tasks.report.selection import select
from tasks.report.totals import reported_citations
from tasks.score.metrics import CLAIM_SCORE_SCHEMA
from tests.report_data import citation, citations

HEX_ID = "5166950df2ea1745"


def both(data: ReportData) -> tuple[str, str]:
    return render_html(data), render_markdown(data)


def headings(page: str) -> list[str]:
    return re.findall(r"<h2>([^<(]*)", page)


def test_duplicates_are_named_by_title_and_entry_key_never_by_ids() -> None:
    cited = citations(
        citation(entry_key="tosatto2015", citation_id=HEX_ID, work_id="w-77", status="verified",
                 matched_title="Single-molecule FRET studies", doi="10.1038/srep16696"),
        citation(entry_key="[1]", citation_id="9f00", source_file="crew.md", work_id="w-77",
                 status="verified", duplicate_of=HEX_ID, dup_reason="doi",
                 matched_title="Single-molecule FRET studies"),
    )  # fmt: skip
    (dup,) = select(ReportData("j", cited)).duplicates
    assert dup.title == "Single-molecule FRET studies" and dup.reasons == ["doi"]
    assert [(p.source_file, p.entry_key) for p in dup.places] == [
        ("refs.bib", "tosatto2015"),
        ("crew.md", "[1]"),
    ]
    for page in both(ReportData("j", cited)):
        section = page.split("Duplicates found (1)")[1]
        assert "Single-molecule FRET studies" in section and "tosatto2015" in section
        assert HEX_ID not in section and "w-77" not in section and "9f00" not in section


def scheduled(before: list[dict[str, object]], after: list[dict[str, object]]) -> ReportData:
    now = datetime(2026, 11, 23, tzinfo=UTC)
    updates = citations(*after)
    changes = detect_changes(citations(*before), updates, now)
    return ReportData("audit-1", citations=updates, changes=changes)


def test_changes_are_grouped_by_kind_with_the_old_and_new_value_side_by_side() -> None:
    common = {"status": "verified", "matched_id": "10.1/a", "matched_title": "A work"}
    data = scheduled(
        before=[
            citation(entry_key="later", citation_id="c2", status="not_found"),
            citation(entry_key="moved", citation_id="c3", **common, matched_container="Old J"),
            citation(entry_key="gone", citation_id="c1", **common),
        ],
        after=[
            citation(entry_key="later", citation_id="c2", status="verified",
                     matched_id="10.1/b", matched_title="Now Registered"),
            citation(entry_key="moved", citation_id="c3", **common, matched_container="New J"),
            citation(entry_key="gone", citation_id="c1", **common, retracted=True),
        ],
    )  # fmt: skip
    groups = select(data).changes
    assert groups is not None
    assert [g.kind for g in groups] == list(CHANGE_KINDS[:2]) + [CHANGE_KINDS[3]]
    retracted, resolving, metadata = groups
    assert [c.place.entry_key for c in retracted.changes] == ["gone"]
    assert retracted.changes[0].place.cited_as == "A work"
    (later,) = resolving.changes
    fields = {f.name: (f.before, f.after) for f in later.fields}
    assert fields["status"] == ("not_found", "verified")
    assert fields["matched_title"] == ("", "Now Registered")
    assert {f.name: (f.before, f.after) for f in metadata.changes[0].fields} == {
        "matched_container": ("Old J", "New J")
    }
    page, markdown = both(data)
    assert page.index("Newly retracted") < page.index("Newly resolving") < page.index("Metadata")
    assert "<td>Old J</td><td>New J</td>" in page
    assert "matched_container: Old J → New J" in markdown
    assert "c1" not in page.split("Changes since")[1]


def test_a_mismatch_is_shown_beside_its_record_field_by_field_with_a_suggestion() -> None:
    cited = citations(
        citation(entry_key="wrongdoi2019", status="mismatch", doi="10.1016/j.x.2019.1",
                 claimed_title="Deep Learning for Protein Folding", claimed_authors="Smith, Jane",
                 claimed_year=2019, claimed_container="Nature", registry="crossref",
                 matched_id="10.1016/j.x.2019.1", matched_title="Cyclic flange buckling",
                 matched_authors="Wu, Tung-Yu", matched_year=2019,
                 matched_container="Engineering Structures", agreement_title=0.05,
                 agreement_authors=0.0, agreement_year=1.0, agreement_container=0.1,
                 reason="DOI resolves to a different paper"),
    )  # fmt: skip
    (problem,) = select(ReportData("j", cited)).flagged
    rows = {r.name: (r.cited, r.record, r.disagrees) for r in problem.comparison}
    assert rows == {
        "title": ("Deep Learning for Protein Folding", "Cyclic flange buckling", True),
        "authors": ("Smith, Jane", "Wu, Tung-Yu", True),
        "year": ("2019", "2019", False),
        "venue": ("Nature", "Engineering Structures", True),
    }
    assert "Cyclic flange buckling" in problem.suggestion
    assert "no registry record matched the title and authors you cite" in problem.suggestion
    page, markdown = both(ReportData("j", cited))
    assert page.count('class="disagree"') == 3
    assert "**title differs**: Deep Learning for Protein Folding → Cyclic flange buckling" in (
        markdown
    )


def test_a_mismatch_suggests_the_record_its_cited_title_verifies_against() -> None:
    cited = citations(
        citation(entry_key="wrongdoi2019", status="mismatch", doi="10.1016/j.x.2019.1",
                 claimed_title="Deep Learning for Protein Folding", registry="crossref",
                 matched_id="10.1016/j.x.2019.1", matched_title="Cyclic flange buckling",
                 agreement_title=0.05, suggested_registry="dblp",
                 suggested_id="journals/nature/Smith19",
                 suggested_title="Deep learning for protein folding"),
    )  # fmt: skip
    (problem,) = select(ReportData("j", cited)).flagged
    assert "dblp record journals/nature/Smith19" in problem.suggestion
    assert "Deep learning for protein folding" in problem.suggestion
    page, markdown = both(ReportData("j", cited))
    assert "journals/nature/Smith19" in page
    assert "journals/nature/Smith19" in markdown


def test_dois_pmids_and_arxiv_ids_are_links() -> None:
    cited = citations(
        citation(entry_key="a", status="not_found", doi="10.1000/xyz(1)"),
        citation(entry_key="b", status="not_found", pmid="29424689"),
        citation(entry_key="c", status="unmatched", arxiv="2101.00001"),
    )
    page, markdown = both(ReportData("j", cited))
    for url in (
        "https://doi.org/10.1000/xyz%281%29",
        "https://pubmed.ncbi.nlm.nih.gov/29424689/",
        "https://arxiv.org/abs/2101.00001",
    ):
        assert f'href="{url}"' in page and f"(<{url}>)" in markdown


def test_the_histogram_has_axes_and_a_count_on_every_bar() -> None:
    cited = citations(*[citation(entry_key=f"k{i}", status="verified") for i in range(4)])
    cited = cited.with_columns(pl.Series("confidence", [0.05, 0.72, 0.75, 1.0]))
    bins = select(ReportData("j", cited)).histogram
    assert bins is not None and [b.count for b in bins] == [1, 0, 0, 0, 0, 0, 0, 2, 0, 1]
    page, markdown = both(ReportData("j", cited))
    assert re.findall(r'<span class="count">(\d+)</span>', page) == [str(b.count) for b in bins]
    ticks = re.findall(r'<span class="tick[^"]*">([\d.]+)</span>', page)
    assert ticks == [f"{i / 10:.1f}" for i in range(11)]
    assert ">citations<" in page and "<figcaption>confidence" in page
    assert "| 0.7–0.8 | 2 |" in markdown


def test_identical_problems_are_listed_once_with_every_citation() -> None:
    cited = citations(
        citation(entry_key="p1", source_file="a.md", status="not_found", pmid="29424689",
                 reason="PubMed does not hold PMID 29424689"),
        citation(entry_key="p1", source_file="b.md", status="not_found", pmid="29424689",
                 reason="PubMed does not hold PMID 29424689"),
        *[citation(entry_key=f"u{i}", status="unverified", claimed_title=f"Work {i}",
                   reason="offline") for i in range(3)],
    )  # fmt: skip
    flagged = select(ReportData("j", cited)).flagged
    assert [(p.label, len(p.places)) for p in flagged] == [("not_found", 2), ("unverified", 3)]
    page = render_html(ReportData("j", cited))
    assert page.count("PubMed does not hold PMID 29424689") == 1
    assert "Needs attention (5)" in page
    assert all(f"Work {i}" in page for i in range(3))


def test_retracted_works_lead_with_their_notice_and_are_not_repeated() -> None:
    cited = citations(
        citation(entry_key="bad", status="verified", retracted=True, doi="10.1/bad",
                 claimed_title="A retracted study", notice_kind="retraction",
                 notice_id="10.9999/notice", notice_date="2025-01-01",
                 notice_source="retraction-watch", notice_reason="Fabricated data"),
        citation(entry_key="typo", status="not_found", doi="10.1/typo"),
    )  # fmt: skip
    page, markdown = both(ReportData("j", cited))
    assert headings(page)[:2] == ["Retracted, corrected or of concern ", "Needs attention "]
    notices = page.split("<h2>Needs attention")[0]
    for shown in ("A retracted study", "2025-01-01", "retraction-watch", "Fabricated data"):
        assert shown in notices
    assert 'href="https://doi.org/10.9999/notice"' in notices
    assert "A retracted study" not in page.split("<h2>Needs attention")[1].split("<h2>Claims")[0]
    assert markdown.index("## Retracted") < markdown.index("## Needs attention")
    assert "[10.9999/notice](<https://doi.org/10.9999/notice>)" in markdown


def test_a_claim_whose_works_have_no_abstract_shows_its_support_undetermined() -> None:
    cited = citations(
        citation(entry_key="bare", status="verified"),
        citation(entry_key="abstracted", status="verified"),
    )

    def pair(citation_id: str, support: float | None) -> dict[str, object]:
        label = "no abstract" if support is None else "related"
        return {
            "citation_id": citation_id,
            "support": support,
            "label": label,
            "evidence": None,
            "verdict": None,
        }

    claims = pl.DataFrame(
        {
            "claim_id": ["c1", "c2"],
            "claim_text": ["Nobody can tell from abstracts.", "The abstract says so."],
            "citation_ids": [["bare"], ["abstracted"]],
            "strength": [1.0, 1.0],
            "unsupported": [False, False],
            "verified_count": [1, 1],
            "citation_count": [1, 1],
            "citation_support": [[pair("bare", None)], [pair("abstracted", 0.71)]],
        },
        schema_overrides={"citation_support": CLAIM_SCORE_SCHEMA["citation_support"]},
    )
    page, markdown = both(ReportData(job_id="j", citations=cited, claims=claims))
    cards = page[page.index("<h2>Claims</h2>") :].split('<div class="card"')[1:]
    undetermined, supported = (
        next(c for c in cards if text in c) for text in ("Nobody", "says so")
    )
    assert "support undetermined" in undetermined and "#1a7f37" not in undetermined  # not green
    assert "support undetermined" not in supported and "#1a7f37" in supported
    assert "- Nobody can tell from abstracts. **support undetermined**" in markdown
    assert "- The abstract says so. (strength 1.00" in markdown


def test_counts_of_one_are_singular_in_both_reports_and_the_summary() -> None:
    from models.audit import InputError
    from models.job import JobSummary
    from tasks.frames import input_errors_frame
    from tasks.report.summary import summary_markdown

    error = InputError(source_file="refs.bib", entry_key="broken", reason="no closing brace")
    data = ReportData(
        job_id="j",
        citations=citations(citation(entry_key="only", status="verified")),
        input_errors=input_errors_frame("j", [error]),
    )
    summary = JobSummary(
        job_id="j", out="out/j", citations=1, status_counts={"verified": 1}, input_errors=[error]
    )
    for text in (*both(data), summary_markdown(summary)):
        assert "1 citation" in text and "1 input error" in text
        assert "1 citations" not in text and "1 input errors" not in text


def test_the_list_a_big_import_keeps_batch_by_batch_holds_only_its_own_strings() -> None:
    """A bulk import keeps its report's flagged citations across batches read from the library
    (Arrow, as DuckDB gives them). The rows kept come from every batch; they must not keep
    every batch's strings alive (+1.3 GB at a million citations)."""
    con = duckdb.connect()
    shown = None
    for batch in range(30):
        rows = con.execute(
            "SELECT 'c' || i || '-' || $b AS citation_id, 'not_found' AS status, "
            "false AS retracted, false AS corrected, false AS expression_of_concern, "
            "'refs.bib' AS source_file, lpad(i::VARCHAR, 6, '0') || '-' || $b AS entry_key, "
            "repeat('t', 200) || i AS title FROM range(1000) t(i)",
            {"b": batch},
        ).to_arrow_table()
        more = pl.DataFrame(rows)
        shown = reported_citations(more.head(0) if shown is None else shown, more, 500)
    assert shown is not None and shown.height == 500
    assert shown["entry_key"].str.split("-").list.last().n_unique() == 30  # from every batch
    held = shown.to_arrow(compat_level=pl.CompatLevel.newest()).get_total_buffer_size()
    assert held < 3 * shown.to_arrow().get_total_buffer_size()
