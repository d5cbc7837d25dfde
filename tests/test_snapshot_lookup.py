"""Lookups answered from a local snapshot, through the real command line with every live
registry unreachable: what the snapshot holds verifies, what it lacks is never not_found."""

import os
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from models.audit import Provenance, Reference, Status
from models.csl import CSLItem
from tasks.lookup import lookup_references
from tasks.lookup.snapshots import STALE_DAYS, LocalSnapshots

ROOT = Path(__file__).parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "snapshots"
URLS = ("CROSSREF", "PUBMED", "DOI", "DBLP", "ARXIV", "S2", "OPENALEX", "EUROPEPMC")
LABEL = "dblp@2026-11-02"  # the fixture dump's newest mdate
BIB = """
@incollection{autoweka,
  title = {Auto-WEKA: Automatic Model Selection and Hyperparameter Optimization in WEKA},
  author = {Kotthoff, Lars and Thornton, Chris and Hoos, Holger H. and Hutter, Frank and
            Leyton-Brown, Kevin},
  booktitle = {Automated Machine Learning},
  year = {2019}
}
@inproceedings{invented,
  title = {Quantum Llamas Learn Sparse Attention Without Gradients},
  author = {Nobody, Alice and Nowhere, Bob},
  booktitle = {Advances in Neural Information Processing Systems},
  year = {2021}
}
"""

