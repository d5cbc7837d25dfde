"""CSL rendering against citeproc-js's renderings of 46 real items, and on hostile items.

What counts as a match (read with tests/fixtures/csl/README.md):
- Whitespace is normalised: runs of any Unicode whitespace (spaces, no-break and thin spaces,
  newlines) become one space, ends are stripped. A reader cannot see these differences.
- Nothing else is normalised: not quotes, dashes, case, punctuation or initials.
- A difference counts as citeproc-js's error, not ours, only when undoing one documented
  citeproc-js defect in its string gives exactly our string:
  * `.,”`: a comma added after a title that ends in a full stop (the README's own example);
  * a non-English original title title-cased: CSL 1.0.2 says text-case="title" applies to
    English items only, and citeproc-js itself leaves the same item's French title alone.
  Every such case is counted and printed separately, never folded into the raw match count.
"""

import html
import json
import re
import threading
import time
import unicodedata
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import psutil
import pytest

from models.csl import CSLItem
from tasks.render import citeproc
from tasks.render.citeproc import (
    STYLES,
    UNCONFIRMED_HEADING,
    Ahead,
    Bibliography,
    bibliography,
    pandoc,
    render_bibliographies,
    render_bibliography,
    to_html,
    to_markdown,
    to_text,
)
from tasks.render.citeproc.items import first_author_batches
from tasks.render.citeproc.styles import initials_take_period

FIXTURES = Path(__file__).parent / "fixtures" / "csl"
REFERENCE_FILES = {name: file.removesuffix(".csl") for name, file in STYLES.items()}
TARGET = 0.95
_FRENCH_TITLE = ("Hollande Dans Le Bourbier de l’affaire", "Hollande dans le bourbier de l’affaire")


def normalise(text: str) -> str:
    return " ".join(text.split())


def reference_defect(ours: str, reference: str) -> str | None:
    """The documented citeproc-js defect that fully explains the difference, if one does."""
    if reference.replace(".,”", ".”") == ours:
        return "comma after a title's full stop"
    if reference.replace(*_FRENCH_TITLE) == ours:
        return "French title title-cased"
    return None


@dataclass
class Fidelity:
    total: int = 0
    matched: int = 0
    reference_defects: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> int:
        return self.matched + len(self.reference_defects)


def compare(bibliography: Bibliography, style: str, part: str) -> Fidelity:
    path = FIXTURES / "citeproc-js" / f"{REFERENCE_FILES[style]}.text.jsonl"
    references = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    by_position = {entry.position: entry for entry in bibliography.entries}
    result = Fidelity(total=len(references))
    for reference in references:
        entry = by_position[reference["index"]]
        ours = normalise(entry.text if part == "bibliography" else entry.citation.text)
        theirs = normalise(reference[part])
        if ours == theirs:
            result.matched += 1
        elif defect := reference_defect(ours, theirs):
            result.reference_defects.append(f"{reference['id']}: {defect}")
        else:
            result.mismatches.append(f"{reference['id']}\n  citeproc-js: {theirs}\n  ours: {ours}")
    return result


@pytest.fixture(scope="module")
def items() -> list[CSLItem]:
    data = json.loads((FIXTURES / "items.json").read_text(encoding="utf-8"))
    return [CSLItem.from_csl(record) for record in data]


def variants(items: list[CSLItem], count: int) -> list[CSLItem]:
    """`count` copies of every item, each copy with its own id and title."""
    return [
        item.model_copy(
            update={"id": f"{item.id}-{n}", "title": f"{item.title or 'Untitled'} ({n})"}
        )
        for n in range(count)
        for item in items
    ]


@pytest.fixture(scope="module")
def rendered(items: list[CSLItem]) -> dict[str, Bibliography]:
    return render_bibliographies(items)


def test_fixture_holds_46_items(items: list[CSLItem]) -> None:
    # The issue spoke of 72 items; the shared data (and so this test) has 46.
    assert len(items) == 46


