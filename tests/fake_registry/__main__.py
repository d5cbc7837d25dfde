"""Run the fake registry by hand: `uv run python -m tests.fake_registry [--latency 0.05]`.

Prints the environment that points citeaudit at it, then serves until interrupted."""

import argparse
import tempfile
import time
from pathlib import Path

from tests.fake_registry.fixtures import point_env_at
from tests.fake_registry.server import FakeRegistry


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added per response")
    parser.add_argument("--no-limits", action="store_true", help="switch rate limits off")
    args = parser.parse_args()
    state = Path(tempfile.mkdtemp(prefix="citeaudit-demo-"))
    with FakeRegistry(latency=args.latency, rate_limits=not args.no_limits) as registry:
        for name, value in point_env_at(registry, state).items():
            print(f"export {name}={value}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
