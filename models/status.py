"""A citation's status, apart from the models that carry it (models/audit.py): the standard
library alone, so that the CLI checks `--fail-on` before any model is built."""

from enum import StrEnum


class Status(StrEnum):
    """The honest outcome of checking one citation.

    verified    a registry holds the work and the claimed metadata agrees with it
    mismatch    the identifier exists, but the claimed metadata describes another work
    not_found   the registry asked answered: no such record (a DOI: Crossref holds none and
                knows no registration agency for it; a PMID: PubMed holds none)
    unmatched   no identifier, and no registry candidate matched confidently
    unverified  we could not ask: offline, network error, 5xx, timeout, hostile response
    """

    VERIFIED = "verified"
    MISMATCH = "mismatch"
    NOT_FOUND = "not_found"
    UNMATCHED = "unmatched"
    UNVERIFIED = "unverified"
