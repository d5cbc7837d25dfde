"""One root for citeaudit's own errors; its two branches decide what an entry point answers.

    CiteauditError
      UsageError           what the user gave is wrong (a file, an argument, a job id, a
                           setting): exit 2, its message shown as it is
      InfrastructureError  what we run on failed (a registry, the library or its lock, the
                           Prefect server, pandoc, an optional extra): exit 3

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
