"""Give each reference a stable citation id and group references for batched lookups."""

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import PurePath

from models.audit import Claim, ReadResult, Reference
from tasks.digests import DigestMap
from tasks.identifiers import PRECEDENCE, primary_identifier


def citation_id_for(ref: Reference, file_keys: Mapping[str, str] | None = None) -> str:
    """Stable across re-runs: the input file's name and the entry's key, hashed.

    The file's name, not its path, so the same list audited from another folder keeps its ids.
    `file_keys` (source file -> its content digest) keys ids by content instead: a bulk import
    resumed from a renamed copy of its list finds the ids it stored."""
    source = ref.provenance.source_file
    name = (file_keys or {}).get(source) or PurePath(source).name
    digest = hashlib.sha1(f"{name}\x1f{ref.provenance.entry_key}".encode()).hexdigest()
    return digest[:16]


def assign_citation_ids(
    refs: Sequence[Reference],
    file_keys: Mapping[str, str] | None = None,
    seen: DigestMap | None = None,
) -> list[Reference]:
    """Ids unique within the job: a repeated (file, key) gets `-2`, `-3`, ... in input order.
    `seen` (id -> times seen; updated) carries this across the batches of one job (a bulk
    import's million: digests, not strings)."""
    seen = DigestMap() if seen is None else seen
    out: list[Reference] = []
    for ref in refs:
        base = citation_id_for(ref, file_keys)
        times = (seen.get(base) or 0) + 1
        seen[base] = times
        cid = base if times == 1 else f"{base}-{times}"
        out.append(ref.model_copy(update={"citation_id": cid}))
    return out


def unused_id(base: str, taken: set[str]) -> str:
    """`base`, else `base-2`, `base-3`, ...: the first not in `taken` (which then holds it)."""
    candidate, suffix = base, 1
    while candidate in taken:
        suffix += 1
        candidate = f"{base}-{suffix}"
    taken.add(candidate)
    return candidate


def unique_claim_ids(
    claims: Sequence[Claim], refs: Sequence[Reference]
) -> tuple[list[Claim], list[Reference]]:
    """Claim ids unique within the job: a claim id an earlier input file used gets `-2`, `-3`,
    ... (its file's references follow), so two files' claims never take each other's results
    (every ICE answer is `answer`, every crew report starts at `p1-s1`)."""
    taken: set[str] = set()
    renamed: dict[tuple[str, str], str] = {}
    for claim in claims:
        key = (claim.source_file, claim.claim_id)
        if key not in renamed:
            renamed[key] = unused_id(claim.claim_id, taken)
    return (
        [c.model_copy(update={"claim_id": renamed[(c.source_file, c.claim_id)]}) for c in claims],
        [
            r.model_copy(
                update={
                    "claim_ids": [
                        renamed.get((r.provenance.source_file, c), c) for c in r.claim_ids
                    ]
                }
            )
            if r.claim_ids
            else r
            for r in refs
        ],
    )


def link_claims(claims: Sequence[Claim], refs: Sequence[Reference]) -> list[Claim]:
    """Fill each claim's citation ids from the references that name it."""
    by_claim: dict[tuple[str, str], list[str]] = {}
    for ref in refs:
        for claim_id in ref.claim_ids:
            by_claim.setdefault((ref.provenance.source_file, claim_id), []).append(ref.citation_id)
    return [
        c.model_copy(
            update={"citation_ids": c.citation_ids or by_claim.get((c.source_file, c.claim_id), [])}
        )
        for c in claims
    ]


def lookup_kind(ref: Reference) -> str:
    """Which registry call a reference needs; chunks are built per kind so batches fill up."""
    primary = primary_identifier(ref.ids)
    return primary[0] if primary else "search"


def plan_chunks(refs: Sequence[Reference], size: int) -> list[list[Reference]]:
    """Chunks of at most `size` references, each of one lookup kind (in input order within kind).

    A Prefect task run costs ~10 ms plus server time, so we pay it per chunk, not per citation."""
    if size < 1:
        raise ValueError("chunk size must be at least 1")
    by_kind: dict[str, list[Reference]] = {}
    for ref in refs:
        by_kind.setdefault(lookup_kind(ref), []).append(ref)
    chunks: list[list[Reference]] = []
    for kind in (*PRECEDENCE, "search"):
        group = by_kind.get(kind, [])
        chunks.extend(group[i : i + size] for i in range(0, len(group), size))
    return chunks


def identify(
    read: ReadResult,
    file_keys: Mapping[str, str] | None = None,
    seen: DigestMap | None = None,
) -> ReadResult:
    """Citation ids (stable, unique in the job; keyed by `file_keys`, source file -> content
    digest, instead of file names when given; `seen` carries them across a job's batches),
    unique claim ids, claims linked to them."""
    refs = assign_citation_ids(read.references, file_keys, seen)
    claims, refs = unique_claim_ids(read.claims, refs)
    return ReadResult(
        references=refs,
        claims=link_claims(claims, refs),
        errors=read.errors,
        subjects=read.subjects,
    )
