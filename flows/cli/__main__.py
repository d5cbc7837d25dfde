"""`python -m flows.cli`: the `citeaudit` command (tests and benchmarks run it so)."""

from flows.cli.main import main

main()
