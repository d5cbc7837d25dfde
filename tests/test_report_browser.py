"""report.html as a person sees it: a real job's report opened in headless Chromium.

The rendered DOM shows the counts by status, the flagged citations first with their reasons, the
claims and the bibliography; a `<script>` in a title stays text; the page asks the network for
nothing (a recording proxy sees every request Chromium would make). Screenshots at phone and
desktop width go to `$CITEAUDIT_SCREENSHOTS_DIR` when set (the README's docs/report-*.png)."""

import os
import shutil
import socket
import struct
import subprocess
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import polars as pl
import pytest

from flows.audit import audit_job
from models.job import JobParams
from tasks.render.citeproc import UNCONFIRMED_HEADING, UNCONFIRMED_NOTE
from tests.fake_registry.fixtures import point_env_at
from tests.fake_registry.server import FakeRegistry

FIXTURES = Path(__file__).parent / "fixtures"
INPUTS = [
    FIXTURES / "report" / "needs_attention.bib",
    FIXTURES / "reflists" / "crew_report.md",
    FIXTURES / "report" / "hostile_titles.ris",
]
HOSTILE_TITLE = "<script>document.body.setAttribute('data-pwned','script')</script>Scripts in"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Chromium's own housekeeping (clock, updates, sign-in, and Chromium 150's www.google.com calls,
# made for a blank page too), which flags do not fully switch off.
BROWSER_HOSTS = {
    "clients2.google.com",
    "update.googleapis.com",
    "accounts.google.com",
    "www.google.com",
}

RESOLVERS = ("https://doi.org/", "https://pubmed.ncbi.nlm.nih.gov/", "https://arxiv.org/abs/")

pytestmark = [
    pytest.mark.usefixtures("prefect_harness"),
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (see .ci/run)"),
]


class RecordingProxy:
    """An HTTP proxy that answers nothing and remembers every request line it is sent."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._socket.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.lines.append(conn.recv(4096).split(b"\r\n", 1)[0].decode())
                except OSError:
                    self.lines.append("(connection without a request line)")

    @property
    def requests(self) -> list[str]:
        """What the page asked for: every request line but the browser's own housekeeping."""
        return [line for line in self.lines if host_of(line) not in BROWSER_HOSTS]

    def close(self) -> None:
        self._socket.close()


def host_of(request_line: str) -> str:
    """`GET http://host/path HTTP/1.1` or `CONNECT host:443 HTTP/1.1` -> host."""
    target = request_line.split(" ")[1] if request_line.count(" ") >= 2 else ""
    return urlsplit(target if "//" in target else f"//{target}").hostname or ""


@pytest.fixture
def proxy() -> Iterator[RecordingProxy]:
    recorder = RecordingProxy()
    yield recorder
    recorder.close()


