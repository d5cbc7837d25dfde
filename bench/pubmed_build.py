"""Building a pubmed snapshot from PubMed's baseline: synthetic baseline files in the
format NLM publishes (`pubmedYYnNNNN.xml.gz`, each a `<PubmedArticleSet>` of PER_FILE
`<PubmedArticle>`s) made from the recorded efetch answers (tests/fixtures/registry, real PubMed
records with abstracts, MeSH and all), each given its own PMID and its title a word of its own.

Figures as bench/dump_build.py gives them. Goal: a baseline of 1M citations built in <= 5 min.

Run: nice uv run python -m bench.pubmed_build [--records N ...] [--workdir DIR]
(default 1,000,000; each N in a fresh process tree; the files are kept under DIR, default
/tmp/citeaudit-bench)
"""

import gzip
import json
import re
from pathlib import Path

from bench.crossref_build import _word
from bench.dump_build import WORKERS, main, write_gzipped

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "fixtures" / "registry" / "pubmed_articles.jsonl.gz"
PER_FILE = 30_000  # as NLM's baseline files hold
HEADER = b'<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet>\n<PubmedArticleSet>\n'
_PMID = re.compile(r'<PMID Version="1">\d+</PMID>')


def write_files(folder: Path, records: int) -> None:
    """The baseline files of `records` citations; a file already written is kept."""
    with gzip.open(RECORDED, "rt", encoding="utf-8") as lines:
        articles = [json.loads(line)["xml"] for line in lines]
    folder.mkdir(parents=True, exist_ok=True)
    for number, start in enumerate(range(0, records, PER_FILE), start=1):
        target = folder / f"pubmed26n{number:04d}.xml.gz"
        if target.is_file():
            continue
        body = []
        for n in range(start, min(start + PER_FILE, records)):
            xml = _PMID.sub(f'<PMID Version="1">{n + 1}</PMID>', articles[n % len(articles)], 1)
            body.append(xml.replace("</ArticleTitle>", f" {_word(n)}</ArticleTitle>", 1))
        encoded = HEADER + "\n".join(body).encode("utf-8") + b"\n</PubmedArticleSet>\n"
        write_gzipped(target, encoded)


def _build(files: Path, root: Path) -> None:
    from tasks.snapshots import pubmed, store

    store.build(pubmed.BUILDER, [files], root, workers=WORKERS)


if __name__ == "__main__":
    main("bench.pubmed_build", "pubmed", write_files, _build, __doc__)
