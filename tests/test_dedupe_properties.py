"""Properties of dedupe over perturbed real records: the input order never matters, and running
it again changes nothing."""

from functools import cache
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.audit import Provenance, Reference
from models.csl import CSLDate, CSLItem
from tasks.dedupe import assign_works, records_frame
from tasks.identifiers import identifiers_of
from tasks.read.ris import read

SCOPUS = Path(__file__).parent / "fixtures" / "dedupe" / "00_IBS_permeability_scopus.ris"


@cache
def base_items() -> tuple[CSLItem, ...]:
    return tuple(r.item for r in read([SCOPUS]).references[:40])


def perturbed(item: CSLItem, drop_ids: bool, typo: int, year_shift: int) -> CSLItem:
    title = item.title or ""
    if typo and len(title) > typo:
        title = title[:typo] + title[typo + 1 :]  # one character lost
    update: dict[str, object] = {"title": title.lower() if typo % 2 else title}
    if drop_ids:
        update.update(DOI=None, PMID=None, URL=None)
    if year_shift and item.year():
        update["issued"] = CSLDate.from_year((item.year() or 0) + year_shift)
    return item.model_copy(update=update)


citation = st.tuples(
    st.integers(0, 39), st.booleans(), st.integers(0, 30), st.sampled_from([0, 0, 1, -1])
)


def references(specs: list[tuple[int, bool, int, int]]) -> list[Reference]:
    refs = []
    for n, (base, drop_ids, typo, shift) in enumerate(specs):
        item = perturbed(base_items()[base], drop_ids, typo, shift)
        refs.append(
            Reference(
                citation_id=f"c{n:03d}",
                item=item,
                provenance=Provenance(source_file="p", entry_key=str(n)),
                ids=identifiers_of(item),
            )
        )
    return refs


def assignment(frame: pl.DataFrame) -> dict[str, str]:
    result = assign_works(frame)
    return dict(zip(result.assignments["citation_id"], result.assignments["work_id"], strict=True))


# 12 lists of up to 40 citations per property: each example is two or three whole dedupe runs
# (~1 s each on this machine), and these three properties were 3-4 min of a loaded CI run at 25.
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(specs=st.lists(citation, min_size=1, max_size=40), data=st.data())
def test_input_order_does_not_matter(
    specs: list[tuple[int, bool, int, int]], data: st.DataObject
) -> None:  # noqa: E501
    refs = references(specs)
    shuffled = data.draw(st.permutations(refs))
    assert assignment(records_frame(shuffled)) == assignment(records_frame(refs))


@SETTINGS
@given(specs=st.lists(citation, min_size=1, max_size=40))
def test_running_again_changes_nothing(specs: list[tuple[int, bool, int, int]]) -> None:
    frame = records_frame(references(specs))
    first = assign_works(frame)
    assert assign_works(frame).assignments.equals(first.assignments)
    again = assign_works(frame, first.library_rows(frame))
    assert again.new_works == 0
    assert again.assignments["work_id"].equals(first.assignments["work_id"])


def chain_ends(assignments: pl.DataFrame) -> set[str]:
    """Where following `duplicate_of` from each citation ends (a citation outside the batch, or
    one that duplicates nothing); fails on a loop."""
    partner = dict(zip(assignments["citation_id"], assignments["duplicate_of"], strict=True))
    ends = set()
    for start in partner:
        seen, at = {start}, start
        while partner.get(at) is not None:
            at = partner[at]
            assert at not in seen, f"duplicate_of loops through {at}"
            seen.add(at)
        ends.add(at)
    return ends


@SETTINGS
@given(specs=st.lists(citation, min_size=1, max_size=40))
def test_duplicate_of_leads_to_a_founder_or_an_earlier_job(
    specs: list[tuple[int, bool, int, int]],
) -> None:
    earlier = records_frame(references(specs))
    stored = assign_works(earlier)
    assert chain_ends(stored.assignments) <= set(
        stored.assignments.filter(pl.col("duplicate_of").is_null())["citation_id"]
    )
    # The same list cited by a later job: its citations join the earlier job's works.
    later = earlier.with_columns(
        (pl.lit("later/") + pl.col(name)).alias(name) for name in ("citation_id", "source")
    )
    result = assign_works(later, stored.library_rows(earlier))
    assert result.new_works == 0
    assert chain_ends(result.assignments) <= set(earlier["citation_id"])