@pytest.mark.parametrize("part", ["bibliography", "citation"])
@pytest.mark.parametrize("style", list(STYLES))
def test_matches_citeproc_js(rendered: dict[str, Bibliography], style: str, part: str) -> None:
    fidelity = compare(rendered[style], style, part)
    print(
        f"\n{style} {part}: {fidelity.matched}/{fidelity.total} identical, "
        f"+{len(fidelity.reference_defects)} citeproc-js defects "
        f"= {fidelity.accepted}/{fidelity.total}"
    )
    print("\n".join(fidelity.reference_defects + fidelity.mismatches))
    assert fidelity.accepted / fidelity.total >= TARGET


class _Italics(HTMLParser):
    """The italic runs a reader sees, from citeproc-js (<i>) or pandoc (<em>) HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.runs: list[str] = []
        self._run: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("i", "em"):
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("i", "em"):
            self.depth -= 1
            if self.depth == 0 and (run := normalise("".join(self._run))):
                self.runs.append(run)
                self._run = []

    def handle_data(self, data: str) -> None:
        if self.depth:
            self._run.append(data)


def italic_runs(fragment: str) -> list[str]:
    parser = _Italics()
    parser.feed(fragment)
    return parser.runs


@pytest.mark.parametrize("style", list(STYLES))
def test_italics_match_citeproc_js(rendered: dict[str, Bibliography], style: str) -> None:
    """Formatting a reader sees: the same words in italics as citeproc-js, in >= 95% of entries
    (entries whose italic text differs only because the words differ are counted as different)."""
    path = FIXTURES / "citeproc-js" / f"{REFERENCE_FILES[style]}.html.jsonl"
    references = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    by_position = {entry.position: entry for entry in rendered[style].entries}
    same = [
        italic_runs(by_position[r["index"]].html) == italic_runs(r["bibliography"])
        for r in references
    ]
    print(f"\n{style} italics: {sum(same)}/{len(same)}")
    assert sum(same) / len(same) >= TARGET


@pytest.mark.parametrize("style", ["ieee", "vancouver"])
def test_numbered_styles_number_in_input_order(
    rendered: dict[str, Bibliography], style: str
) -> None:
    bibliography = rendered[style]
    assert [e.position for e in bibliography.entries] == list(range(46))
    for entry in bibliography.entries:
        number = str(entry.position + 1)
        assert entry.citation.text in (f"[{number}]", f"({number})")
        assert entry.text.startswith((f"[{number}] ", f"{number}. "))


def test_notes_style_citation_is_the_full_note(rendered: dict[str, Bibliography]) -> None:
    entry = next(e for e in rendered["chicago-notes"].entries if e.item_id == "item-02")
    assert entry.citation.text.startswith("Michael L. Smith, “Honey Bee Sting Pain Index")
    assert "PeerJ 2 (April 2014): e338" in entry.citation.text


def test_author_date_entries_follow_the_style_order(rendered: dict[str, Bibliography]) -> None:
    entries = rendered["apa"].entries
    first_words = [_folded(e.text.split()[0]) for e in entries]
    assert first_words == sorted(first_words)  # APA sorts by author, accents aside
    assert [e.position for e in entries] != list(range(46))
    assert sorted(e.position for e in entries) == list(range(46))


def _folded(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


HOSTILE: list[dict[str, Any]] = [
    {"id": "no-type", "title": "No type given", "issued": {"date-parts": [[2020]]}},
    {"id": "empty-date", "type": "book", "title": "Empty date", "issued": {"date-parts": [[]]}},
    {"id": "null-date", "type": "book", "title": "Null date", "issued": None, "accessed": {}},
    {
        "id": "cjk",
        "type": "article-journal",
        "title": "深度学习在医学中的应用",
        "author": [{"family": "王", "given": "小明"}, {"literal": "東京大学"}],
        "container-title": "中华医学杂志",
        "issued": {"date-parts": [[2021, 3]]},
    },
    {
        "id": "script",
        "type": "webpage",
        "title": "<script>alert('x')</script> and <i>Homo sapiens</i> & co",
        "URL": "javascript:alert(1)",
        "issued": {"date-parts": [[2019]]},
    },
    {"id": "doi-url", "type": "report", "title": "DOI as URL", "URL": "doi:10.1000/XYZ.1"},
    {"id": "file-url", "type": "dataset", "title": "Local file", "URL": "file:///data/x.csv"},
    {"id": "", "type": "article-journal", "title": "Empty id"},
    {"id": "odd id <&\"'>", "type": "nonsense-type", "title": "Odd id"},
    {"id": "odd id <&\"'>", "type": "book", "title": "Repeated odd id"},
    {"id": "nothing"},
]


@pytest.mark.parametrize("style", list(STYLES))
def test_hostile_items_render_safely(style: str) -> None:
    items = [CSLItem.from_csl(record) for record in HOSTILE]
    bibliography = render_bibliography(items, style)
    assert sorted(e.position for e in bibliography.entries) == list(range(len(HOSTILE)))
    page = to_html(bibliography)
    assert "<script" not in page.lower()
    assert "javascript:" not in page.lower().replace("alert(1)", "")
    hrefs = [value for tag, attrs in _tags(page) if tag == "a" for name, value in attrs]
    assert all(h and h.startswith(("https://", "http://", "file://")) for h in hrefs)
    script = next(e for e in bibliography.entries if e.item_id == "script")
    assert "&lt;script&gt;" in script.html.lower()
    assert "<script>" in script.text.lower()  # text is text: not escaped, not dropped
    assert "javascript" not in (script.text + script.markdown).lower()
    doi = next(e for e in bibliography.entries if e.item_id == "doi-url")
    if "10.1000" in doi.text:  # some styles omit a report's URL
        assert 'href="https://doi.org/10.1000/xyz.1"' in doi.html
    cjk = next(e for e in bibliography.entries if e.item_id == "cjk")
    assert "深度学习在医学中的应用" in cjk.text
    assert html.escape("odd id <&\"'>", quote=True) in page


def _tags(page: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    found: list[tuple[str, list[tuple[str, str | None]]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, attrs))

    Collect().feed(page)
    return found


def test_file_links_survive(rendered: dict[str, Bibliography]) -> None:
    items = [CSLItem.from_csl(HOSTILE[6])]
    entry = render_bibliography(items, "apa").entries[0]
    assert 'href="file:///data/x.csv"' in entry.html


def test_outputs_one_entry_per_line_and_a_full_page(rendered: dict[str, Bibliography]) -> None:
    bibliography = rendered["vancouver"]
    lines = to_text(bibliography).splitlines()
    assert len(lines) == 46
    assert lines[1].startswith("2. Smith ML. Honey bee sting pain index")
    markdown = to_markdown(bibliography)
    assert markdown.startswith("1\\. Trang T. Le")  # escaped: not a Markdown list
    assert "[10.7717/peerj.338](https://doi.org/10.7717/peerj.338)" in markdown
    page = to_html(bibliography)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count('class="csl-entry"') == 46


def test_empty_and_unknown() -> None:
    assert render_bibliography([], "apa").entries == []
    with pytest.raises(ValueError, match="unknown style"):
        render_bibliography([], "turabian")


@pytest.mark.parametrize("style", ["apa", "mla", "chicago-notes"])
def test_large_jobs_render_in_batches_exactly_as_in_one_run(
    items: list[CSLItem], style: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three variants of every real item (new titles), so batches hold many groups.
    many = variants(items, 3)
    whole = citeproc.render_bibliography(many, style)
    monkeypatch.setattr(pandoc, "BATCH_SIZE", 25)
    assert len(first_author_batches(many, 25)) > 3
    batched = citeproc.render_bibliography(many, style)
    assert [e.position for e in batched.entries] == [e.position for e in whole.entries]
    assert [e.text for e in batched.entries] == [e.text for e in whole.entries]
    assert [e.citation.text for e in batched.entries] == [e.citation.text for e in whole.entries]


@pytest.fixture
def took(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each render's run got its answer from the runs started ahead (False: it ran
    pandoc itself), seen through the real take: counting pandoc starts would also count a
    speculative run that nobody takes, which may or may not have started before the block
    ends."""
    taken: list[bool] = []
    take = Ahead.take

    def counted_take(ahead: Ahead, digest: str) -> pandoc.Pieces | None:
        pieces = take(ahead, digest)
        taken.append(pieces is not None)
        return pieces

    monkeypatch.setattr(Ahead, "take", counted_take)
    return taken


