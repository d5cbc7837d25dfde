"""Keep Prefect quiet unless asked: must be imported before prefect itself."""

import logging
import os

os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
logging.getLogger("sqlalchemy").setLevel(logging.CRITICAL)
