"""The network layer: one HTTP stack (rate limit, retry, cache) and a client per registry.

settings.py reads the registries' settings from the environment and says which registries are
asked; clients.py builds the clients over the HTTP stack (http.py, limits.py, cache.py,
transports.py), one module per registry beside it. The package itself imports the settings
only: a command reads and checks them (a usage error answers at once) without loading the HTTP
stack.
"""

from tasks.registries.settings import (
    REGISTRY_NAMES,
    RegistrySettings,
    SettingsError,
    read_settings,
    registry_status,
)

__all__ = [
    "REGISTRY_NAMES",
    "RegistrySettings",
    "SettingsError",
    "read_settings",
    "registry_status",
]
