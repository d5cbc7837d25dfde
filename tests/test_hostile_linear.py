"""Every reader and sniffer is linear in its input: 5 MB of text made of what its patterns
backtrack over (long whitespace runs, `[^` and `[@key` without a closing bracket, a run of
`-a`) is read in seconds. A quadratic pattern took 30 s on 194 KB and hung a run on 1 MB.
pytest-timeout ends a test that hangs (a timed assertion would wait for it first)."""

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tasks.read.inputs import read_inputs
from tasks.read.manuscript import is_manuscript

MB = 1_000_000
# About 1 MB: each piece is the worst case of one pattern the readers used to have.
POISON = "".join(
    [
        "\t" * 200_000,  # `\s+and\s+`, `\s*;`, `[\s,]+et al`: a run tried from each character
        " \t" * 100_000,
        "[^" * 100_000,  # a footnote marker `[^x]` never closed
        "-a" * 100_000,  # an old arXiv id `hep-th/9901001` never finished
        "[@a " * 50_000,  # a pandoc citation never closed
    ]
)


def bibtex(n: int) -> str:
    return "".join(
        f"@article{{k{i}, author={{{POISON}}}, title={{x}}, pages={{{POISON}}}, year={{2020}}}}\n"
        for i in range(n)
    )


def ris(n: int) -> str:
    return "".join(
        f"TY  - JOUR\nAU  - {POISON}\nSP  - {POISON}\nTI  - x\nER  - \n" for _ in range(n)
    )


def csl(n: int) -> str:
    item = {"type": "article", "author": [{"literal": POISON}], "title": "x", "page": POISON}
    return json.dumps([{**item, "id": f"k{i}"} for i in range(n)])


MAKERS: dict[str, Callable[[], str]] = {
    "refs.bib": lambda: bibtex(3),
    "refs.ris": lambda: ris(3),
    "refs.json": lambda: csl(3),
    "refs.txt": lambda: "\n".join([POISON] * 5),
    "report.md": lambda: (
        "# Report\n\n" + "\n\n".join([POISON] * 4) + "\n\n## References\n\n1. " + POISON
    ),
    "paper.md": lambda: "Text [" + "@a " * (5 * MB // 3),  # the bracket is never closed
    # A heading whose text ends in a long run of spaces (4 KB took 98.6 s).
    "heading.md": lambda: (
        "# a" + " " * (3 * MB) + "x\n\n## References\n\n1. Smith, 2020. A work.\n"
    ),
    "paper.tex": lambda: "\\cite{" + "\\input " * (5 * MB // 7),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", MAKERS)
def test_5_mb_of_adversarial_text_reads_in_seconds(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_text(MAKERS[name](), encoding="utf-8")
    assert path.stat().st_size >= 3 * MB
    is_manuscript(path)
    read = read_inputs([path])
    assert read.references or read.errors  # read to the end, and said what it found
