"""What a job's run says at its end: the summary on stdout, and `--fail-on`'s gate, which exits 1
when an outcome it names occurs."""

import textwrap
from collections import Counter
from typing import TYPE_CHECKING

import typer

from flows.cli.app import out, usage_error
from tasks.plural import counted

if TYPE_CHECKING:
    from models.job import JobSummary


# `--fail-on` names statuses, `retracted` (a flag beside the status), `missing` (a citation whose
# reference the input does not hold: an input error of that kind) and `any`: every outcome a
# reader must look at.
RETRACTED = "retracted"
MISSING = "missing"
FLAGGED_OUTCOMES = ("mismatch", "not_found", "unmatched", "unverified", RETRACTED, MISSING)


def parse_gate(text: str) -> set[str]:
    """The outcomes `--fail-on` fails the run on."""
    from models.status import Status

    wanted = {s.strip() for s in text.split(",") if s.strip()}
    known = [s.value for s in Status] + [RETRACTED, MISSING, "any"]
    unknown = sorted(wanted - set(known))
    if unknown:
        usage_error(f"--fail-on: unknown status {', '.join(unknown)} (known: {', '.join(known)})")
    if "any" in wanted:
        wanted = (wanted - {"any"}) | set(FLAGGED_OUTCOMES)
    return wanted


def gate_failed(summary: "JobSummary", gate: set[str]) -> bool:
    """Whether the job has an outcome of `gate`; if so, which tripped it, said on stderr (a CI
    log shows why the step failed without scrolling back through the summary)."""
    counts = dict(summary.status_counts)
    counts[RETRACTED] = int(summary.metrics.get(RETRACTED, 0))
    counts[MISSING] = sum(1 for e in summary.input_errors if e.kind == MISSING)
    tripped = [f"{counts[o]} {o}" for o in sorted(gate) if counts.get(o, 0)]
    if tripped:
        typer.echo(f"citeaudit: --fail-on {','.join(sorted(gate))}: {', '.join(tripped)}", err=True)
    return bool(tripped)


def print_item(line: str) -> None:
    """A line of a list (a flagged citation, an input error): on a terminal, wrapped at spaces to
    its width, the rest indented under it (left whole, the terminal breaks it mid-word); piped
    or captured, one line each, for grep."""
    if out.is_terminal:
        line = textwrap.fill(
            line,
            width=out.width,
            subsequent_indent="      ",
            break_long_words=False,  # a path or URL longer than the line stays whole
            break_on_hyphens=False,
        )
    out.print(line, soft_wrap=True)


def print_first(lines: list[str], where: str, shown: int = 20) -> None:
    """The first `shown` lines of a list (print_item each), then how many more and `where` the
    rest are."""
    for line in lines[:shown]:
        print_item(line)
    if len(lines) > shown:
        out.print(f"  ... and {len(lines) - shown} more (see {where})")


def no_registry_answered(summary: "JobSummary") -> bool:
    """Every citation unverified, some because asking failed (not --offline's choice): the
    network or the registries' addresses are wrong, which the user needs told at once."""
    unverified = summary.status_counts.get("unverified", 0)
    failed = any(f.error for f in summary.flagged if f.label == "unverified")
    return unverified == summary.citations > 0 and failed


def print_summary(summary: "JobSummary") -> None:
    from rich.table import Table

    out.print(f"job {summary.job_id}: {summary.citations} citations", highlight=False)
    table = Table()
    table.add_column("status")
    table.add_column("count", justify="right")
    for status, count in summary.status_counts.items():
        table.add_row(status, str(count))
    out.print(table)
    # Unverified citations usually share one cause (offline, registry down): say it once.
    unchecked = Counter(f.error or f.reason for f in summary.flagged if f.label == "unverified")
    flagged = [f for f in summary.flagged if f.label != "unverified"]
    if flagged:
        out.print(f"{counted(len(flagged), 'citation')} need attention:", style="red")
        print_first(
            [f"  {f.label}  {f.source_file}:{f.entry_key}: {f.reason}" for f in flagged],
            "report.html",
        )
    if summary.flagged_left_out:
        out.print(
            f"{counted(summary.flagged_left_out, 'more flagged citation')} past the first "
            f"{len(summary.flagged):,} (see citations.parquet)",
            style="red",
        )
    if unchecked:
        # a big import's summary lists its first flagged citations only (report.py's cap)
        listed = unchecked.total()
        total = max(listed, summary.status_counts.get("unverified", 0))
        more = f" (the reasons of the first {listed})" if total > listed else ""
        out.print(f"{counted(total, 'citation')} could not be checked{more}:", style="yellow")
        for reason, count in unchecked.most_common(5):
            print_item(f"  {count} x {reason}")
        rest = unchecked.most_common()[5:]
        if rest:
            others = sum(count for _, count in rest)
            out.print(f"  ... and {others} more, for {counted(len(rest), 'other reason')}")
        if no_registry_answered(summary):
            out.print(
                "No registry answered (no network?): --offline skips the registries; "
                "the README's 'No internet?' recipe runs against the fake registry.",
                style="yellow",
                soft_wrap=True,  # one line, for grep
            )
    errors = summary.input_errors
    if errors:
        out.print(f"{counted(len(errors), 'input error')}:", style="yellow")
        print_first([f"  {e.where}: {e.reason}" for e in errors], "input_errors.parquet")
    support = summary.metrics.get("claim_support")
    if isinstance(support, dict) and support["pairs"]:
        out.print(
            f"claim support: {support['related']} related, {support['unrelated']} unrelated, "
            f"{support['no_abstract']} without abstract (of {support['pairs']} cited works); "
            f"{support['stances']['contradicts']} contradicting",
            highlight=False,
        )
    elif isinstance(support, str) and summary.metrics.get("claims"):
        out.print(f"claim support: {support}", highlight=False)
    out.print(f"outputs: {summary.out}", highlight=False)
