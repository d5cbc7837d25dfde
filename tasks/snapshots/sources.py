"""Where each snapshot's dump is published, and what `citeaudit snapshot fetch NAME` gets of it.

- `dblp`: dblp.xml.gz, checked by the .md5 dblp publishes beside it, and dblp.dtd
  (CITEAUDIT_DBLP_DUMP_URL, https://dblp.org/xml);
- `arxiv`: Kaggle's `Cornell-University/arxiv` when KAGGLE_USERNAME and KAGGLE_KEY are set
  (CITEAUDIT_KAGGLE_URL; the zip's CRCs checked), else every OAI-PMH ListRecords page at
  CITEAUDIT_ARXIV_URL, one request every three seconds (tasks/snapshots/arxiv.harvest);
- `retractions`: Crossref's Retraction Watch CSV (CITEAUDIT_RETRACTIONS_URL; no checksum is
  published: its size, then the build's header check);
- `openalex`: the works `manifest` of the public bucket (CITEAUDIT_OPENALEX_BUCKET_URL,
  https://openalex.s3.amazonaws.com), then the `updated_date=` parts wanted, each checked by
  the md5 its ListObjectsV2 ETag is (a multipart upload's is not: its size then);
- `pubmed`: baseline/ and updatefiles/ `pubmedNNnNNNN.xml.gz`, each checked by its .md5
  (CITEAUDIT_PUBMED_DUMP_URL, https://ftp.ncbi.nlm.nih.gov/pubmed);
- `crossref`: no fetch: the annual file comes by torrent or from a requester-pays bucket.

Each goes to `$CITEAUDIT_DOWNLOADS/NAME/` (default `$CITEAUDIT_SNAPSHOTS/downloads`), the
folder `citeaudit snapshot build NAME` is then given. The listing of a source is a function of
the fetcher and the settings, so `snapshot update` asks it again for what is new.
"""

import json
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from xml.etree.ElementTree import Element

import defusedxml.ElementTree as SafeET
import httpx
from pydantic import AliasChoices, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from tasks.errors import UsageError
from tasks.registries.clients import USER_AGENT
from tasks.snapshots.fetch import (
    ChecksumMismatch,
    Fetcher,
    Progress,
    Remote,
    check_space,
    parse_md5,
    state_folder,
)
from tasks.snapshots.store import snapshots_root

NAMES = ("dblp", "arxiv", "retractions", "openalex", "pubmed", "crossref")
KAGGLE_DATASET = "Cornell-University/arxiv"
ARXIV_FILE = "arxiv-metadata-oai-snapshot.json"
S3 = "{http://s3.amazonaws.com/doc/2006-03-01/}"
_PUBMED_FILE = re.compile(r'href="(pubmed\d+n\d{4}\.xml\.gz)"')
_PARTITION = re.compile(r"updated_date=(\d{4}-\d{2}-\d{2})/")
_PUBMED_NUMBER = re.compile(r"pubmed\d+n(\d{4})\.xml\.gz$")

CROSSREF_MANUAL = (
    "crossref: Crossref's annual public data file cannot be fetched without a torrent client or a"
    " paying account; download it by hand (README: Local snapshots) and run `citeaudit snapshot"
    " build crossref FOLDER`"
)


class FetchSettings(BaseSettings):
    """Where the dumps are published and how politely they are fetched (CITEAUDIT_*)."""

    model_config = SettingsConfigDict(env_prefix="CITEAUDIT_", extra="ignore")

    downloads: Path | None = None  # None: $CITEAUDIT_SNAPSHOTS/downloads
    dblp_dump_url: str = "https://dblp.org/xml"
    arxiv_url: str = "https://export.arxiv.org"  # OAI-PMH at /oai2, as the registries' setting
    kaggle_url: str = "https://www.kaggle.com/api/v1"
    kaggle_username: str | None = Field(
        None, validation_alias=AliasChoices("KAGGLE_USERNAME", "CITEAUDIT_KAGGLE_USERNAME")
    )
    kaggle_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("KAGGLE_KEY", "CITEAUDIT_KAGGLE_KEY")
    )
    retractions_url: str = (
        "https://gitlab.com/crossref/retraction-watch-data/-/raw/main/retraction_watch.csv"
    )
    openalex_bucket_url: str = "https://openalex.s3.amazonaws.com"
    pubmed_dump_url: str = "https://ftp.ncbi.nlm.nih.gov/pubmed"
    mailto: SecretStr | None = None  # in the User-Agent: a secret, never in a message
    fetch_reserve_bytes: int = Field(1_000_000_000, ge=0)  # left free on the disk
    fetch_pace_s: float | None = Field(None, ge=0.0)  # None: each publisher's own (PACE)

    def folder(self, name: str) -> Path:
        return (self.downloads or snapshots_root() / "downloads") / name

    def user_agent(self) -> str:
        mailto = self.mailto.get_secret_value() if self.mailto else None
        return USER_AGENT.format(contact=f"; mailto:{mailto}" if mailto else "")

    def secrets(self) -> tuple[str, ...]:
        return tuple(s.get_secret_value() for s in (self.mailto, self.kaggle_key) if s)

    def kaggle_auth(self) -> httpx.BasicAuth | None:
        if self.kaggle_username and self.kaggle_key:
            return httpx.BasicAuth(self.kaggle_username, self.kaggle_key.get_secret_value())
        return None


