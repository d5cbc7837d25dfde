"""The Prefect side: the job flows (audit, crew, bulk, scheduled), the stage list (steps.py), the
Prefect runtime (server, serve, runners, interrupt, progress, artifacts), and the entry points:
cli/ (the `citeaudit` command) and agents/ (the agent service, MCP, CrewAI)."""
