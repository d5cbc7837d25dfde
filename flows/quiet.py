"""Keep Prefect quiet unless asked: must be imported before prefect itself."""

import logging
import os

os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
logging.getLogger("sqlalchemy").setLevel(logging.CRITICAL)


class Reported(logging.Filter):
    """Drops Prefect's traceback of a flow failure the CLI reports itself in one line."""

    def __init__(self, *kinds: type[BaseException]) -> None:
        super().__init__()
        self.kinds = kinds

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, self.kinds)
