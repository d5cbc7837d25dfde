"""Registry throughput of identified citations against the fake registry (tests/fake_registry).

(a) requests per identified (DOI/PMID) citation; goal <= 0.03.
(b) 10,000 identified citations under the real rate limits (polite pool: CITEAUDIT_MAILTO set,
    no NCBI key) with 50 ms latency per answer: wall time / rate-limit bound, where the bound is
    the slowest registry's requests / its permitted rate; goal <= 1.2.
Checked the way the flow does it: tasks.citation_ids.plan_chunks + a thread pool of 4 calling
the check of one shared tasks.lookup Checker. The fake knows 1,364 real Crossref works;
the other DOIs are SYNTHETIC copies of them under 10.5555/citeaudit.synthetic.N (added to the
fake with add_crossref_work). Run: uv run python -m bench.throughput [N]
"""

import os
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from models.audit import Reference, Status
from tasks.citation_ids import plan_chunks
from tasks.lookup.checker import Checker
from tests.fake_registry import FakeRegistry
from tests.fake_registry.server import CROSSREF_POLITE, NCBI_ANONYMOUS
from tests.reliability_data import bare_id_reference, bundled_pmids, bundled_works, synthetic_works

WORKERS = 4
CHUNK = 200
LATENCY_S = 0.05


def citations(registry: FakeRegistry, total: int) -> list[Reference]:
    pmids = list(bundled_pmids())
    n_dois = total - len(pmids)
    works = list(bundled_works())[:n_dois]
    for work in synthetic_works(n_dois - len(works)):
        registry.add_crossref_work(work)
        works.append(work)
    refs = [bare_id_reference(f"d{n}", doi=w["DOI"]) for n, w in enumerate(works)]
    return refs + [bare_id_reference(f"p{p}", pmid=p) for p in pmids]


def run(registry: FakeRegistry, refs: list[Reference]) -> tuple[float, Counter[str]]:
    settings = registry.settings(
        mailto="bench@example.org",
    )
    with (
        Checker(settings) as checker,
        ThreadPoolExecutor(WORKERS) as pool,
    ):
        started = time.perf_counter()
        chunks = plan_chunks(refs, CHUNK)
        results = [c.result for cs in pool.map(checker.check, chunks) for c in cs]
        wall = time.perf_counter() - started
    statuses = Counter(r.status.value for r in results)
    assert len(results) == len(refs) and statuses[Status.UNVERIFIED.value] == 0, statuses
    return wall, statuses


def main() -> None:
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    print(f"machine load before: {os.getloadavg()[0]:.2f} (1 min), nproc {os.cpu_count()}")
    with FakeRegistry(latency=LATENCY_S) as registry:
        refs = citations(registry, total)
        wall, statuses = run(registry, refs)
        crossref = registry.count(service="crossref")
        eutils = registry.count(service="eutils")
        limited = registry.rate_limited()
    requests = crossref + eutils
    assert CROSSREF_POLITE.rate and NCBI_ANONYMOUS.rate
    bound = max(crossref / CROSSREF_POLITE.rate, eutils / NCBI_ANONYMOUS.rate)
    print(
        f"{len(refs)} identified citations ({total - len(bundled_pmids())} DOIs, of which "
        f"{max(0, total - len(bundled_pmids()) - len(bundled_works()))} SYNTHETIC; "
        f"{len(bundled_pmids())} PMIDs): {dict(statuses)}"
    )
    print(
        f"(a) requests per identified citation: {requests / len(refs):.4f} "
        f"({crossref} Crossref + {eutils} E-utilities requests; goal <= 0.03)"
    )
    print(
        f"(b) wall {wall:.2f} s; rate-limit bound {bound:.2f} s "
        f"(Crossref {crossref} req / {CROSSREF_POLITE.rate} per s, "
        f"E-utilities {eutils} req / {NCBI_ANONYMOUS.rate} per s); "
        f"wall / bound = {wall / bound:.2f} (goal <= 1.2); 429s: {limited}; "
        f"{len(refs) / wall:.0f} citations/s"
    )
    print(f"machine load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
