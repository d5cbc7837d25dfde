"""What every registry client does with a list of ids and a list of answers: ask in batches,
turn a failed batch into failed lookups, and map answers to records, skipping unreadable ones."""

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from models.audit import Lookup, RegistryRecord
from tasks.registries.http import RegistryRequestError, RegistryUnavailable

T = TypeVar("T")


def in_batches(
    ids: Iterable[str], size: int, fetch: Callable[[list[str]], dict[str, Lookup]]
) -> dict[str, Lookup]:
    """`fetch` for each batch of at most `size` distinct ids, the answers merged."""
    wanted = list(dict.fromkeys(ids))
    lookups: dict[str, Lookup] = {}
    for start in range(0, len(wanted), size):
        lookups.update(fetch(wanted[start : start + size]))
    return lookups


def failed(
    batch: Sequence[str], exc: RegistryUnavailable | RegistryRequestError
) -> dict[str, Lookup]:
    """We could not ask: each id keeps the (redacted) error and stays unverified."""
    tries = exc.attempts if isinstance(exc, RegistryUnavailable) else 1
    return {i: Lookup(identifier=i, error=str(exc), attempts=tries) for i in batch}


def records(answers: Iterable[T], to_record: Callable[[T], RegistryRecord]) -> list[RegistryRecord]:
    """The answers as records, in order; an answer that cannot be read is no candidate."""
    found = []
    for answer in answers:
        try:
            found.append(to_record(answer))
        except ValueError:
            continue
    return found
