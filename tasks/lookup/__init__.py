"""Looking references up in the registries: which registries to ask, and one chunk asked of them.

Local snapshots first (snapshots.py; only when some are built, CITEAUDIT_SNAPSHOTS): the
registries' public dumps in DuckDB, asked about the whole chunk at once (identifiers by one
batched query per snapshot, titles by one search per snapshot), each record decided by the same
decision table. A snapshot can verify or find a `mismatch`, named with its date
(`dblp@2026-11-01`); absence decides only from a complete snapshot (built whole, not filtered),
by the rules of absence.py. A claimed year after next year is flagged before any registry is
asked. What no snapshot decided (and any reference whose year is after a snapshot's date) goes
on to the live registries below; offline,
or with none selected, it stays `unmatched` (no identifier) or `unverified`, its reason naming
the snapshots asked. The `retractions` snapshot adds Retraction Watch's notices on every cited
DOI and PMID, whoever decided the reference.

Live routing, per reference (the first that applies; a registry not asked is skipped):
    DOI                  Crossref `fetch_dois`, batched (the client falls back to the DOI's agency,
                         e.g. DataCite); an arXiv DOI (10.48550/arXiv.ID) goes to arXiv instead
    PMID                 PubMed `fetch_pmids`, batched
    PMCID                Europe PMC `fetch_pmcids`, batched
    arXiv id             arXiv `fetch_ids`, batched (Crossref's DataCite DOI when arXiv is off)
    none of these        a title search in the registries that index the reference's kind of
                         work (routing.py), each candidate list judged by
                         `decide_unidentified`; the first registry that verifies decides
A reference with several identifiers is decided by the first; one whose first is not found is
asked by the next (a PMID whose record verifies it proves the work real beside a mistyped DOI).
An identifier whose registry could not be asked is tried by the same id elsewhere: a DOI at
OpenAlex (batched, when its key is set), then what is still unanswered at Semantic Scholar.
An identifier that resolves to another paper altogether (a `mismatch` on title) is followed by a
search for the claimed title in the registry first in line for its kind of work: a record that
verifies is kept as `suggested`, the work the citer probably meant. The status stays `mismatch`.

A preprint record (arXiv, CoRR) verifies a reference that names a published venue only if no
registry places the paper at a venue: the search goes on, and when none does, the reference is a
`mismatch` on venue ("exists only as a preprint"). Non-scholarly sources (`Reference.scholarly`
false) are never sent to a registry.

A failure never spreads: a reference stays `unverified` when a registry that could have decided
it could not be asked and no other decided it; an error while checking one reference becomes
that reference's `unverified` reason. Each result records the registries asked and the requests
spent on it per registry (a batched request counts as its share).

The package: `checker` (the `Checker` every entry point builds: registry clients or none,
snapshots, deadline; `.check(references)`), `routing` (which registries index a reference's kind
of work), `snapshots` (the local snapshots asked first), `absence` (what a complete snapshot's
silence decides) and `chunk` (one chunk of references asked of them: `lookup_references`, the
function the checker calls).
"""

from tasks.lookup.checker import Checker
from tasks.lookup.chunk import lookup_references

__all__ = ["Checker", "lookup_references"]
