"""Reader throughput on the real IRIDIA library (3,305 BibTeX entries in 6 files), and on
100,000 entries made by repeating its citation entries under new keys (optimistic: repeated
strings hit the LaTeX decoding cache). Run: uv run python -m bench.bench_read
"""

import re
import tempfile
import time
from pathlib import Path

from tasks.read.bibtex import read_bibtex

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
IRIDIA = DATA / "reflists" / "bib" / "iridia"
_KEY = re.compile(r"^(@(?!string|preamble|comment)\w+\s*\{\s*)([^,\s]+)", re.I | re.M)


def main() -> None:
    if not IRIDIA.is_dir():
        print(f"skipped: {IRIDIA} not found (the shared data sits beside the repository)")
        return
    paths = sorted(IRIDIA.glob("*.bib"))
    started, cpu = time.perf_counter(), time.process_time()
    result = read_bibtex(paths)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    count = len(result.references)
    print(
        f"IRIDIA: {count} references ({len(result.errors)} errors) from {len(paths)} files "
        f"in {seconds:.2f} s ({cpu:.2f} s CPU) = {cpu / count * 1e3:.3f} ms CPU per reference"
    )

    macros = [p for p in paths if p.name in ("abbrev.bib", "authors.bib", "journals.bib")]
    entries = (IRIDIA / "articles.bib").read_text(encoding="utf-8")
    per_copy = len(_KEY.findall(entries))
    copies = -(-100_000 // per_copy)
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.bib"
        big.write_text(
            "\n".join(_KEY.sub(rf"\g<1>\g<2>-{n}", entries) for n in range(copies)),
            encoding="utf-8",
        )
        started, cpu = time.perf_counter(), time.process_time()
        result = read_bibtex([*macros, big])
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(
        f"synthetic: {len(result.references)} references in {seconds:.1f} s ({cpu:.1f} s CPU) "
        f"(goal: 100,000 in <= 20 s)"
    )


if __name__ == "__main__":
    main()