def test_runs_rendered_ahead_are_taken_whole_and_only_when_their_input_is_the_same(
    items: list[CSLItem], took: list[bool], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pandoc, "BATCH_SIZE", 25)
    many = variants(items, 2)
    runs = len(first_author_batches(many, 25))
    assert runs > 2
    # The guess differs from the final items in one item's title: that batch alone renders again.
    guess = [many[0].model_copy(update={"title": "Another title"}), *many[1:]]

    def forms(bib: dict[str, Bibliography]) -> list[tuple[str, int, str, str, str]]:
        return [(e.item_id, e.position, e.text, e.html, e.markdown) for e in bib["apa"].entries]

    alone = render_bibliographies(many, ["apa"], in_text=False)
    took.clear()
    with citeproc.rendering_ahead(guess, ["apa"], in_text=False) as ahead:
        taken = render_bibliographies(many, ["apa"], in_text=False, ahead=ahead)
    assert forms(taken) == forms(alone)
    assert sorted(took) == [False] + [True] * (runs - 1)
    # Nothing is left behind: the run nobody took is gone, and the same render again runs
    # pandoc for every batch.
    assert ahead._runs == {}
    took.clear()
    again = render_bibliographies(many, ["apa"], in_text=False, ahead=ahead)
    assert forms(again) == forms(alone)
    assert took == [False] * runs
    # A render not handed the runs never takes them: no state is shared unseen.
    took.clear()
    with citeproc.rendering_ahead(items[:3], ["apa"], in_text=False):
        render_bibliographies(items[:3], ["apa"], in_text=False)
    assert took == []


