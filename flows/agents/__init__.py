"""What a crew's agents call: service.py (add, validate, format, export, list on a named job),
with mcp.py (an MCP server) and crewai.py (a CrewAI tool) as thin adapters over it."""