def read_fetch_settings() -> FetchSettings:
    """The fetch settings in the environment now; a bad value is a usage error naming it."""
    try:
        return FetchSettings()
    except ValidationError as exc:
        raise UsageError(
            "; ".join(f"CITEAUDIT_{str(e['loc'][0]).upper()}: {e['msg']}" for e in exc.errors())
        ) from None


# Seconds between two requests to each publisher (their bulk hosts publish no limit: a pause
# that costs little beside the files' size).
PACE = {"dblp": 1.0, "arxiv": 1.0, "retractions": 1.0, "openalex": 0.2, "pubmed": 0.34}


def fetcher(name: str, settings: FetchSettings, progress: Progress | None = None) -> Fetcher:
    """The one connection to `name`'s publisher (Kaggle's, authenticated, for arxiv)."""
    pace = PACE[name] if settings.fetch_pace_s is None else settings.fetch_pace_s
    return Fetcher(
        settings.user_agent(),
        secrets=settings.secrets(),
        pace_s=pace,
        auth=settings.kaggle_auth() if name == "arxiv" else None,
        progress=progress,
    )


# -- what each publisher lists -------------------------------------------------------------


# Whether a file of the dump (its name under the dump's folder) is wanted: asked before any
# request about it, so a fetch or an update asks only about the files it takes.
Keep = Callable[[str], bool]


def everything(_name: str) -> bool:
    return True


def updated_since(day: date) -> Keep:
    """OpenAlex's parts of the `updated_date=` partitions from `day` on."""

    def keep(name: str) -> bool:
        found = _PARTITION.search(name)
        return found is not None and date.fromisoformat(found.group(1)) >= day

    return keep


def dblp_files(f: Fetcher, s: FetchSettings, _keep: Keep = everything) -> list[Remote]:
    """dblp.xml.gz with the md5 dblp publishes beside it, and the DTD the build loads."""
    base = s.dblp_dump_url.rstrip("/")
    md5 = parse_md5(f.text(f"{base}/dblp.xml.gz.md5"))
    return [
        f.remote(f"{base}/dblp.xml.gz", "dblp.xml.gz", md5),
        f.remote(f"{base}/dblp.dtd", "dblp.dtd"),
    ]


def retraction_files(f: Fetcher, s: FetchSettings, _keep: Keep = everything) -> list[Remote]:
    return [f.remote(s.retractions_url, "retraction_watch.csv")]


def openalex_files(f: Fetcher, s: FetchSettings, keep: Keep = everything) -> list[Remote]:
    """The works manifest, then each part it lists that `keep` wants, its size and md5 as the
    bucket's listing gives them."""
    base = s.openalex_bucket_url.rstrip("/")
    manifest = json.loads(f.text(f"{base}/data/works/manifest"))
    listed = dict(_s3_objects(f, base, "data/works/"))
    wanted = []
    for entry in manifest.get("entries", []):
        key = str(entry.get("url", "")).split("://", 1)[-1].partition("/")[2]  # s3://openalex/K
        if not keep(key):
            continue
        size, etag = listed.get(key, (entry.get("meta", {}).get("content_length"), None))
        md5 = etag if etag and "-" not in etag else None  # a multipart upload's ETag is no md5
        wanted.append(Remote(f"{base}/{key}", key, size, md5, etag))
    return [Remote(f"{base}/data/works/manifest", "data/works/manifest"), *wanted]


def _s3_objects(f: Fetcher, base: str, prefix: str) -> Iterator[tuple[str, tuple[int, str]]]:
    """(key, (size, ETag)) of each object under `prefix` (ListObjectsV2, page by page)."""
    params = {"list-type": "2", "prefix": prefix}
    while True:
        root: Element = SafeET.fromstring(f.body(f"{base}/", params))
        for item in root.iter(f"{S3}Contents"):
            key, size = item.findtext(f"{S3}Key") or "", item.findtext(f"{S3}Size") or ""
            etag = (item.findtext(f"{S3}ETag") or "").strip('"')
            yield key, (int(size) if size.isdigit() else 0, etag)
        token = root.findtext(f"{S3}NextContinuationToken")
        if root.findtext(f"{S3}IsTruncated") != "true" or not token:
            return
        params = {**params, "continuation-token": token}


