"""Which registries index a reference's kind of work, in the order they are asked.

A reference without identifier is searched by title in the registries that hold its kind:

    kind         how it is recognised                              registries, in order
    cs           a computer-science venue (the venue table's       dblp, semantic_scholar,
                 conferences, CS journals and series), or an       openalex, crossref
                 OpenReview / ACL Anthology link                   (not arXiv: a preprint
                                                                   proves no venue)
    preprint     an arXiv/CoRR venue or an arXiv mention           arxiv, dblp, semantic_scholar,
                                                                   openalex, crossref
    biomedical   bioRxiv/medRxiv or biomedical words in title      pubmed, europepmc, crossref,
                 or venue                                          openalex
    other        anything else                                     crossref, openalex,
                                                                   semantic_scholar, pubmed

The first registry whose candidate verifies decides; the rest are asked only while nothing has.
A reference with an arXiv id naming a venue is looked up at arXiv first (chunk.py); a record of
the preprint verifies it only if no registry (nor snapshot) places the paper at a venue
(`preprint_for_a_venue`: the search for the published version goes on).
Registries not selected (CITEAUDIT_REGISTRIES) or without a required key are left out.

A registry that fails leaves the reference `unverified` (it may hold it), unless the kind's
registry of record answered (`of_record`): DBLP for a paper claimed at a CS venue of the venue
table (not at one of its workshops, which DBLP often lacks), arXiv for a preprint claimed at
arXiv/CoRR. Each indexes every such work, so a failure of the broader indexes asked after it
(Semantic Scholar's keyless pool refusing, its common state) does not hold back `unmatched`;
the reason names who failed. A complete snapshot of the registry of record, dated after the
year claimed, answers for it (absence.py): what it lacks is `unmatched` with no live search."""

import re
from typing import Literal

from models.audit import Reference, Status, ValidationResult
from models.csl import CSLItem
from tasks.identifiers import is_arxiv_doi
from tasks.match.venues import is_preprint_venue, venue_of

Kind = Literal["cs", "preprint", "biomedical", "other"]

ORDER: dict[Kind, tuple[str, ...]] = {
    "cs": ("dblp", "semantic_scholar", "openalex", "crossref"),
    "preprint": ("arxiv", "dblp", "semantic_scholar", "openalex", "crossref"),
    "biomedical": ("pubmed", "europepmc", "crossref", "openalex"),
    "other": ("crossref", "openalex", "semantic_scholar", "pubmed"),
}
# Journals of the venue table that DBLP indexes (its conferences and series all are).
_CS_JOURNALS = frozenset(
    {
        "TACL", "SIGMODREC", "VLDBJ", "TODS", "JMLR", "TMLR", "MLJ", "TPAMI", "IJCV", "TNNLS",
        "TIP", "TKDE", "AIJ", "JAIR", "NECO", "NN", "CACM", "NATMI",
    }
)  # fmt: skip
_BIOMEDICAL_PREPRINTS = frozenset({"BIORXIV", "MEDRXIV"})
_CS_HOSTS = re.compile(r"openreview\.net|aclanthology\.org|aclweb\.org/anthology", re.IGNORECASE)
_WORKSHOP = re.compile(r"\bworkshops?\b", re.IGNORECASE)
_ARXIV = re.compile(r"\barxiv\b|\bcorr\b", re.IGNORECASE)
BIOMEDICAL = re.compile(
    r"\b(med\w*|clin\w*|biol\w*|bioch\w*|cell\w*|genet\w*|genom\w*|neuro\w*|pharm\w*|cancer|"
    r"oncol\w*|onco\w*|health|lancet|jama|bmj|nurs\w*|surg\w*|pediatr\w*|psychiatr\w*|immun\w*|"
    r"infect\w*|epidemiol\w*|patients?|disease\w*|protein\w*|mice|mouse|rats?|trial\w*|therap\w*|"
    r"tumou?r\w*|cardi\w*|diabet\w*|virus|viral|bacteri\w*|dna|rna|physiol\w*|pathol\w*)\b",
    re.IGNORECASE,
)


def kind_of(ref: Reference) -> Kind:
    """What kind of work the reference claims to cite (see the module table)."""
    item = ref.item
    venue = venue_of(item.container_title) or venue_of(item.event_title)
    if venue is not None:
        if venue.key in _BIOMEDICAL_PREPRINTS:
            return "biomedical"
        if venue.kind == "preprint":
            return "preprint"
        if venue.kind in ("conference", "series") or venue.key in _CS_JOURNALS:
            return "cs"
    url = ref.ids.url or item.URL
    if url and _CS_HOSTS.search(url):
        return "cs"
    text = " ".join(p for p in (item.container_title, item.title, ref.raw) if p)
    if BIOMEDICAL.search(text):
        return "biomedical"
    if _ARXIV.search(" ".join(p for p in (item.container_title, item.publisher, ref.raw) if p)):
        return "preprint"
    return "other"


def of_record(ref: Reference) -> str | None:
    """The registry that indexes every work of the kind the reference claims, by its claimed
    venue (see the module docstring); None where no one registry does."""
    venue_text = ref.item.container_title or ref.item.event_title
    venue = venue_of(ref.item.container_title) or venue_of(ref.item.event_title)
    if venue is None or (venue_text and _WORKSHOP.search(venue_text)):
        return None
    if venue.kind == "preprint" and venue.key not in _BIOMEDICAL_PREPRINTS:
        return "arxiv"
    if venue.kind in ("conference", "series") or venue.key in _CS_JOURNALS:
        return "dblp"
    return None


def search_order(ref: Reference, asked: set[str]) -> list[str]:
    """The registries to search for `ref`, in order, among those `asked` (active)."""
    return [name for name in ORDER[kind_of(ref)] if name in asked]


def preprint_for_a_venue(ref: Reference, result: ValidationResult) -> bool:
    """Verified by a preprint record while the reference names a known published venue."""
    if result.status is not Status.VERIFIED or result.record is None:
        return False
    claimed = venue_of(ref.item.container_title) or venue_of(ref.item.event_title)
    published = claimed is not None and claimed.kind in ("conference", "journal")
    return published and _is_preprint_record(result.registry, result.record)


def _is_preprint_record(registry: str | None, record: CSLItem) -> bool:
    """A record of the preprint itself: arXiv's, or one whose venue is a preprint server (CoRR),
    or an arXiv DOI's record naming no venue. A record that names a venue places it there."""
    if registry_name(registry) == "arxiv" or is_preprint_venue(record.container_title):
        return True
    return is_arxiv_doi(record.DOI) and not record.container_title


def registry_name(registry: str | None) -> str | None:
    """The registry a result names: a snapshot's label (`arxiv@2026-11-01`) names its registry."""
    return registry.partition("@")[0] if registry else None
