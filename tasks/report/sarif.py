"""The job's problems as SARIF 2.1.0 (`citeaudit.sarif`), so that a code host shows each one on
the line of the paper's repository it is about (GitHub's code scanning annotates pull requests
from it).

One result per flagged citation, at its entry in the reference file (the `.bib` line where the
reader knew it), and one per input error (a malformed entry, a `\\cite` key no reference file
holds, at the line of the manuscript). A citation gets the rule of its most serious finding:

    rule                           level     when
    citeaudit/retracted            error     the registry's notice says the work is retracted
    citeaudit/not_found            error     the registry answered: no such record
    citeaudit/mismatch             error     the identifier's record is another work
    citeaudit/unmatched            warning   no identifier and no confident match
    citeaudit/expression_of_concern warning  the work carries an expression of concern
    citeaudit/corrected            note      the work carries a correction
    citeaudit/unverified           note      no registry could be asked
    citeaudit/missing              error     a citation whose reference the input lacks (a
                                             `\\cite` key no .bib holds, `[9]` past the list)
    citeaudit/malformed            warning   an entry or file the job could not read
    citeaudit/uncited              note      a reference the manuscript never cites
    citeaudit/warning              note      read, with a note (a field given twice)

A path the job read relative to where it ran stays relative (GitHub resolves it against the
repository's root, `%SRCROOT%`); an absolute path becomes a `file://` URI. Either is
percent-encoded, as a URI must be (`refs #v2.bib` is `refs%20%23v2.bib`).
"""

import hashlib
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import polars as pl

from tasks.report.flags import flagged_citations
from tasks.version import citeaudit_version

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/citeaudit/citeaudit"

# rule id suffix -> (level, short description); the order is the order of seriousness.
RULES: dict[str, tuple[str, str]] = {
    "retracted": ("error", "The cited work is retracted"),
    "not_found": ("error", "The registry holds no record for the cited identifier"),
    "mismatch": ("error", "The cited identifier's record describes another work"),
    "unmatched": ("warning", "No registry record matches the citation confidently"),
    "expression_of_concern": ("warning", "The cited work carries an expression of concern"),
    "corrected": ("note", "The cited work carries a correction"),
    "unverified": ("note", "No registry could be asked about the citation"),
    "missing": ("error", "The input cites a reference it does not hold"),
    "malformed": ("warning", "An entry or file the audit could not read"),
    "uncited": ("note", "A reference the manuscript never cites"),
    "warning": ("note", "An input read with a note"),
}


def citation_rule(row: dict[str, Any]) -> str:
    """The rule of a flagged citation's most serious finding (see the table above)."""
    if row.get("retracted"):
        return "retracted"
    if row["status"] in ("not_found", "mismatch", "unmatched"):
        return str(row["status"])
    if row.get("expression_of_concern"):
        return "expression_of_concern"
    if row.get("corrected"):
        return "corrected"
    return "unverified"


def to_sarif(citations: pl.DataFrame, input_errors: pl.DataFrame) -> dict[str, Any]:
    """The SARIF log of one job: its flagged citations and its input errors."""
    results = [
        _result(
            citation_rule(row),
            f"{row['entry_key']}: {row['reason'] or row['error'] or row['status']}",
            row["source_file"],
            row.get("line"),
            row["entry_key"],
        )
        for row in flagged_citations(citations).iter_rows(named=True)
    ]
    results += [
        _result(row["kind"], row["reason"], row["source_file"], row["line"], row["entry_key"])
        for row in input_errors.iter_rows(named=True)
    ]
    rules = [
        {
            "id": f"citeaudit/{name}",
            "name": name,
            "shortDescription": {"text": text},
            "defaultConfiguration": {"level": level},
        }
        for name, (level, text) in RULES.items()
    ]
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "citeaudit",
                        "version": citeaudit_version(),
                        "informationUri": INFORMATION_URI,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def to_sarif_text(citations: pl.DataFrame, input_errors: pl.DataFrame) -> str:
    return json.dumps(to_sarif(citations, input_errors), indent=2, ensure_ascii=False) + "\n"


def _result(
    rule: str, message: str, source_file: str, line: int | None, entry_key: str | None
) -> dict[str, Any]:
    region = {"startLine": line} if line else {}
    location: dict[str, Any] = {"artifactLocation": _artifact(source_file)}
    if region:
        location["region"] = region
    # Stable across runs, so a code host tracks one problem from push to push.
    identity = "\0".join((rule, source_file, entry_key or ""))
    return {
        "ruleId": f"citeaudit/{rule}",
        "ruleIndex": list(RULES).index(rule),
        "level": RULES[rule][0],
        "message": {"text": message},
        "locations": [{"physicalLocation": location}],
        "partialFingerprints": {
            "citeauditEntry/v1": hashlib.sha256(identity.encode()).hexdigest()[:32]
        },
    }


def _artifact(source_file: str) -> dict[str, Any]:
    path = Path(source_file)
    if path.is_absolute():
        return {"uri": path.as_uri()}
    return {"uri": quote(path.as_posix()), "uriBaseId": "%SRCROOT%"}
