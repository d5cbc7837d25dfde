"""flows/snapshots.py's snapshot_update, the daily deployment's flow, run on a Prefect test
server against the publishers' stand-in: every snapshot built is brought up to date, and one
that cannot be (its publisher answers 404) fails the run once the others are done."""

from pathlib import Path

import pytest

from flows.snapshots import snapshot_update
from tasks.errors import InfrastructureError
from tasks.snapshots.store import Manifest, current
from tests.fake_registry.dumps import DumpServer, dblp_release

pytestmark = pytest.mark.usefixtures("prefect_harness")
FIXTURES = Path(__file__).parent / "fixtures" / "snapshots"


@pytest.fixture
def publisher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with DumpServer(tmp_path / "www") as server:
        dblp_release(
            server.root / "xml",
            (FIXTURES / "dblp.xml.gz").read_bytes(),
            (FIXTURES / "dblp.dtd").read_bytes(),
        )
        for name, value in {
            "CITEAUDIT_SNAPSHOTS": str(tmp_path / "snapshots"),
            "CITEAUDIT_DOWNLOADS": str(tmp_path / "downloads"),
            "CITEAUDIT_DBLP_DUMP_URL": f"{server.url}/xml",
            "CITEAUDIT_RETRACTIONS_URL": f"{server.url}/rw/none.csv",
            "CITEAUDIT_FETCH_PACE_S": "0",
            "CITEAUDIT_FETCH_RESERVE_BYTES": "0",
        }.items():
            monkeypatch.setenv(name, value)
        yield server


def test_the_flow_updates_every_snapshot_built(publisher: DumpServer, tmp_path: Path) -> None:
    first = snapshot_update(names=["dblp"])
    again = snapshot_update()  # every snapshot built: dblp
    folder = current(tmp_path / "snapshots", "dblp")
    assert folder is not None
    date = Manifest.read(folder).date
    assert first["dblp"].startswith(f"dblp@{date}: rebuilt")
    assert again == {"dblp": again["dblp"]} and ": unchanged," in again["dblp"]


def test_a_snapshot_that_cannot_be_updated_fails_the_run_after_the_others(
    publisher: DumpServer, tmp_path: Path
) -> None:
    with pytest.raises(InfrastructureError, match="retractions: not updated: .*HTTP 404"):
        snapshot_update(names=["retractions", "dblp"])
    assert current(tmp_path / "snapshots", "dblp") is not None
