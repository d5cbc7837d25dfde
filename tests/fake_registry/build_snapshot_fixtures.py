"""Regenerate tests/fixtures/snapshots/ (dump files in the registries' own formats) from the
recorded answers in tests/fixtures/registry/.

Run from the repo root: `uv run python -m tests.fake_registry.build_snapshot_fixtures`.
Deterministic (sorted, gzip mtime 0). What each file holds, and which of its records are
constructed rather than recorded, is in tests/fixtures/snapshots/README.md.
"""

import gzip
import html
import json
import re
from datetime import UTC, datetime
from email.utils import format_datetime
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET  # our own recorded files, not untrusted input
from xml.sax.saxutils import escape

REPO = Path(__file__).resolve().parents[2]
SOURCES = REPO / "tests" / "fixtures" / "registry"
OUT = REPO / "tests" / "fixtures" / "snapshots"
ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
# The recorded entries were cut from their feeds, whose root declared these namespaces.
_ENTRY = '<entry xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom">'

# The ISO 8879 entities tests/fixtures/snapshots/dblp.dtd declares; dblp writes every other
# character outside ASCII as a character reference.
_DTD_ENTITY = re.compile(r'<!ENTITY\s+(\w+)\s+"&#(\d+);"')

_DBLP_TAGS = {
    "Journal Articles": ("article", None),
    "Conference and Workshop Papers": ("inproceedings", None),
    "Informal and Other Publications": ("article", "informal"),
    "Books and Theses": ("book", None),
    "Parts in Books or Collections": ("incollection", None),
    "Editorship": ("proceedings", None),
}

# Records no recorded answer holds, written in dblp's format for the cases the reader handles.
DBLP_CONSTRUCTED = """\
<inproceedings mdate="2023-03-30" key="conf/nips/VaswaniSPUJGKP17">
<author>Ashish Vaswani</author>
<author>Noam Shazeer</author>
<author>Niki Parmar</author>
<author>Jakob Uszkoreit</author>
<author>Llion Jones</author>
<author>Aidan N. Gomez</author>
<author>Lukasz Kaiser</author>
<author>Illia Polosukhin</author>
<title>Attention is All you Need.</title>
<pages>5998-6008</pages>
<year>2017</year>
<booktitle>NIPS</booktitle>
<ee type="oa">https://proceedings.neurips.cc/paper/2017/hash/3f5ee243547dee91fbd053c1c4a845aa-Abstract.html</ee>
<crossref>conf/nips/2017</crossref>
<url>db/conf/nips/nips2017.html#VaswaniSPUJGKP17</url>
</inproceedings>
<article mdate="2026-11-02" key="journals/corr/abs-2404-05961" publtype="informal">
<author>Laurens van der Maaten</author>
<author>Wei Wang 0001</author>
<author>J&ouml;rg M&uuml;ller 0002</author>
<title>Sparse <i>k</i>-Means for H<sub>2</sub>O Spectra in <tt>R<sup>n</sup></tt>.</title>
<journal>CoRR</journal>
<volume>abs/2404.05961</volume>
<year>2024</year>
<url>db/journals/corr/corr2404.html#abs-2404-05961</url>
</article>
<article mdate="2024-01-05" key="journals/broken/NoTitle24">
<author>Anonymous Reviewer</author>
<journal>Broken J.</journal>
<year>2024</year>
</article>
<article mdate="2024-01-05" key="journals/broken/BadYear24">
<author>Fran&ccedil;ois Dupont</author>
<title>A Record Whose Year Is Not A Year.</title>
<journal>Broken J.</journal>
<year>20x4</year>
</article>
<www mdate="2024-01-05" key="homepages/v/AshishVaswani">
<author>Ashish Vaswani</author>
<title>Home Page</title>
</www>
<proceedings mdate="2019-05-28" key="conf/nips/2017">
<editor>Isabelle Guyon</editor>
<editor>Ulrike von Luxburg</editor>
<title>Advances in Neural Information Processing Systems 30: Annual Conference on Neural \
Information Processing Systems 2017, December 4-9, 2017, Long Beach, CA, USA</title>
<booktitle>NIPS</booktitle>
<year>2017</year>
<url>db/conf/nips/nips2017.html</url>
</proceedings>
"""


