"""The PDF reader scored against the LaTeX-built fixtures (tests/fixtures/pdf/build.py): the
`.bbl` each build wrote says which references the PDF prints, in which order; the `.json` says
each cited key's title and which keys each body sentence (tagged `F012`) cites."""

import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from pylatexenc.latex2text import LatexNodes2Text

_BIBITEM = re.compile(r"\\bibitem(?![A-Za-z@])\s*")
_ENTRY = re.compile(r"\\entry\{([^}]*)\}\{[^}]*\}\{[^}]*\}(.*?)\\endentry", re.S)
_REFSECTION = re.compile(r"\\refsection\{(\d+)\}(.*?)\\endrefsection", re.S)
_SKIPPED = re.compile(r"(?:\s|%[^\n]*\n)*")
_FIELD_TITLE = re.compile(r"\\field\{title\}\{")


def squeezed(text: str) -> str:
    """Letters and digits only, lower-cased, accents and ligatures undone: how two renderings of
    one title compare."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    return "".join(ch for ch in text.lower() if ch.isascii() and ch.isalnum())


@dataclass(frozen=True)
class Printed:
    """A reference as the .bbl prints it: key, the list it is in, its text (de-TeXed)."""

    key: str
    section: int
    text: str


def _braced(text: str, start: int) -> int:
    """The index just past the group opened at text[start] (`{` or `[`)."""
    opening = text[start]
    closing = "}" if opening == "{" else "]"
    depth = 0
    for index in range(start, len(text)):
        ch = text[index]
        if ch == "\\":
            continue
        if ch == opening and text[index - 1] != "\\":
            depth += 1
        elif ch == closing and text[index - 1] != "\\":
            depth -= 1
            if depth == 0:
                return index + 1
    return len(text)


def printed(bbl: Path) -> list[Printed]:
    text = bbl.read_text(encoding="utf-8", errors="replace")
    to_text = LatexNodes2Text(math_mode="text")
    sections = _REFSECTION.findall(text)
    if sections:
        found = []
        for number, body in sections:
            for key, entry in _ENTRY.findall(body):
                title = ""
                if match := _FIELD_TITLE.search(entry):
                    title = entry[match.end() - 1 : _braced(entry, match.end() - 1)][1:-1]
                found.append(Printed(key, int(number), to_text.latex_to_text(title)))
        return found
    body = text.split("\\begin{thebibliography}", 1)[-1]
    items = _BIBITEM.split(body)[1:]
    found = []
    for item in items:
        position = 0
        if item.startswith("["):
            position = _braced(item, 0)
        skipped = _SKIPPED.match(item, position)
        position = skipped.end() if skipped else position
        end = _braced(item, position)
        key = item[position + 1 : end - 1].strip()
        found.append(Printed(key, 0, _detexed(to_text, item[end:])))
    return found


def _detexed(to_text: LatexNodes2Text, tex: str) -> str:
    # revtex's `\\href@noop {}` is a link without its target, which latex2text cannot take
    return to_text.latex_to_text(re.sub(r"\\href(?:@noop)?\s*", "", tex))


def truth(pdf: Path) -> dict:
    return json.loads(pdf.with_suffix(".json").read_text(encoding="utf-8"))


def printed_titles(pdf: Path) -> list[str]:
    """The titles of the references the PDF prints with their title."""
    titles = truth(pdf)["titles"]
    return [
        titles[p.key]
        for p in printed(pdf.with_suffix(".bbl"))
        if titles.get(p.key) and squeezed(titles[p.key]) in squeezed(p.text)
    ]


_WORD = re.compile(r"[a-z]{3,}")
_TAG = re.compile(r"\bF(\d{3,})\b")


@dataclass
class Score:
    name: str
    printed: int = 0
    rows: int = 0
    titled: int = 0
    titles: int = 0  # titled references whose row holds their title
    stray: int = 0  # rows that are no printed reference
    markers: int = 0  # (sentence, cited key) pairs the body writes
    linked: int = 0  # of those, linked to the right row
    seconds: float = 0.0

    @property
    def title_share(self) -> float:
        return self.titles / self.titled if self.titled else 1.0


def _words(text: str) -> set[str]:
    return set(_WORD.findall(squeezed_words(text)))


def squeezed_words(text: str) -> str:
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    return "".join(ch for ch in text.lower() if ch.isascii())


def score(pdf: Path) -> Score:
    """Rows aligned one to one with the printed references by shared words (best pairs first);
    a title counts when its aligned row holds it whole."""
    import time

    from tasks.read.pdf import read_pdf

    start = time.process_time()
    result = read_pdf(pdf)
    seconds = time.process_time() - start
    known = truth(pdf)
    items = printed(pdf.with_suffix(".bbl"))
    rows = result.references
    row_words = [_words(r.raw or "") for r in rows]
    item_words = [_words(p.text) | _words(known["titles"].get(p.key, "")) for p in items]
    pairs = sorted(
        (
            (len(rw & iw) / max(min(len(rw), len(iw)), 1), r, i)
            for r, rw in enumerate(row_words)
            for i, iw in enumerate(item_words)
            if rw & iw
        ),
        reverse=True,
    )
    row_of: dict[int, int] = {}
    taken: set[int] = set()
    for share, r, i in pairs:
        if share < 0.5 or r in taken or i in row_of:
            continue
        row_of[i] = r
        taken.add(r)
    result_score = Score(pdf.stem, printed=len(items), rows=len(rows), seconds=seconds)
    result_score.stray = len(rows) - len(taken)
    for i, item in enumerate(items):
        title = known["titles"].get(item.key, "")
        if not title or squeezed(title) not in squeezed(item.text):
            continue
        result_score.titled += 1
        if i in row_of and squeezed(title) in squeezed(rows[row_of[i]].raw or ""):
            result_score.titles += 1
    key_of_row = {r: items[i].key for i, r in row_of.items()}
    row_index = {id(ref): n for n, ref in enumerate(rows)}
    claimed: dict[str, set[str]] = {}
    for claim in result.claims:
        tag = _TAG.search(claim.claim_text)
        if tag is None:
            continue
        keys = claimed.setdefault(f"F{tag.group(1)}", set())
        for ref in rows:
            if claim.claim_id in ref.claim_ids and (k := key_of_row.get(row_index[id(ref)])):
                keys.add(k)
    for tag, cited_keys in known["sentences"].items():
        for key in cited_keys:
            result_score.markers += 1
            result_score.linked += key in claimed.get(tag, set())
    return result_score


def main() -> None:
    import sys

    folders = [Path(arg) for arg in sys.argv[1:]] or [
        Path(__file__).resolve().parents[1] / "tests/fixtures/pdf" / split
        for split in ("tune", "heldout")
    ]
    for folder in folders:
        scores = [score(pdf) for pdf in sorted(folder.glob("*.pdf"))]
        print(f"\n{folder.name}")
        print(
            f"{'PDF':<28}{'rows/printed':>14}{'titles':>14}{'stray':>7}{'markers':>16}{'CPU s':>7}"
        )
        for s in scores:
            print(
                f"{s.name:<28}{s.rows:>7}/{s.printed:<6}{s.titles:>6}/{s.titled:<3}{s.title_share:>5.0%}"
                f"{s.stray:>7}{s.linked:>8}/{s.markers:<4}{s.linked / max(s.markers, 1):>4.0%}"
                f"{s.seconds:>7.2f}"
            )
        titled = sum(s.titled for s in scores)
        rows = sum(s.rows for s in scores)
        print(
            f"all: titles {sum(s.titles for s in scores) / max(titled, 1):.1%} "
            f"(lowest PDF {min(s.title_share for s in scores):.0%}), rows "
            f"{rows / max(sum(s.printed for s in scores), 1):.1%} of printed, stray "
            f"{sum(s.stray for s in scores) / max(rows, 1):.1%}, markers linked "
            f"{sum(s.linked for s in scores) / max(sum(s.markers for s in scores), 1):.1%}"
        )


if __name__ == "__main__":
    main()
