"""`snapshot fetch`'s downloads (tasks/snapshots/fetch.py, sources.py) over real HTTP from the
publishers' stand-ins (tests/fake_registry/dumps.py, the fake registry's OAI-PMH): each source
cut at 50 % and resumed to the same bytes, a corrupted file caught by its checksum, a disk too
full refused before the first byte, an unchanged file not fetched again."""

import gzip
import io
import zipfile
from datetime import date
from pathlib import Path

import pytest

from tasks.registries.clients import Registries, RegistryPool
from tasks.snapshots import arxiv
from tasks.snapshots.fetch import ChecksumMismatch, NotEnoughSpace, parse_md5
from tasks.snapshots.sources import ARXIV_FILE, FetchSettings, fetch
from tests.fake_registry import FakeRegistry
from tests.fake_registry.dumps import (
    DumpServer,
    dblp_release,
    openalex_partition,
    pubmed_file,
)

FIXTURES = Path(__file__).parent / "fixtures" / "snapshots"
MAILTO = "fetch-test@example.org"


def _settings(server: DumpServer, downloads: Path, **overrides: object) -> FetchSettings:
    values: dict[str, object] = {
        "downloads": downloads,
        "dblp_dump_url": f"{server.url}/xml",
        "retractions_url": f"{server.url}/rw/retraction_watch.csv",
        "openalex_bucket_url": server.url,
        "pubmed_dump_url": f"{server.url}/pubmed",
        "kaggle_url": f"{server.url}/kaggle/api/v1",
        "mailto": MAILTO,
        "fetch_pace_s": 0.0,
        "fetch_reserve_bytes": 0,
        **overrides,
    }
    return FetchSettings(**values)  # type: ignore[arg-type]


def _kaggle_zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(ARXIV_FILE, (FIXTURES / ARXIV_FILE).read_bytes())
    return out.getvalue()


def _work(n: int, day: str) -> dict[str, object]:
    return {"id": f"https://openalex.org/W{n}", "title": f"Work {n}", "updated_date": day}