def _read_jsonl_gz(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _dblp_escape(text: str, entities: dict[int, str]) -> str:
    out = []
    for char in escape(text):
        code = ord(char)
        if code < 128:
            out.append(char)
        elif code in entities:
            out.append(f"&{entities[code]};")
        else:
            out.append(f"&#{code};")
    return "".join(out)


def _listed(value: Any) -> list[Any]:
    return [] if value is None else value if isinstance(value, list) else [value]


def dblp_xml() -> bytes:
    """dblp.xml: the recorded DBLP hits as dblp records, then the constructed ones."""
    hits = _read_jsonl_gz(SOURCES / "dblp_hits.jsonl.gz")
    return dblp_document(dblp_records(hits) + [DBLP_CONSTRUCTED])


def dblp_records(hits: list[dict[str, Any]]) -> list[str]:
    """DBLP search hits (`result.hits.hit[]` elements) as dblp.xml records, by key, each key
    once; hits of a type dblp.xml has no record for are left out."""
    dtd = (OUT / "dblp.dtd").read_text(encoding="utf-8")
    entities = {int(code): name for name, code in _DTD_ENTITY.findall(dtd)}
    seen: set[str] = set()
    records = []
    for hit in sorted(hits, key=lambda h: h["info"]["key"]):
        info = hit["info"]
        if info["key"] in seen or info.get("type") not in _DBLP_TAGS:
            continue
        seen.add(info["key"])
        tag, publtype = _DBLP_TAGS[info["type"]]
        if tag == "book" and info["key"].startswith("phd/"):
            tag = "phdthesis"
        attrs = f' publtype="{publtype}"' if publtype else ""
        # The search API gives no mdate: the record's year stands in for it.
        lines = [f'<{tag} mdate="{info.get("year", "2020")}-06-01" key="{info["key"]}"{attrs}>']
        for author in _listed((info.get("authors") or {}).get("author")):
            lines.append(f"<author>{_dblp_escape(author['text'], entities)}</author>")
        lines.append(f"<title>{_dblp_escape(html.unescape(info['title']), entities)}</title>")
        if pages := info.get("pages"):
            lines.append(f"<pages>{_dblp_escape(pages, entities)}</pages>")
        if year := info.get("year"):
            lines.append(f"<year>{year}</year>")
        venue = ", ".join(_listed(info.get("venue")))
        if venue:
            field = "journal" if tag == "article" else "booktitle"
            lines.append(f"<{field}>{_dblp_escape(venue, entities)}</{field}>")
        if volume := info.get("volume"):
            lines.append(f"<volume>{_dblp_escape(volume, entities)}</volume>")
        # A hit that gives its DOI but no link: dblp.xml holds the DOI as a doi.org link.
        dois = [f"https://doi.org/{doi}" for doi in _listed(info.get("doi"))]
        links = _listed(info.get("ee")) or dois
        for link in links:
            lines.append(f"<ee>{escape(link)}</ee>")
        lines.append(f"</{tag}>")
        records.append("\n".join(lines))
    return records


def dblp_document(records: list[str]) -> bytes:
    """A dblp.xml of these records: ISO-8859-1, its DOCTYPE naming dblp.dtd."""
    body = "\n".join(record.strip("\n") for record in records) + "\n"
    text = '<?xml version="1.0" encoding="ISO-8859-1"?>\n<!DOCTYPE dblp SYSTEM "dblp.dtd">\n'
    return (text + "<dblp>\n" + body + "</dblp>\n").encode("iso-8859-1")


def _rfc2822(stamp: str) -> str:
    when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return format_datetime(when, usegmt=True)


def atom_entry(xml: str) -> ET.Element:
    """An `<entry>` cut from an arXiv Atom feed, its feed's namespaces restored."""
    return ET.fromstring(xml.replace("<entry>", _ENTRY, 1))


def arxiv_record(entry: ET.Element) -> dict[str, Any]:
    """One recorded Atom entry in the arXiv metadata snapshot's form (Kaggle's JSON lines)."""
    link = entry.findtext(f"{ATOM}id") or ""
    arxiv_id, _, version = link.split("/abs/")[-1].rpartition("v")
    published = entry.findtext(f"{ATOM}published") or ""
    updated = entry.findtext(f"{ATOM}updated") or published
    latest = int(version) if version.isdigit() else 1
    # The Atom entry dates the first and the latest version: the ones between take the latest's.
    versions = [
        {"version": f"v{n}", "created": _rfc2822(published if n == 1 else updated)}
        for n in range(1, latest + 1)
    ]
    names = [a.findtext(f"{ATOM}name") or "" for a in entry.findall(f"{ATOM}author")]
    parsed = [[*reversed(n.rsplit(" ", 1)), ""] if " " in n else [n, "", ""] for n in names]
    categories = [c.get("term") for c in entry.findall(f"{ATOM}category")]
    return {
        "id": arxiv_id,
        "submitter": names[0] if names else None,
        "authors": ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]
        if names
        else "",
        "title": entry.findtext(f"{ATOM}title"),
        "comments": entry.findtext(f"{ARXIV}comment"),
        "journal-ref": entry.findtext(f"{ARXIV}journal_ref"),
        "doi": entry.findtext(f"{ARXIV}doi"),
        "report-no": None,
        "categories": " ".join(c for c in categories if c),
        "license": None,
        "abstract": entry.findtext(f"{ATOM}summary"),
        "versions": versions,
        "update_date": updated[:10],
        "authors_parsed": parsed,
    }