def pubmed_files(f: Fetcher, s: FetchSettings, keep: Keep = everything) -> list[Remote]:
    """The baseline's files and the updates' that `keep` wants, each with the md5 NCBI
    publishes beside it."""
    base = s.pubmed_dump_url.rstrip("/")
    remotes = []
    for folder in ("baseline", "updatefiles"):
        for name in sorted(set(_PUBMED_FILE.findall(f.text(f"{base}/{folder}/")))):
            if keep(f"{folder}/{name}"):
                url = f"{base}/{folder}/{name}"
                md5 = parse_md5(f.text(f"{url}.md5"))
                remotes.append(f.remote(url, f"{folder}/{name}", md5))
    return remotes


def pubmed_number(name: str) -> int | None:
    """An update file's number (pubmed25n1275.xml.gz: 1275), which orders them."""
    match = _PUBMED_NUMBER.search(name)
    return int(match.group(1)) if match else None


Lister = Callable[[Fetcher, FetchSettings, Keep], list[Remote]]
LISTERS: dict[str, Lister] = {
    "dblp": dblp_files,
    "retractions": retraction_files,
    "openalex": openalex_files,
    "pubmed": pubmed_files,
}


@dataclass(frozen=True)
class FetchResult:
    name: str
    folder: Path
    fetched: list[str]  # the files fetched by this run (the others were there already)


def fetch(
    name: str,
    settings: FetchSettings,
    *,
    since: date | None = None,
    progress: Progress | None = None,
    harvest: Callable[[Path], int] | None = None,
) -> FetchResult:
    """Get the dump of `name` into its downloads folder. arXiv without a Kaggle token is an
    OAI-PMH harvest: `harvest(folder)` does it (over the registries' arXiv stack, the caller's)."""
    if name not in NAMES:
        raise UsageError(f"snapshot fetch: unknown snapshot {name!r} (known: {', '.join(NAMES)})")
    if name == "crossref":
        raise UsageError(CROSSREF_MANUAL)
    folder = settings.folder(name)
    folder.mkdir(parents=True, exist_ok=True)
    if name == "arxiv" and settings.kaggle_auth() is None:
        if harvest is None:
            raise UsageError("arxiv: no Kaggle token and no OAI-PMH harvester given")
        pages = harvest(folder)
        return FetchResult(name, folder, [f"{pages} OAI-PMH pages"] if pages else [])
    with fetcher(name, settings, progress) as f:
        if name == "arxiv":
            return _from_kaggle(f, settings, folder)
        keep = updated_since(since) if since else everything
        got = f.fetch(LISTERS[name](f, settings, keep), folder, settings.fetch_reserve_bytes)
    return FetchResult(name, folder, [r.name for r in got])


def _from_kaggle(f: Fetcher, s: FetchSettings, folder: Path) -> FetchResult:
    """Kaggle's zip (its answer redirects to storage that announces nothing before the GET;
    the token goes to Kaggle only), then its JSON lines taken out of it, each block's CRC
    checked by zipfile as it is read. The zip stays in the state folder: a fetch run again
    asks only whether it changed."""
    url = f"{s.kaggle_url.rstrip('/')}/datasets/download/{KAGGLE_DATASET}"
    state = state_folder(folder)
    zipped = state / "kaggle"
    got = f.fetch([Remote(url, "arxiv.zip")], zipped, s.fetch_reserve_bytes)
    target = folder / ARXIV_FILE
    if not got and target.is_file():
        return FetchResult("arxiv", folder, [])
    archive = zipped / "arxiv.zip"
    tmp = state / f"{ARXIV_FILE}.tmp"
    try:
        with zipfile.ZipFile(archive) as opened:
            member = opened.getinfo(ARXIV_FILE)
            check_space(folder, [Remote("", ARXIV_FILE, member.file_size)], state, 0)
            with opened.open(member) as source, tmp.open("wb") as out:
                while chunk := source.read(1 << 20):
                    out.write(chunk)
    except (zipfile.BadZipFile, zlib.error, KeyError) as exc:
        archive.unlink()
        raise ChecksumMismatch(f"arxiv.zip from Kaggle: {exc}; deleted, fetch it again") from None
    tmp.replace(target)
    return FetchResult("arxiv", folder, [ARXIV_FILE])