pytestmark = pytest.mark.usefixtures("prefect_harness")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Every registry unreachable (the discard port refuses), snapshots in a temp folder."""
    tmp = tmp_path_factory.mktemp("snaplookup")
    unreachable = {f"CITEAUDIT_{name}_URL": "http://127.0.0.1:9" for name in URLS}
    return {
        **os.environ,
        **unreachable,
        "CITEAUDIT_MAX_ATTEMPTS": "1",
        "CITEAUDIT_CACHE_DIR": str(tmp / "http-cache"),
        "CITEAUDIT_DB": str(tmp / "citeaudit.duckdb"),
        "CITEAUDIT_SNAPSHOTS": str(tmp / "snapshots"),
    }


def citeaudit(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flows.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def built(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    dump = tmp_path_factory.mktemp("dump")
    for name in ("dblp.xml.gz", "dblp.dtd"):
        shutil.copy(FIXTURES / name, dump / name)
    done = citeaudit(env, "snapshot", "build", "dblp", str(dump / "dblp.xml.gz"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{LABEL}: 543 records")
    return Path(env["CITEAUDIT_SNAPSHOTS"])


def test_status_lists_the_snapshot_with_its_date(env: dict[str, str], built: Path) -> None:
    listed = citeaudit(env, "snapshot", "status")
    assert listed.returncode == 0, listed.stderr
    [row] = [line for line in listed.stdout.splitlines() if "dblp" in line]
    assert "2026-11-02" in row and "543" in row


def test_unknown_snapshot_or_missing_input_is_one_line_and_exit_2(
    env: dict[str, str], tmp_path: Path
) -> None:
    for args in (("build", "dblpp", "x"), ("build", "dblp", str(tmp_path / "none.xml.gz"))):
        done = citeaudit(env, "snapshot", *args)
        assert done.returncode == 2
        assert done.stderr.startswith("citeaudit: error:") and done.stderr.count("\n") == 1


def test_an_audit_with_every_registry_down_verifies_from_the_snapshot(
    env: dict[str, str], built: Path, tmp_path: Path
) -> None:
    bib = tmp_path / "refs.bib"
    bib.write_text(BIB)
    done = citeaudit(env, "audit", str(bib), "--job", "snap", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    stale = (date.today() - date(2026, 11, 2)).days > STALE_DAYS
    assert done.stderr.count(f"warning: local snapshot {LABEL}") == int(stale)
    rows = {
        row["entry_key"]: row
        for row in pl.read_parquet(tmp_path / "out" / "snap" / "citations.parquet").to_dicts()
    }
    found, absent = rows["autoweka"], rows["invented"]
    assert (found["status"], found["registry"]) == ("verified", LABEL)
    assert found["registries_asked"][0] == LABEL
    assert absent["status"] in ("unmatched", "unverified")  # never not_found
    assert LABEL in absent["registries_asked"] and LABEL in absent["reason"]


def test_offline_what_the_snapshot_lacks_stays_unmatched_naming_it(built: Path) -> None:
    snapshots = LocalSnapshots.open(built)
    assert snapshots is not None
    refs = [
        _ref(
            "held", "Auto-WEKA: Automatic Model Selection and Hyperparameter Optimization in WEKA"
        ),
        _ref("absent", "Quantum Llamas Learn Sparse Attention Without Gradients"),
        _ref(
            "newer",
            "Auto-WEKA: Automatic Model Selection and Hyperparameter Optimization in WEKA",
            2027,
        ),
    ]
    held, absent, newer = lookup_references(refs, None, offline=True, snapshots=snapshots)
    snapshots.close()
    assert held.status is Status.VERIFIED and held.registry == LABEL
    assert absent.status is Status.UNMATCHED and absent.registry is None
    assert absent.asked == [LABEL] and f"local snapshots {LABEL}" in absent.reason
    # a year after the snapshot's date: only a live registry could hold it
    assert newer.status is Status.UNVERIFIED and newer.asked == [] and newer.reason == "offline"


def test_retraction_watch_notices_fill_a_cited_dois_notice_columns(tmp_path: Path) -> None:
    from tasks.snapshots import retractions
    from tasks.snapshots.store import build

    build(retractions.BUILDER, [FIXTURES / "retraction_watch.csv"], tmp_path / "snapshots")
    snapshots = LocalSnapshots.open(tmp_path / "snapshots")
    assert snapshots is not None and snapshots.notices is not None
    cited = _ref("cited", "Construction of Mental Health Education Model", 2021)
    cited = cited.model_copy(
        update={"ids": cited.ids.model_copy(update={"doi": "10.1155/2021/6907871"})}
    )
    other = _ref("other", "A paper nobody retracted", 2021)
    retracted, clean = lookup_references([cited, other], None, offline=True, snapshots=snapshots)
    snapshots.close()
    assert retracted.status is Status.UNVERIFIED and retracted.retracted
    [notice] = retracted.notices
    assert (notice.kind, notice.source, notice.identifier) == (
        "retraction",
        "retraction-watch",
        "10.1155/2023/9804945",
    )
    assert retracted.asked == [snapshots.notices.label]
    assert not clean.retracted and clean.notices == [] and clean.reason == "offline"


def test_a_preprint_cited_at_corr_verifies_one_cited_at_a_venue_goes_on(built: Path) -> None:
    """dblp names arXiv `CoRR`: a reference citing the preprint there is verified by its
    informal record; one citing it at a conference is not (the live search looks for that)."""
    snapshots = LocalSnapshots.open(built)
    assert snapshots is not None
    title, year = "Distilling the Knowledge in a Neural Network", 2015  # journals/corr/HintonVD15
    cited = [
        _ref(key, title, year, HINTON_VINYALS_DEAN, venue)
        for key, venue in (("corr", "CoRR"), ("neurips", "NeurIPS"))
    ]
    preprint, published = lookup_references(cited, None, offline=True, snapshots=snapshots)
    snapshots.close()
    assert (preprint.status, preprint.registry) == (Status.VERIFIED, LABEL)
    assert preprint.matched_id == "journals/corr/HintonVD15"
    assert published.status is Status.UNMATCHED and published.registry is None


KOTTHOFF = (
    ("Kotthoff", "Lars"),
    ("Thornton", "Chris"),
    ("Hoos", "Holger H."),
    ("Hutter", "Frank"),
    ("Leyton-Brown", "Kevin"),
)
HINTON_VINYALS_DEAN = (("Hinton", "G. E."), ("Vinyals", "O."), ("Dean", "J."))


def _ref(
    key: str,
    title: str,
    year: int = 2019,
    names: tuple[tuple[str, str], ...] = KOTTHOFF,
    venue: str | None = None,
) -> Reference:
    authors = [{"family": f, "given": g} for f, g in names]
    csl: dict[str, Any] = {"id": key, "type": "chapter", "title": title, "author": authors}
    csl["issued"] = {"date-parts": [[year]]}
    if venue:
        csl["container-title"] = venue
    return Reference(
        citation_id=key,
        provenance=Provenance(source_file="refs.bib", entry_key=key),
        item=CSLItem.from_csl(csl),
    )


def test_a_withdrawn_preprint_is_flagged_in_the_row_the_report_and_the_gate(
    env: dict[str, str], tmp_path: Path
) -> None:
    from tasks.snapshots import arxiv
    from tasks.snapshots.store import build

    root = tmp_path / "snapshots"
    build(arxiv.BUILDER, [FIXTURES / "arxiv-metadata-oai-snapshot.json"], root)
    bib = tmp_path / "refs.bib"
    bib.write_text(
        "@article{garcia99, title = {On the N=4 Super Yang-Mills Theory at Strong Coupling},\n"
        "  author = {Garc{\\'i}a, Jos{\\'e} and M{\\\"u}ller, M.}, year = {1999},\n"
        "  eprint = {hep-th/9901001}, archivePrefix = {arXiv}}\n"
    )
    out = tmp_path / "out"
    done = citeaudit(
        {**env, "CITEAUDIT_SNAPSHOTS": str(root)},
        *(
            "audit",
            str(bib),
            "--offline",
            "--fail-on",
            "retracted",
            "--job",
            "w",
            "--out",
            str(out),
        ),
    )
    assert done.returncode == 1, done.stderr
    assert "--fail-on retracted: 1 retracted" in done.stderr
    [row] = pl.read_parquet(out / "w" / "citations.parquet").to_dicts()
    assert (row["status"], row["retracted"]) == ("verified", True)
    assert "withdrawn by its authors on arXiv" in (out / "w" / "report.md").read_text()
