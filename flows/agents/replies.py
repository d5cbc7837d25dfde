"""The agent service's answers as short plain text for an LLM: what an add, a validation, an
in-text citation and a job's list say (the same facts are the answer's JSON)."""

from collections.abc import Mapping, Sequence
from typing import Any

from models.audit import Status
from tasks.plural import counted


def status_counts(citations: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = {s.value: 0 for s in Status}
    for c in citations:
        counts[c["status"]] += 1
    return counts


def verdict(c: Mapping[str, Any]) -> str:
    if c["retracted"]:
        return "REJECTED (retracted)"
    if not c["accepted"]:
        return "REJECTED"
    return "HELD (not validated)" if c["status"] == Status.UNVERIFIED else "ACCEPTED"


def added_text(job: str, c: Mapping[str, Any]) -> str:
    number = f" [{c['number']}]" if c["number"] else ""
    again = " (already in the job)" if c["already_in_job"] else ""
    lines = [f"{verdict(c)}{number} {c['status']}{again}: {c['reason']}"]
    if c["accepted"] and not c["retracted"]:
        if c["reference"]:
            lines.append(f"Reference: {c['reference']}")
        if c["in_text"]:
            lines.append(f"Use in text as: {c['in_text']}")
        if c["status"] == Status.UNVERIFIED:
            lines.append("Could not be checked now; run validate later before relying on it.")
    else:
        lines.append("Do not cite this source.")
        if c["found_record"]:
            lines.append(f"The identifier you gave belongs to: {c['found_record']}")
        if c["probably_meant"]:
            lines.append(f"The title you gave is: {c['probably_meant']}")
    lines.append(f"id {c['id']}, completeness {c['completeness']:.0%}, job {job}")
    return "\n".join(lines)


def citation_line(c: Mapping[str, Any]) -> str:
    number = f"[{c['number']}]" if c["number"] else "[-]"
    what = c["reference"] or c["source"] or ""
    return f"{number} {c['status']} {what} (id {c['id']})"


def list_text(job: str, citations: Sequence[Mapping[str, Any]]) -> str:
    if not citations:
        return f"job {job} has no citations yet"
    accepted = [c for c in citations if c["accepted"]]
    rejected = [c for c in citations if not c["accepted"]]
    # An unverified citation is held, not accepted: nothing vouched for it yet.
    held = sum(c["status"] == Status.UNVERIFIED for c in accepted)
    counts = f"{len(accepted) - held} accepted" + (f", {held} held (not validated)" if held else "")
    lines = [f"job {job}: {counted(len(citations), 'citation')}, {counts}"]
    lines += [citation_line(c) for c in accepted]
    if rejected:
        lines.append(f"rejected ({len(rejected)}), do not cite:")
        lines += [f"{citation_line(c)}: {c['reason']}" for c in rejected]
    return "\n".join(lines)


def validated_text(
    job: str, citations: Sequence[Mapping[str, Any]], changed: Sequence[Mapping[str, Any]]
) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in status_counts(citations).items() if n)
    lines = [f"validated {len(citations)} citations of job {job}: {counts}"]
    lines += [f"changed: {c['id']} {c['was']} -> {c['now']}" for c in changed]
    rejected = [c for c in citations if not c["accepted"]]
    if rejected:
        lines.append("rejected, do not cite:")
        lines += [f"{citation_line(c)}: {c['reason']}" for c in rejected]
    return "\n".join(lines)


def intext_text(cites: Sequence[Mapping[str, Any]]) -> str:
    lines = []
    for c in cites:
        if c["in_text"]:
            lines.append(c["in_text"])
        else:
            lines.append(f"{c['id']}: not citable ({c['status']}: {c['reason']})")
    return "\n".join(lines)
