"""The `citeaudit` command line (typer): main.py holds the app and its commands, fix.py
`citeaudit fix`, registries.py `citeaudit registries`. `python -m flows.cli` runs it."""
