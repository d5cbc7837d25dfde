"""Scoring a job: `confidence` (each citation's confidence and each claim's strength, after the
ModelChorus formulas, extended by what the audit found) and `metrics` (those scores laid out as
the job's tables and metrics)."""