# Cases no recorded entry shows, in the snapshot's form: a withdrawn paper, LaTeX accents in
# names and a title, a line that is no JSON and a record without an id.
ARXIV_CONSTRUCTED = [
    {
        "id": "hep-th/9901001",
        "submitter": "Jos\\'e Garc\\'ia",
        "authors": "Jos\\'e Garc\\'ia and M. M\\\"uller",
        "title": "On the $\\mathcal{N}=4$ Super Yang--Mills Theory at\n  Strong Coupling",
        "comments": "This paper has been withdrawn by the author due to an error in eq. 3",
        "journal-ref": None,
        "doi": None,
        "report-no": None,
        "categories": "hep-th",
        "license": None,
        "abstract": "  This paper has been withdrawn.\n",
        "versions": [
            {"version": "v1", "created": "Fri, 1 Jan 1999 10:00:00 GMT"},
            {"version": "v2", "created": "Mon, 4 Jan 1999 10:00:00 GMT"},
        ],
        "update_date": "2008-02-03",
        "authors_parsed": [["Garc\\'ia", "Jos\\'e", ""], ['M\\"uller', "M.", ""]],
    },
]


def arxiv_jsonl() -> bytes:
    entries = _read_jsonl_gz(SOURCES / "arxiv_entries.jsonl.gz")
    records = [arxiv_record(atom_entry(row["xml"])) for row in entries]
    records += ARXIV_CONSTRUCTED
    lines = [json.dumps(r, ensure_ascii=False) for r in sorted(records, key=lambda r: r["id"])]
    lines.insert(len(lines) // 2, '{"id": "1706.03762", "title": "a line cut short')
    lines.insert(len(lines) // 3, json.dumps({"title": "A record without an id"}))
    return ("\n".join(lines) + "\n").encode("utf-8")


PUBMED_HEADER = (
    '<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, '
    '1st January 2025//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'
)
PUBMED_ARTICLES = 40  # of the recorded ones, by PMID: enough for every case, a small fixture
PUBMED_REVISED = "11618220"  # revised by the update file: retracted
PUBMED_DELETED = "219391"  # deleted by the update file
_REVISED_STAMP = "<DateRevised><Year>2026</Year><Month>11</Month><Day>20</Day></DateRevised>"
_RETRACTION = (
    '<CommentsCorrectionsList><CommentsCorrections RefType="RetractionIn"><RefSource>'
    'Nature. 2026 Oct;600(1):1.</RefSource><PMID Version="1">39999999</PMID>'
    "</CommentsCorrections></CommentsCorrectionsList>"
)
# A record without its MedlineCitation/PMID: skipped and counted.
PUBMED_BROKEN = (
    "<PubmedArticle><MedlineCitation><Article><Journal><Title>Broken J</Title></Journal>"
    "<ArticleTitle>A record without a PMID.</ArticleTitle></Article></MedlineCitation>"
    "</PubmedArticle>"
)


def pubmed_files() -> dict[str, bytes]:
    """The first recorded PubMed articles as a baseline of two files (by PMID) and an update file
    that revises one (now retracted, its notice linked) and deletes another."""
    articles = sorted(
        _read_jsonl_gz(SOURCES / "pubmed_articles.jsonl.gz"), key=lambda r: int(r["pmid"])
    )
    xml = {row["pmid"]: row["xml"] for row in articles[:PUBMED_ARTICLES]}
    pmids = list(xml)
    half = len(pmids) // 2
    revised = re.sub(
        r"<DateRevised>.*?</DateRevised>", _REVISED_STAMP, xml[PUBMED_REVISED], count=1
    )
    revised = revised.replace(
        "</Article>",
        '<PublicationTypeList><PublicationType UI="D016441">'
        "Retracted Publication</PublicationType></PublicationTypeList></Article>",
        1,
    )
    revised = revised.replace("</MedlineCitation>", f"{_RETRACTION}</MedlineCitation>", 1)
    deleted = f'<DeleteCitation><PMID Version="1">{PUBMED_DELETED}</PMID></DeleteCitation>'
    bodies = {
        "pubmed26n0001.xml.gz": [xml[p] for p in pmids[:half]] + [PUBMED_BROKEN],
        "pubmed26n0002.xml.gz": [xml[p] for p in pmids[half:]],
        "pubmed26n0003.xml.gz": [revised, deleted],
    }
    return {
        name: _gzipped(
            PUBMED_HEADER + "<PubmedArticleSet>\n" + "\n".join(records) + "\n</PubmedArticleSet>\n"
        )
        for name, records in bodies.items()
    }


OPENALEX_WORKS = 120  # of the recorded works, in their order: two parts of the first partition
OPENALEX_DATES = ("2026-10-01", "2026-11-01")
# Works no recorded answer shows, in the snapshot's form (the newer partition): an arXiv copy
# found only by its location, a retracted work with a PMID, and a line that is no JSON.
OPENALEX_CONSTRUCTED = [
    {
        "id": "https://openalex.org/W4000000001",
        "doi": None,
        "display_name": "Sparse Attention for Llamas",
        "title": "Sparse Attention for Llamas",
        "publication_year": 2024,
        "type": "preprint",
        "authorships": [{"author": {"display_name": "Ada Lovelace"}, "raw_author_name": "A. L."}],
        "primary_location": {
            "source": {
                "id": "https://openalex.org/S4306400194",
                "display_name": "arXiv (Cornell University)",
                "type": "repository",
            },
            "landing_page_url": "http://arxiv.org/abs/2404.05961",
        },
        "locations": [{"landing_page_url": "http://arxiv.org/abs/2404.05961v2"}],
        "ids": {"openalex": "https://openalex.org/W4000000001"},
        "is_retracted": False,
    },
    {
        "id": "https://openalex.org/W4000000002",
        "doi": "https://doi.org/10.1234/retracted.1",
        "display_name": "A Retracted Result",
        "title": "A Retracted Result",
        "publication_year": 2019,
        "type": "article",
        "authorships": [{"author": {"display_name": "Charles Babbage"}}],
        "primary_location": {
            "source": {
                "id": "https://openalex.org/S1",
                "display_name": "Journal of Engines",
                "type": "journal",
            }
        },
        "ids": {"pmid": "https://pubmed.ncbi.nlm.nih.gov/31000001"},
        "biblio": {"volume": "7", "issue": "2", "first_page": "10", "last_page": "19"},
        "is_retracted": True,
    },
]


def openalex_files() -> dict[str, bytes]:
    """The first recorded OpenAlex works as the works snapshot: two parts of an older
    partition, a newer one revising the first work's title and adding the constructed works,
    and the manifest listing the three. `updated_date` is the partition's (derived)."""
    works = _read_jsonl_gz(SOURCES / "openalex_works.jsonl.gz")[:OPENALEX_WORKS]
    older, newer = OPENALEX_DATES
    revised = {**works[0], "display_name": f"{works[0]['display_name']} (Revised)"}
    half = len(works) // 2
    parts = {
        f"updated_date={older}/part_000.gz": works[:half],
        f"updated_date={older}/part_001.gz": works[half:],
        f"updated_date={newer}/part_000.gz": [revised, *OPENALEX_CONSTRUCTED],
    }
    files = {}
    for name, chosen in parts.items():
        stamp = name.split("=")[1][:10] + "T00:00:00.000000"
        lines = [json.dumps({**work, "updated_date": stamp}, ensure_ascii=False) for work in chosen]
        if name.startswith(f"updated_date={newer}"):
            lines.insert(1, '{"id": "https://openalex.org/W4000000003", "display_name": "cut')
        files[name] = _gzipped("\n".join(lines) + "\n")
    entries = [
        {
            "url": f"s3://openalex/data/works/{name}",
            "meta": {"content_length": len(body), "record_count": body_lines(body)},
        }
        for name, body in files.items()
    ]
    total = {
        "content_length": sum(len(b) for b in files.values()),
        "record_count": sum(body_lines(b) for b in files.values()),
    }
    files["manifest"] = json.dumps({"entries": entries, "meta": total}, indent=2).encode()
    return files


def body_lines(body: bytes) -> int:
    return gzip.decompress(body).count(b"\n")


def _gzipped(text: str) -> bytes:
    return gzip.compress(text.encode("utf-8"), mtime=0)


def main() -> None:
    raw = (OUT / "dblp.xml.gz").open("wb")
    with raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(dblp_xml())
    (OUT / "arxiv-metadata-oai-snapshot.json").write_bytes(arxiv_jsonl())
    (OUT / "pubmed").mkdir(exist_ok=True)
    for name, body in pubmed_files().items():
        (OUT / "pubmed" / name).write_bytes(body)
    works = OUT / "openalex" / "data" / "works"
    for name, body in openalex_files().items():
        (works / name).parent.mkdir(parents=True, exist_ok=True)
        (works / name).write_bytes(body)


if __name__ == "__main__":
    main()
