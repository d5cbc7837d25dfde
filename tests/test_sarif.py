"""The SARIF log's locations as URIs: a reference file's name with a space or a `#` is
percent-encoded, relative or absolute, and the log is valid against the OASIS schema with its
formats checked (a `uri-reference` must be one)."""

import jsonschema
import polars as pl

from tasks.frames import INPUT_ERROR_SCHEMA
from tasks.report.sarif import to_sarif
from tests.report_data import citation, citations
from tests.test_paper_repository import sarif_schema


def test_uris_are_percent_encoded_and_valid():
    flagged = citations(
        citation(entry_key="cat", status="mismatch", reason="another work", line=3),
        citation(
            entry_key="a", source_file="/papers/my thesis/refs #v2.bib", status="not_found", line=9
        ),
    ).with_columns(source_file=pl.Series(["refs #v2.bib", "/papers/my thesis/refs #v2.bib"]))
    errors = pl.DataFrame(
        [
            {
                "job_id": "j",
                "source_file": "chapters/ch 1 [draft].tex",
                "entry_key": "star",
                "line": 4,
                "reason": "cites star, which no reference file holds",
                "kind": "missing",
            }
        ],
        schema=INPUT_ERROR_SCHEMA,
    )
    log = to_sarif(flagged, errors)
    jsonschema.validate(log, sarif_schema(), format_checker=jsonschema.FormatChecker())
    uris = [
        r["locations"][0]["physicalLocation"]["artifactLocation"] for r in log["runs"][0]["results"]
    ]
    assert uris == [
        {"uri": "refs%20%23v2.bib", "uriBaseId": "%SRCROOT%"},
        {"uri": "file:///papers/my%20thesis/refs%20%23v2.bib"},
        {"uri": "chapters/ch%201%20%5Bdraft%5D.tex", "uriBaseId": "%SRCROOT%"},
    ]
