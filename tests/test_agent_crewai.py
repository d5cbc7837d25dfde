"""The CrewAI CitationManager tool called as CrewAI calls it (its structured tool: arguments parsed
and validated with the tool's args schema, then run), no LLM; real HTTP to the fake registry and
a real DuckDB library."""

import importlib.util
import os
from pathlib import Path

import pytest

# No telemetry from a test run (CrewAI sends some by default).
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")
pytest.importorskip("crewai", reason="the citeaudit[crewai] extra is not installed")

from flows.agents.crewai import CitationInput, CitationManager  # noqa: E402

FRET = "10.1038/srep16696"
EXAMPLE = Path(__file__).parent.parent / "examples" / "crew_with_citations.py"


def test_the_tool_takes_the_trackers_arguments():
    tool = CitationManager(job="crew-1")
    assert tool.name == "CitationManager" and tool.args_schema is CitationInput
    fields = set(CitationInput.model_fields)
    assert {"operation", "doi", "pmid", "url", "citation_ids", "format_type", "page_number",
            "export_format"} <= fields  # fmt: skip
    assert CitationInput.model_fields["operation"].is_required()


def test_crewai_runs_each_operation_through_the_tools_schema(registry_env, tmp_path):
    tool = CitationManager(job="crew-1", db=str(tmp_path / "citeaudit.duckdb"))
    run = tool.to_structured_tool().invoke  # what CrewAI's tool usage calls

    added = run({"operation": "add", "doi": FRET, "claim": "FRET shows it", "page_number": "45"})
    assert added.startswith("ACCEPTED [1] verified")
    assert "Use in text as: (Tosatto et al., 2015, p. 45) [1]" in added
    rejected = run('{"operation": "add", "pmid": "29424689"}')  # LLMs send JSON text too
    assert rejected.startswith("REJECTED not_found: PubMed does not hold PMID 29424689")
    cited = run({"operation": "format", "citation_ids": [1], "page_number": 42})
    assert cited == "(Tosatto et al., 2015, p. 42) [1]"
    bibliography = run({"operation": "format", "format_type": "bibliography", "style": "ieee"})
    assert bibliography.splitlines()[2].startswith("[1] L. Tosatto et al.,")
    assert run({"operation": "list"}).startswith("job crew-1: 2 citations, 1 accepted")
    assert run({"operation": "validate"}).startswith("validated 2 citations of job crew-1")
    assert "@article{tosatto2015" in run({"operation": "export", "export_format": "bibtex"})

    # bad arguments: one line the agent can act on, never an exception
    assert run({"operation": "delete"}) == (
        "Error: unknown operation 'delete' (use add, validate, format, export, list)"
    )
    assert run({"operation": "add"}) == (
        "Error: give exactly one of doi, pmid, arxiv, url or reference"
    )
    assert run({"operation": "export", "export_format": "docx"}).startswith(
        "Error: format must be one of bibtex, ris, csljson"
    )
    assert tool.run(operation="format", citation_ids="9") == (
        "Error: job crew-1 has no citation '9' (give an id or a number)"
    )
    assert tool.run(operation="list", style=["apa"]) == (
        "Error: style: Input should be a valid string"
    )


def test_the_example_crew_is_built_with_the_tool(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "not-used: the crew is built, never run")
    spec = importlib.util.spec_from_file_location("crew_with_citations", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    crew = example.build_crew("alpha-synuclein oligomers", "crew-example")
    assert [a.role for a in crew.agents] == ["Researcher", "Writer"]
    assert all(isinstance(a.tools[0], CitationManager) for a in crew.agents)
    assert crew.agents[0].tools[0].job == "crew-example"
