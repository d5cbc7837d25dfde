"""A local stand-in for Crossref, doi.org and NCBI E-utilities serving real recorded data.

See server.py for the URL layout and tests/fixtures/registry/README.md for the data.
"""

from tests.fake_registry.faults import Fault, FaultRule
from tests.fake_registry.server import FakeRegistry, RequestRecord

__all__ = ["Fault", "FaultRule", "FakeRegistry", "RequestRecord"]
