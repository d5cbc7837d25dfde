"""Keep Prefect quiet unless asked: must be imported before prefect itself."""

import logging
import os

os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
logging.getLogger("sqlalchemy").setLevel(logging.CRITICAL)


class Reported(logging.Filter):
    """Drops Prefect's report of a run failure the CLI reports itself in one line: of the given
    exceptions always, and of any failure (a task's and the flow's exception, tracebacks and
    final states, each ERROR) when `failures`: citeaudit runs no task retries, so each such
    record is about the failure that ends the run."""

    def __init__(self, *kinds: type[BaseException], failures: bool = False) -> None:
        super().__init__()
        self.kinds = kinds
        self.failures = failures

    def filter(self, record: logging.LogRecord) -> bool:
        if self.failures and record.levelno >= logging.ERROR:
            return False
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, self.kinds)