def _publish(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every publisher's files in the server's folder; per source, its biggest file (the one cut
    midway) and its bytes."""
    xml_gz = (FIXTURES / "dblp.xml.gz").read_bytes()
    dblp_release(root / "xml", xml_gz, (FIXTURES / "dblp.dtd").read_bytes())
    csv = (FIXTURES / "retraction_watch.csv").read_bytes()
    (root / "rw").mkdir()
    (root / "rw" / "retraction_watch.csv").write_bytes(csv)
    openalex_partition(root, "2026-10-01", [[_work(n, "2026-10-01") for n in range(3000)]])
    baseline = gzip.compress(b"<PubmedArticleSet>" + b"<x/>" * 20_000 + b"</PubmedArticleSet>")
    pubmed_file(root / "pubmed" / "baseline", "pubmed26n0001.xml.gz", baseline)
    pubmed_file(root / "pubmed" / "updatefiles", "pubmed26n0002.xml.gz", gzip.compress(b"<a/>"))
    zipped = _kaggle_zip()
    (root / "kaggle/api/v1/datasets/download/Cornell-University").mkdir(parents=True)
    (root / "kaggle/api/v1/datasets/download/Cornell-University/arxiv").write_bytes(zipped)
    part = "data/works/updated_date=2026-10-01/part_000.gz"
    return {
        "dblp": ("dblp.xml.gz", xml_gz),
        "retractions": ("retraction_watch.csv", csv),
        "openalex": (part, (root / part).read_bytes()),
        "pubmed": ("baseline/pubmed26n0001.xml.gz", baseline),
        "arxiv": ("Cornell-University/arxiv", zipped),
    }


SOURCES = ["dblp", "retractions", "openalex", "pubmed", "arxiv"]


@pytest.fixture
def server(tmp_path: Path):
    with DumpServer(tmp_path / "www") as running:
        yield running


def _kaggle(name: str) -> dict[str, object]:
    """arXiv from Kaggle: a token configured."""
    return {"kaggle_username": "reader", "kaggle_key": "k-secret"} if name == "arxiv" else {}


@pytest.mark.parametrize("name", SOURCES)
def test_a_fetch_cut_at_half_resumes_with_a_range_to_the_same_bytes(
    server: DumpServer, tmp_path: Path, name: str
) -> None:
    biggest = _publish(server.root)
    path, data = biggest[name]
    server.cut(0.5, path_ends=path)
    settings = _settings(server, tmp_path / "downloads", **_kaggle(name))

    result = fetch(name, settings)

    gets = server.gets(path)
    assert [g.range for g in gets] == [None, f"bytes={len(data) // 2}-"]
    assert [g.status for g in gets] == [200, 206]
    if name == "arxiv":  # the zip's JSON lines, taken out of it
        assert (result.folder / ARXIV_FILE).read_bytes() == (FIXTURES / ARXIV_FILE).read_bytes()
    else:
        assert (result.folder / path).read_bytes() == data
    assert not list(result.folder.parent.glob(f".{name}.fetch/parts/**/*.part"))
    assert all(MAILTO in r.user_agent and "citeaudit/" in r.user_agent for r in server.log)


@pytest.mark.parametrize("name", ["dblp", "openalex", "pubmed", "arxiv"])
def test_a_corrupted_file_is_caught_by_its_checksum_and_refused(
    server: DumpServer, tmp_path: Path, name: str
) -> None:
    path, _ = _publish(server.root)[name]
    server.corrupt(path_ends=path)
    settings = _settings(server, tmp_path / "downloads", **_kaggle(name))

    with pytest.raises(ChecksumMismatch) as failure:
        fetch(name, settings)

    assert "deleted, fetch it again" in str(failure.value)
    folder = settings.folder(name)
    target = folder / (ARXIV_FILE if name == "arxiv" else path)
    assert not target.exists()
    assert fetch(name, settings).fetched  # asked again: the good file
    assert target.is_file()


def test_a_disk_too_full_is_refused_before_the_download_starts(
    server: DumpServer, tmp_path: Path
) -> None:
    _publish(server.root)
    settings = _settings(server, tmp_path / "downloads", fetch_reserve_bytes=10**18)

    with pytest.raises(NotEnoughSpace) as refused:
        fetch("pubmed", settings)

    assert "nothing was fetched" in str(refused.value)
    assert not [r for r in server.log if r.method == "GET" and r.path.endswith(".xml.gz")]
    assert not list(settings.folder("pubmed").rglob("*.gz"))


def test_a_file_unchanged_is_not_fetched_again_and_a_new_release_is(
    server: DumpServer, tmp_path: Path
) -> None:
    _publish(server.root)
    settings = _settings(server, tmp_path / "downloads")
    assert fetch("dblp", settings).fetched == ["dblp.xml.gz", "dblp.dtd"]
    assert fetch("dblp", settings).fetched == []
    newer = gzip.compress(gzip.decompress((FIXTURES / "dblp.xml.gz").read_bytes()) + b"\n")
    dblp_release(server.root / "xml", newer, (FIXTURES / "dblp.dtd").read_bytes())
    assert fetch("dblp", settings).fetched == ["dblp.xml.gz"]
    assert (settings.folder("dblp") / "dblp.xml.gz").read_bytes() == newer


def test_openalex_lists_the_bucket_page_by_page_and_fetches_only_the_parts_wanted(
    tmp_path: Path,
) -> None:
    with DumpServer(tmp_path / "www", page_keys=2) as server:
        openalex_partition(server.root, "2026-09-01", [[_work(1, "2026-09-01")]] * 2)
        openalex_partition(server.root, "2026-10-01", [[_work(2, "2026-10-01")]] * 2)
        settings = _settings(server, tmp_path / "downloads")

        result = fetch("openalex", settings, since=date(2026, 10, 1))

        listings = [r for r in server.log if "list-type=2" in r.path]
    assert result.fetched == [
        "data/works/manifest",
        "data/works/updated_date=2026-10-01/part_000.gz",
        "data/works/updated_date=2026-10-01/part_001.gz",
    ]
    assert len(listings) == 3  # five keys, two a page
    assert "continuation-token=2" in listings[1].path


def test_pubmed_takes_every_baseline_and_update_file_with_its_md5(
    server: DumpServer, tmp_path: Path
) -> None:
    _publish(server.root)
    result = fetch("pubmed", _settings(server, tmp_path / "downloads"))
    assert result.fetched == ["baseline/pubmed26n0001.xml.gz", "updatefiles/pubmed26n0002.xml.gz"]
    assert parse_md5("MD5(pubmed26n0001.xml.gz)= " + "a" * 32) == "a" * 32


def test_crossref_cannot_be_fetched_and_says_why(server: DumpServer, tmp_path: Path) -> None:
    from tasks.errors import UsageError

    with pytest.raises(UsageError, match="torrent"):
        fetch("crossref", _settings(server, tmp_path))


def _oai(registry: FakeRegistry):
    settings = registry.settings(arxiv_max_rate=100.0, backoff_base_s=0.01, max_attempts=2)
    return Registries.from_settings(settings, RegistryPool()).http["arxiv"]


def test_an_oai_pmh_harvest_cut_midway_goes_on_from_its_token_to_the_same_pages(
    tmp_path: Path,
) -> None:
    with FakeRegistry(rate_limits=False) as registry:
        registry.oai_page_size = 100
        whole = tmp_path / "whole" / "arxiv"
        assert arxiv.harvest(_oai(registry), whole) > 4
        registry.reset()
        cut = tmp_path / "cut" / "arxiv"
        registry.inject_fault("server_error", count=2, endpoint="arxiv_oai", path_contains="%7C300")
        with pytest.raises(Exception, match="HTTP 500"):
            arxiv.harvest(_oai(registry), cut)
        assert len(list(cut.iterdir())) == 3
        resumed = arxiv.harvest(_oai(registry), cut)
        first_asked = [r.path for r in registry.log if r.status == 200][3]
        assert arxiv.harvest(_oai(registry), cut) == 0  # whole: nothing asked again
    assert "resumptionToken" in first_asked and "%7C300" in first_asked
    assert resumed == len(list(whole.iterdir())) - 3
    assert sorted(p.name for p in cut.iterdir()) == sorted(p.name for p in whole.iterdir())
    assert all((cut / page.name).read_bytes() == page.read_bytes() for page in whole.iterdir())


def test_a_busy_publisher_is_asked_again_after_its_retry_after(
    server: DumpServer, tmp_path: Path
) -> None:
    _publish(server.root)
    server.unavailable(path_ends="retraction_watch.csv")
    result = fetch("retractions", _settings(server, tmp_path / "downloads"))
    gets = server.gets("retraction_watch.csv")
    assert [g.status for g in gets] == [503, 200]
    assert result.fetched == ["retraction_watch.csv"]


def test_arxiv_without_a_kaggle_token_is_harvested_and_the_pages_build(tmp_path: Path) -> None:
    from tasks.snapshots.store import build
    from tasks.snapshots.update import fetch_dump

    with FakeRegistry(rate_limits=False) as registry:
        registries = registry.settings(arxiv_max_rate=100.0)
        settings = FetchSettings(downloads=tmp_path / "downloads")  # type: ignore[call-arg]
        result = fetch_dump("arxiv", settings, registries)
        asked = registry.count("arxiv_oai")
    pages = sorted(p.name for p in result.folder.iterdir())
    assert result.fetched == [f"{asked} OAI-PMH pages"] and pages[0] == "page-00001.xml"
    manifest = build(arxiv.BUILDER, [result.folder], tmp_path / "snapshots")
    assert manifest.records == len(registry.scholarly.arxiv)


def test_kaggles_zip_is_asked_again_only_if_it_changed(server: DumpServer, tmp_path: Path) -> None:
    _publish(server.root)
    settings = _settings(server, tmp_path / "downloads", **_kaggle("arxiv"))
    assert fetch("arxiv", settings).fetched == [ARXIV_FILE]
    again = fetch("arxiv", settings)
    gets = server.gets("Cornell-University/arxiv")
    assert again.fetched == [] and [g.status for g in gets] == [200, 304]


def test_a_harvest_the_disk_cannot_hold_stops_after_its_first_page(tmp_path: Path) -> None:
    with FakeRegistry(rate_limits=False) as registry:
        folder = tmp_path / "arxiv"
        with pytest.raises(NotEnoughSpace, match="OAI-PMH|nothing was fetched|fetch"):
            arxiv.harvest(_oai(registry), folder, reserve=10**18)
        asked = registry.count("arxiv_oai")
    assert asked == 1 and len(list(folder.iterdir())) == 1
