"""Reading in batches (tasks/read:stream_inputs): a big list is read as its batches are consumed,
so memory follows the batch size, not the list; what BibTeX needs of the whole library (@string,
crossref containers, duplicate keys) still holds across chunks; and a field past the bound is an
input error naming file and entry in every format, the rest of the file still read."""

import json
from pathlib import Path

import pytest

from bench.bulk_memory import peak_growth, write_bib
from tasks.read import bibtex
from tasks.read.common import MAX_FIELD_CHARS
from tasks.read.inputs import read_inputs, stream_inputs

HUGE = "x" * (MAX_FIELD_CHARS + 1)


def test_streamed_reading_peaks_by_the_batch_not_the_list(tmp_path: Path) -> None:
    # Read whole (read_inputs), 4,000 entries peak ~25 MB above 1,000; streamed in batches of
    # 250, ~4 MB (the decoder's cache of distinct strings grows).
    small, big = tmp_path / "small.bib", tmp_path / "big.bib"
    write_bib(small, 1_000)
    write_bib(big, 4_000)
    one, four = peak_growth("stream", small, 250), peak_growth("stream", big, 250)
    assert (one["refs"], four["refs"]) == (1_000, 4_000)
    assert four["growth_kb"] - one["growth_kb"] < 10 * 1024, (one, four)


def test_batches_cut_the_list_in_order_and_keep_each_error_with_its_batch(tmp_path: Path) -> None:
    path = tmp_path / "list.txt"
    lines = [f"10.5555/n.{n}" for n in range(7)]
    lines.insert(3, "y" * (MAX_FIELD_CHARS + 1))
    path.write_text("\n".join(lines), encoding="utf-8")
    batches = list(stream_inputs([path], None, 3))
    assert [[r.provenance.entry_key for r in b.references] for b in batches] == [
        ["1", "2", "3"],
        ["5", "6", "7"],
        ["8"],
    ]
    [error] = batches[1].errors  # read with the second batch (line 4 comes before line 5)
    assert (error.source_file, error.entry_key, error.line) == (str(path), "4", 4)
    assert "1,000,000 characters" in error.reason
    whole = read_inputs([path])
    streamed = [ref for batch in batches for ref in batch.references]
    assert whole.references == streamed and whole.errors == batches[1].errors


def test_bibtex_library_semantics_hold_across_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bibtex, "_CHUNK_ENTRIES", 2)
    children = "".join(
        f"@inproceedings{{c{n},\n  title={{Paper {n}}},\n  crossref={{proc}}\n}}\n"
        for n in range(6)
    )
    main = tmp_path / "main.bib"
    main.write_text(
        children
        + "@article{c1, title={A duplicate}}\n"
        + "@article{broken, title={no closing brace\n"
        + "@article{late, title={Late}, journal=jrnl}\n"
        + "@proceedings{proc, title={Proceedings of Things}, publisher=pub, year=2020}\n",
        encoding="utf-8",
    )
    macros = tmp_path / "macros.bib"  # after the file that uses them, as IRIDIA's come
    macros.write_text("@string{pub = {ACM}}\n@string{jrnl = {Journal of Late Things}}\n")
    result = read_inputs([main, macros])
    keys = [ref.provenance.entry_key for ref in result.references]
    assert keys == ["c0", "c1", "c2", "c3", "c4", "c5", "late"]  # the container is no citation
    first = result.references[0].item
    assert (first.container_title, first.publisher) == ("Proceedings of Things", "ACM")
    assert result.references[-1].item.container_title == "Journal of Late Things"
    assert [ref.provenance.line for ref in result.references[:2]] == [1, 5]
    errors = {(e.entry_key, e.line): e.reason for e in result.errors}
    assert errors[("c1", 25)].startswith("duplicate key 'c1': first defined in")
    assert "line 5" in errors[("c1", 25)]
    assert errors[("broken", 26)].startswith("malformed entry")


def test_a_field_past_the_bound_is_an_error_for_its_entry_in_every_format(
    tmp_path: Path,
) -> None:
    ris = tmp_path / "list.ris"
    ris.write_text(
        f"TY  - JOUR\nTI  - {HUGE}\nER  - \n\nTY  - JOUR\nTI  - Fine\nDO  - 10.1/x\nER  - \n"
    )
    csl = tmp_path / "list.json"
    csl.write_text(
        json.dumps(
            [
                {"id": "big", "type": "book", "title": "T", "author": [{"family": HUGE}]},
                {"id": "fine", "type": "book", "title": "Fine"},
            ]
        )
    )
    text = tmp_path / "list.txt"
    text.write_text(f"{HUGE}\n10.1/fine\n")
    report = tmp_path / "report.md"
    report.write_text(
        "# Findings\n\nAspirin helps [1]. Statins too [2].\n\n## References\n\n"
        f"1. {HUGE}\n2. Smith J. Statins. Lancet. 2020. doi:10.1016/x\n"
    )
    for path, key in ((ris, "1"), (csl, "big"), (text, "1"), (report, "[1]")):
        result = read_inputs([path])
        assert len(result.references) == 1, path
        [error] = result.errors
        assert (error.source_file, error.entry_key) == (str(path), key)
        assert error.reason.startswith("field longer than 1,000,000 characters")


def test_a_csljson_array_broken_midway_is_one_error_and_nothing_read(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text('[{"id": "a", "type": "book", "title": "A"}, {"id": "b", "title": ]')
    result = read_inputs([path])
    assert result.references == []
    [error] = result.errors
    assert error.reason.startswith("not valid JSON")
