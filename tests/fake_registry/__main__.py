"""Run the fake registry by hand: `uv run python -m tests.fake_registry [--latency 0.05]`.

Prints the environment that points citeaudit at it (registry URLs and a throwaway HTTP cache,
never the user's library), then serves until interrupted (Ctrl-C or SIGTERM). With `--env-file`
the environment is written there once the registry answers, and removed when it stops: a script
waits for the file instead of guessing a delay."""

import argparse
import os
import signal
import tempfile
import time
from pathlib import Path
from types import FrameType

from tests.fake_registry.fixtures import point_env_at
from tests.fake_registry.server import FakeRegistry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added per response")
    parser.add_argument("--no-limits", action="store_true", help="switch rate limits off")
    parser.add_argument("--env-file", type=Path, help="write the environment here when ready")
    args = parser.parse_args()

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    # The throwaway cache goes with the registry: nothing of a demo is left in /tmp.
    with (
        tempfile.TemporaryDirectory(prefix="citeaudit-demo-") as state,
        FakeRegistry(latency=args.latency, rate_limits=not args.no_limits) as registry,
    ):
        env = point_env_at(registry, Path(state))
        env.pop("CITEAUDIT_DB")  # the user's library stays theirs; the README names a demo one
        lines = "".join(f"export {name}={value}\n" for name, value in env.items())
        print(lines, end="", flush=True)
        if args.env_file:
            tmp = args.env_file.with_name(f".{args.env_file.name}.tmp")
            tmp.write_text(lines, encoding="utf-8")
            os.replace(tmp, args.env_file)  # appears whole, once the registry answers
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        finally:
            if args.env_file:
                args.env_file.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