def pandoc_children() -> list[psutil.Process]:
    return [child for child in psutil.Process().children(recursive=True) if is_pandoc(child)]


def is_pandoc(process: psutil.Process) -> bool:
    try:
        return "pandoc" in process.name()
    except psutil.NoSuchProcess:  # ended meanwhile
        return False


def wait_for_pandoc(running: bool, seconds: float) -> bool:
    """Whether, within `seconds`, pandoc children of this process are running (or all gone)."""
    deadline = time.monotonic() + seconds
    while bool(pandoc_children()) != running and time.monotonic() < deadline:
        time.sleep(0.01)
    return bool(pandoc_children()) == running


# Numbered styles over many items: each one pandoc run of several seconds, so a run started
# ahead is still running when the test stops it.
LONG_RUNS = ["ieee", "vancouver"]


def test_runs_nobody_took_are_stopped_when_the_block_ends(items: list[CSLItem]) -> None:
    with citeproc.rendering_ahead(variants(items, 20), LONG_RUNS, in_text=True) as ahead:
        assert wait_for_pandoc(running=True, seconds=10), "no pandoc run started ahead"
    assert wait_for_pandoc(running=False, seconds=1), "pandoc runs nobody took still run"
    assert ahead._runs == {}


def test_a_stop_kills_every_pandoc_run_and_starts_none(
    items: list[CSLItem], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh flag: the stop is for good in a process, and this one goes on testing.
    monkeypatch.setattr(pandoc, "PROCESSES", pandoc.Processes())
    failed: list[BaseException] = []

    def render() -> None:
        try:
            render_bibliographies(variants(items, 20), LONG_RUNS)
        except citeproc.RenderError as exc:
            failed.append(exc)

    renderer = threading.Thread(target=render)
    renderer.start()
    assert wait_for_pandoc(running=True, seconds=10), "render started no pandoc"
    citeproc.stop_all_pandoc()
    assert wait_for_pandoc(running=False, seconds=1), "pandoc still runs after the stop"
    renderer.join(5)
    assert failed, "the stopped render did not fail"
    with pytest.raises(citeproc.RenderError, match="stopped"):
        render_bibliography(items[:1], "apa")


def test_a_pandoc_run_over_time_is_a_render_error(
    items: list[CSLItem], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A RenderError, which tasks/job/render.py's per-style fallback catches; and no pandoc left.
    monkeypatch.setattr(pandoc, "_PANDOC_TIMEOUT_S", 0.05)
    with pytest.raises(citeproc.RenderError, match="ran over"):
        render_bibliography(variants(items, 20), "ieee")
    assert pandoc_children() == []


def test_entries_without_in_text_citations_are_the_same_entries(items: list[CSLItem]) -> None:
    # Each real item twice (same authors and year, another title): author-date styles add year
    # suffixes, which must not depend on whether the items are cited in the text.
    twice = items + [
        item.model_copy(update={"id": f"{item.id}-b", "title": f"{item.title or 'Untitled'} II"})
        for item in items
    ]
    cited = render_bibliographies(twice)
    listed = render_bibliographies(twice, in_text=False)
    for style in STYLES:
        forms = [
            [(e.position, e.text, e.html, e.markdown) for e in b[style].entries]
            for b in (cited, listed)
        ]
        assert forms[0] == forms[1], style
        assert all(e.citation.text for e in cited[style].entries)
        assert not any(e.citation.text for e in listed[style].entries)
    assert sum(bool(re.search(r"\(\d{4}b\)", e.text)) for e in listed["apa"].entries) > 30


def test_fields_pandoc_cannot_read_are_left_out_not_fatal(items: list[CSLItem]) -> None:
    # Real exports carry extras: keyword lists, tracker dicts, booleans (e.g. the IVCAP store).
    odd = items[0].model_copy(update={"id": "odd"}).to_csl() | {
        "keyword": ["a", "b"],
        "tracker": {"validated": True},
        "flag": True,
    }
    bib = citeproc.render_bibliography([CSLItem.from_csl(odd), items[1]], "apa")
    assert len(bib.entries) == 2
    assert "keyword" not in citeproc.pandoc_item(CSLItem.from_csl(odd), "k")


def test_bare_initials_get_their_stop_only_where_the_style_prints_one() -> None:
    assert {s for s in citeproc.STYLES if initials_take_period(s)} == {
        "apa",
        "chicago-author-date",
    }
    item = CSLItem.from_csl(
        {
            "id": "x",
            "author": [
                {"family": "Himmelstein", "given": "Daniel S"},
                {"family": "O'Neil", "given": "D'Arcy J R"},
            ],
        }
    )
    names = citeproc.pandoc_item(item, "k", initials_period=True)["author"]
    assert [n["given"] for n in names] == ["Daniel S.", "D'Arcy J. R."]
    plain = citeproc.pandoc_item(item, "k")["author"]
    assert [n["given"] for n in plain] == ["Daniel S", "D'Arcy J R"]


def test_prepositions_stay_lowercase_inside_titles_where_the_style_says_so() -> None:
    # MLA and Chicago lowercase every preposition inside a title; CSL's stop words do not
    # include "through" or "between". A title's first and last words and a subtitle's first
    # word are capitalised all the same.
    title = "through walls: through data, seen through friends and between"
    item = CSLItem.from_csl({"id": "x", "type": "book", "title": title})
    for style in ("mla", "chicago-author-date", "chicago-notes"):
        entry = render_bibliography([item], style).entries[0]
        assert "Through Walls: Through Data, Seen through Friends and Between" in entry.text
        assert "nocase" not in entry.markdown
    assert citeproc.pandoc_item(item, "k")["title"] == title  # other styles: as written


@pytest.mark.parametrize(
    "marker", [{"literal": "others"}, {"family": "others"}, {"literal": "et al."}]
)
def test_an_et_al_marker_prints_as_et_al_never_as_a_person(marker: dict[str, str]) -> None:
    item = CSLItem.from_csl(
        {
            "id": "x",
            "type": "article-journal",
            "title": "Triose phosphate isomerase deficiency",
            "author": [{"family": "Ralser", "given": "Markus"}, {"family": "Heeren"}, marker],
            "issued": {"date-parts": [[2006]]},
        }
    )
    expected = {
        "apa": "Ralser, M., Heeren, et al. (2006)",
        "ieee": "M. Ralser, Heeren, et al.,",
        "vancouver": "Ralser M, Heeren, et al.",
        "mla": "Ralser, Markus, et al.",
    }
    for style, start in expected.items():
        entry = render_bibliography([item], style).entries[0]
        assert start in entry.text, (style, entry.text)
        assert "others" not in entry.text and "& et al" not in entry.text
    alone = CSLItem.from_csl({"id": "y", "author": [marker]})
    assert "author" not in citeproc.pandoc_item(alone, "k")  # a marker alone names nobody


def test_unconfirmed_works_are_listed_apart_and_marked(rendered: dict[str, Bibliography]) -> None:
    bibliography = rendered["apa"]
    second, fifth = bibliography.entries[1], bibliography.entries[4]
    marks = {second.item_id: "unmatched", fifth.item_id: "unverified"}
    text = to_text(bibliography, marks)
    confirmed, _, apart = text.partition(f"\n{UNCONFIRMED_HEADING}\n")
    assert len(confirmed.splitlines()) == 44 and second.text not in confirmed
    assert f"[unmatched] {second.text}" in apart and f"[unverified] {fifth.text}" in apart
    markdown = to_markdown(bibliography, marks)
    head, _, tail = markdown.partition(f"## {UNCONFIRMED_HEADING}")
    assert second.markdown not in head
    assert f"**\\[unmatched\\]** {second.markdown}" in tail
    page = to_html(bibliography, marks)
    head, _, tail = page.partition(f"<h2>{UNCONFIRMED_HEADING}</h2>")
    assert head.count('class="csl-entry"') == 44 and tail.count('class="csl-entry"') == 2
    assert '<span class="citeaudit-mark">[unverified]</span>' in tail
    assert to_text(bibliography) == to_text(bibliography, {})  # nothing to set apart


def test_an_audit_hands_the_runs_it_started_ahead_to_its_render(
    tmp_path: Path, took: list[bool]
) -> None:
    # The runs started ahead reach render only by being passed down (no process-wide state):
    # an audit whose dedupe merges nothing takes its one APA run instead of running pandoc again.
    from flows.audit import run_pipeline
    from models.job import JobParams

    listed = tmp_path / "list.txt"
    listed.write_text("10.5555/ahead.1\n10.5555/ahead.2\n", encoding="utf-8")
    params = JobParams(
        inputs=[str(listed)],
        job_id="ahead",
        out_dir=str(tmp_path / "out"),
        db=str(tmp_path / "lib.duckdb"),
        offline=True,
        styles=["apa"],
    )
    run_pipeline(params)
    assert took == [True]
    assert (tmp_path / "out" / "ahead" / "bibliography.apa.txt").read_text(encoding="utf-8")


def test_a_job_past_the_bibliography_limit_says_so_instead_of_rendering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.audit import run_pipeline
    from models.job import JobParams

    monkeypatch.setattr(bibliography, "MAX_BIBLIOGRAPHY_ITEMS", 3)
    listed = tmp_path / "list.txt"
    listed.write_text("".join(f"10.5555/limit.{n}\n" for n in range(4)), encoding="utf-8")
    out = tmp_path / "out"
    params = JobParams(
        inputs=[str(listed)],
        job_id="big",
        out_dir=str(out),
        db=str(tmp_path / "lib.duckdb"),
        offline=True,
    )
    summary = run_pipeline(params)
    note = "not rendered: 4 items, above the limit of 3"
    assert summary.metrics["bibliographies_skipped"].startswith(note)
    folder = out / "big"
    assert not list(folder.glob("bibliography.*"))
    assert note in (folder / "report.md").read_text(encoding="utf-8")
    assert note in (folder / "report.html").read_text(encoding="utf-8")
    assert json.loads((folder / "references.json").read_text(encoding="utf-8"))  # all listed
