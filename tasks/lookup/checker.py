"""The `Checker`: the one way references are looked up and decided, whoever asks (an audit's
tasks, an agent, `citeaudit fix`, a re-check). It holds what a lookup needs (the registry clients
or none, the local snapshots, the job's deadline) and is used like `httpx.Client`:

    with Checker(read_settings(), snapshots=LocalSnapshots.open(root)) as checker:
        checked = checker.check(references)

Given a `RegistryPool`, it takes that pool's client set for the settings (the pool's owner
closes it); without one it builds its own pool and closes it on leaving. Settings None: offline,
the snapshots alone are asked. `process_checker` is a process's own checker, for the stages
Prefect runs as tasks: a task's arguments cannot carry live clients into a worker thread or a
Dask worker process, so the process is their scope (all its threads share one limiter per
registry and one opening of the snapshots)."""

from collections.abc import Callable, Sequence
from functools import cache
from types import TracebackType

from models.audit import Checked, Reference
from tasks.citation_ids import plan_chunks
from tasks.lookup.chunk import lookup_references
from tasks.lookup.snapshots import LocalSnapshots
from tasks.registries import RegistrySettings, read_settings
from tasks.registries.clients import Registries, RegistryPool
from tasks.snapshots.store import snapshots_root


class Checker:
    """Looks references up (snapshots first, then the registries) and decides their status."""

    def __init__(
        self,
        settings: RegistrySettings | None,
        *,
        pool: RegistryPool | None = None,
        snapshots: LocalSnapshots | None = None,
        deadline: float | None = None,
    ) -> None:
        self._own_pool = pool is None
        self.pool = RegistryPool() if pool is None else pool
        self.registries: Registries | None = (
            None if settings is None else self.pool.registries(settings)
        )
        self.snapshots = snapshots
        self.deadline = deadline

    def check(self, references: Sequence[Reference]) -> list[Checked]:
        """One checked citation per reference, in order. The lookup and the decision go
        together: where a search is routed next depends on what the last candidates decided.
        Past the deadline nothing is asked: what is left stays `unverified`."""
        results = lookup_references(
            references,
            self.registries,
            offline=self.registries is None,
            deadline=self.deadline,
            snapshots=self.snapshots,
        )
        return [Checked(reference=r, result=v) for r, v in zip(references, results, strict=True)]

    def check_in_chunks(
        self,
        references: Sequence[Reference],
        chunk_size: int,
        report: Callable[[int, int], None],
    ) -> list[Checked]:
        """`check`, a chunk (of one lookup kind) at a time, in chunk order; `report(done, total)`
        before the first chunk and after each."""
        checked: list[Checked] = []
        report(0, len(references))
        for chunk in plan_chunks(references, chunk_size):
            checked.extend(self.check(chunk))
            report(len(checked), len(references))
        return checked

    def close(self) -> None:
        if self._own_pool:
            self.pool.close()

    def __enter__(self) -> "Checker":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# The registry clients of this process, for the stages Prefect runs as tasks (see above).
PROCESS_POOL = RegistryPool()


def process_registries() -> Registries:
    """This process's client set for the settings in its environment now: a task reads them
    where it runs (a thread here, a Dask worker process), as they never travel as parameters."""
    return PROCESS_POOL.registries(read_settings())


@cache
def process_snapshots() -> LocalSnapshots | None:
    """This process's local snapshots (CITEAUDIT_SNAPSHOTS), opened once and shared by its
    threads as its registry clients are; None when none is built."""
    return LocalSnapshots.open(snapshots_root())


def process_checker(offline: bool, deadline: float | None = None) -> Checker:
    """A checker over this process's clients and snapshots (leaving it closes nothing)."""
    settings = None if offline else read_settings()
    return Checker(settings, pool=PROCESS_POOL, snapshots=process_snapshots(), deadline=deadline)
