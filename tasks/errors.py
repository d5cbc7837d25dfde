"""One root for citeaudit's own errors; its two branches decide what an entry point answers.

    CiteauditError
      UsageError           what the user gave is wrong (a file, an argument, a job id, a
                           setting): exit 2, its message shown as it is
        MissingExtra       an optional extra is not installed: the command that installs it
      InfrastructureError  what we run on failed (a registry, the library or its lock, the
                           Prefect server, pandoc): exit 3

Bad content is data, never an exception (a row, an input error); these are for what stops a
command. The CLI, the MCP server and the CrewAI tool map an error by its branch through
`exit_code` and `one_line`, nowhere else. The branches keep the builtin bases (ValueError,
RuntimeError) the classes had, so an existing `except ValueError` still catches what it caught.
"""


class CiteauditError(Exception):
    """An error of ours: a UsageError or an InfrastructureError."""


class UsageError(CiteauditError, ValueError):
    """The input, an argument or a setting is wrong: exit 2."""


class InfrastructureError(CiteauditError, RuntimeError):
    """Something we depend on failed: exit 3."""


class MissingExtra(UsageError, ImportError):
    """An optional extra is not installed: exit 2, naming the command that installs it. An
    ImportError too, so that code importing an extra's module catches it as the import's."""

    def __init__(self, extra: str, needed_by: str) -> None:
        super().__init__(f"{needed_by} needs the {extra} extra: {install_command(extra)}")
        self.extra = extra


def install_command(extra: str) -> str:
    """How an extra installs. citeaudit is not on PyPI: from its checkout with uv, or from the
    wheel `uv build` writes."""
    from tasks.version import citeaudit_version

    wheel = f"dist/citeaudit-{citeaudit_version()}-py3-none-any.whl"
    return f"uv sync --extra {extra} in citeaudit's checkout, or pip install '{wheel}[{extra}]'"


def exit_code(exc: CiteauditError) -> int:
    """2 for a usage error, 3 for anything else that went wrong."""
    return 2 if isinstance(exc, UsageError) else 3


def one_line(exc: BaseException) -> str:
    """An error in one line: a usage error's message as it is (it names the argument and the
    problem); anything else, its kind and message, as an internal error."""
    message = " ".join(str(exc).split())
    if isinstance(exc, UsageError):
        return message
    return f"internal error: {type(exc).__name__}: {message}"
