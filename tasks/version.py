"""The installed citeaudit's version, as its package metadata gives it (`pyproject.toml`)."""

from importlib.metadata import version


def citeaudit_version() -> str:
    """What `citeaudit --version` prints, the MCP server reports and the registries see."""
    return version("citeaudit")