def chromium(page: Path, proxy: RecordingProxy, tmp_path: Path, *args: str) -> str:
    assert CHROMIUM
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        f"--proxy-server={proxy.url}",
        "--proxy-bypass-list=<-loopback>",  # loopback too: nothing may leave the page
    ]
    done = subprocess.run(
        [CHROMIUM, *flags, *args, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


class Page(HTMLParser):
    """The rendered DOM as text, elements and the text of each `<h2>` section."""

    def __init__(self, dom: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.sections: dict[str, str] = {}
        self._heading: str | None = None
        self._in_h2 = False
        self._chunks: list[str] = []
        self.feed(dom)
        self.text = "".join(self._chunks)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag == "h2":
            self._in_h2, self._heading = True, ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2":
            self._in_h2 = False
        self._chunks.append(" " if tag in ("div", "p", "li", "td", "span", "strong") else "")

    def handle_data(self, data: str) -> None:
        self._chunks.append(data)
        if self._in_h2 and self._heading is not None:
            self._heading += data
        elif self._heading:
            self.sections[self._heading] = self.sections.get(self._heading, "") + data + " "

    def section(self, prefix: str) -> str:
        (name,) = [name for name in self.sections if name.startswith(prefix)]
        return self.sections[name]

    def tags(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.elements if name == tag]


@pytest.fixture(scope="module")
def job(prefect_harness: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One audit for the module's tests (each costs ~20 s): the fake registry, inputs named as a
    user names them (tests/fixtures/...)."""
    folder = tmp_path_factory.mktemp("report-job")
    root = Path(__file__).parent.parent
    with FakeRegistry() as registry, pytest.MonkeyPatch.context() as env:
        for name, value in point_env_at(registry, folder).items():
            env.setenv(name, value)
        env.chdir(root)
        audit_job(
            JobParams(
                inputs=[str(p.relative_to(root)) for p in INPUTS],
                job_id="crew",
                out_dir=str(folder / "out"),
                styles=["apa"],
            )
        )
    yield folder / "out" / "crew"


def test_the_reader_sees_counts_notices_flags_claims_and_bibliography(job, proxy, tmp_path):
    page = Page(chromium(job / "report.html", proxy, tmp_path, "--dump-dom"))
    citations = pl.read_parquet(job / "citations.parquet")
    for status, count in citations.group_by("status").len().iter_rows():
        assert f"{status}: {count}" in page.text
    headings = [h.split(" (")[0] for h in page.sections]
    assert headings[:3] == ["Retracted, corrected or of concern", "Needs attention", "Claims"]
    retracted = page.section("Retracted")
    for shown in ("Methylphenidate Exposure", "retraction-watch", "2024-01-01", "sadasivan2012"):
        assert shown in retracted
    flagged = citations.filter(pl.col("status").is_in(["mismatch", "not_found", "unmatched"]))
    attention = page.section("Needs attention")
    assert flagged.height == 3
    for row in flagged.iter_rows(named=True):
        assert row["status"] in attention and row["reason"] in attention
    # the mismatch beside the record its DOI names, with what to do
    assert "Engineering Structures" in attention and "Suggested:" in attention
    claims = pl.read_parquet(job / "claims.parquet")
    assert all(text in page.section("Claims") for text in claims["claim_text"])
    entries = [a for a in page.tags("div") if a.get("class") == "csl-entry"]
    notes = (UNCONFIRMED_HEADING, UNCONFIRMED_NOTE)
    apa = [line for line in (job / "bibliography.apa.txt").read_text().splitlines() if line]
    apa = [line for line in apa if line not in notes]
    assert len(entries) == len(apa) > 0
    assert "Unitary Control in Quantum Ensembles" in page.section("Bibliography")


def test_a_script_in_a_title_is_text_and_the_page_asks_the_network_nothing(job, proxy, tmp_path):
    page = Page(chromium(job / "report.html", proxy, tmp_path, "--dump-dom"))
    assert HOSTILE_TITLE in page.section("Needs attention")
    assert not page.tags("script") and not page.tags("img")
    (body,) = page.tags("body")
    assert "data-pwned" not in body
    # Self-contained: nothing loads from anywhere; the only links go to identifier resolvers.
    assert not [a for _, a in page.elements if "src" in a]
    links = [str(a["href"]) for a in page.tags("a")]
    assert links and all(h.startswith(RESOLVERS) for h in links)
    assert proxy.requests == []


def test_the_network_check_would_catch_a_request(proxy, tmp_path):
    leaky = tmp_path / "leaky.html"
    leaky.write_text('<!DOCTYPE html><img src="http://images.example.org/pixel.png">')
    chromium(leaky, proxy, tmp_path, "--dump-dom")
    assert any("images.example.org" in line for line in proxy.requests)


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    return width, height


@pytest.mark.parametrize(("name", "size"), [("phone", (420, 900)), ("desktop", (1280, 1000))])
def test_screenshots_at_phone_and_desktop_width(job, proxy, tmp_path, name, size):
    folder = Path(os.environ.get("CITEAUDIT_SCREENSHOTS_DIR") or tmp_path)
    shot = folder / f"report-{name}.png"
    chromium(
        job / "report.html",
        proxy,
        tmp_path,
        f"--screenshot={shot}",
        f"--window-size={size[0]},{size[1]}",
    )
    assert png_size(shot) == size
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
    assert proxy.requests == []
