"""pandoc runs started before anyone asks for them: an audit starts its bibliographies' runs as
soon as its lookups end, on the items it lists if dedupe merges none of its citations, and
renders while dedupe and scoring run.

`rendering_ahead` starts the runs and yields the `Ahead` that holds them, by their input's
digest; the render is handed that `Ahead` (render_bibliographies(..., ahead=...)) and takes each
run whose input came out byte for byte the same, once. A digest names one input, so whoever
takes it gets what its own run would have given. Runs nobody took are stopped when the block
ends."""

import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from models.csl import CSLItem
from tasks.render.citeproc.pandoc import (
    Pieces,
    RunInput,
    Spawn,
    pandoc_pieces,
    pool_size,
    run_input,
    runs_of,
)


@dataclass(frozen=True)
class _AheadRun:
    future: Future[Pieces]
    spawn: Spawn


class Ahead:
    """pandoc runs started before anyone asked for them, by their input's digest; each is taken
    once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, _AheadRun] = {}

    def start(self, run: RunInput, pool: ThreadPoolExecutor) -> None:
        """Submit the run unless it is started already."""
        digest = run.digest()
        with self._lock:
            if digest not in self._runs:
                spawn = Spawn()
                self._runs[digest] = _AheadRun(pool.submit(pandoc_pieces, run, spawn), spawn)

    def take(self, digest: str) -> Pieces | None:
        with self._lock:
            taken = self._runs.pop(digest, None)
        return None if taken is None else taken.future.result()

    def drop(self) -> None:
        """Stop the runs nobody took: one not started never starts, a running pandoc is killed
        and reaped. Their futures fail, but nobody waits on them any more."""
        with self._lock:
            dropped = list(self._runs.values())
            self._runs.clear()
        for run in dropped:  # outside the lock: a render taking another run need not wait
            run.future.cancel()
            run.spawn.kill()


@contextmanager
def rendering_ahead(
    items: Sequence[CSLItem], styles: Iterable[str], *, in_text: bool = True
) -> Iterator[Ahead]:
    """Start in the background the pandoc runs `render_bibliographies(items, styles,
    in_text=in_text)` would make, and yield them. A render handed them takes each run whose
    input is byte for byte the same as its own and renders the others as usual, so the items
    given here are only a guess (an audit's, before its dedupe has merged works). Runs nobody
    took are stopped at the end."""
    runs = [
        run_input([items[p] for p in positions], style, {}, in_text)
        for style in styles
        for positions in runs_of(items, style)
    ]
    ahead = Ahead()
    pool = ThreadPoolExecutor(max_workers=pool_size(len(runs)), thread_name_prefix="render")
    try:
        for run in runs:
            ahead.start(run, pool)
        yield ahead
    finally:
        ahead.drop()
        # drop stopped the runs nobody took, so their threads end soon; a run a render took must
        # still finish for it, so the block does not wait here.
        pool.shutdown(wait=False)
