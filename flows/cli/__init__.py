"""The `citeaudit` command line (typer), in rooms: app.py the app, its shared options and `fail`;
checks.py the arguments and settings checked before anything runs; run.py running a flow with
progress; summary.py the summary and the `--fail-on` gate; then a file per command group (audit,
imports, jobs, fix, registries, serving, snapshot, zotero). main.py registers them and is the
console script. `python -m flows.cli` runs it."""
