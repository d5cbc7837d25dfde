"""A research crew whose agents cite only what citeaudit accepted (needs `citeaudit[crewai]` and an
LLM the crew can use, e.g. OPENAI_API_KEY).

    uv run python examples/crew_with_citations.py "alpha-synuclein oligomers" crew-run-17

The researcher adds every source with the CitationManager tool while it works; the writer cites
only accepted ones and ends with the job's bibliography. Afterwards the same job is in the library:

    uv run citeaudit report crew-run-17

and the report the crew wrote can be audited as any crew report (`citeaudit audit report.md`).
"""

import sys

from crewai import Agent, Crew, Process, Task

from flows.agents.crewai import CitationManager


def build_crew(topic: str, job: str) -> Crew:
    citations = CitationManager(job=job)
    researcher = Agent(
        role="Researcher",
        goal=f"Find the strongest published evidence on {topic}",
        backstory="A careful scientist who cites only sources a registry confirms.",
        tools=[citations],
    )
    writer = Agent(
        role="Writer",
        goal="Write a short evidence summary that cites only accepted sources",
        backstory="A science writer who never invents a reference.",
        tools=[citations],
    )
    research = Task(
        description=(
            f"Research {topic}. Add every source you rely on with CitationManager (operation "
            "'add', with its DOI, PMID, arXiv id, URL or reference, the claim it supports and "
            "the page). Drop any source the tool rejects."
        ),
        expected_output="Claims, each with the accepted citations' in-text forms.",
        agent=researcher,
    )
    report = Task(
        description=(
            "Write the summary. Cite in text exactly as CitationManager said, and end with the "
            "bibliography from CitationManager (operation 'format', format_type 'bibliography')."
        ),
        expected_output="A Markdown report with numbered citations and a reference list.",
        agent=writer,
        context=[research],
    )
    return Crew(agents=[researcher, writer], tasks=[research, report], process=Process.sequential)


if __name__ == "__main__":
    topic, job = (sys.argv[1:3] + ["alpha-synuclein oligomers", "crew-example"])[:2]
    print(build_crew(topic, job).kickoff())
