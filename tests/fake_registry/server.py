"""The fake registry: one local HTTP server imitating Crossref, doi.org and NCBI E-utilities.

    with FakeRegistry() as registry:          # bundled real records, real rate limits
        httpx.get(f"{registry.crossref_url}/works/10.1371/journal.pone.0033693")
        registry.count("works_single")         # -> 1

Mount points (base = http://127.0.0.1:PORT):
    {base}/crossref  GET /works/{doi}, /works?filter=doi:A,doi:B&rows=N,
                     /works?query.bibliographic=TEXT&rows=N, /works/{doi}/agency
    {base}/doi       GET /{doi} (Accept: application/vnd.citationstyles.csl+json)
    {base}/eutils    GET|POST efetch.fcgi?db=pubmed&id=1,2, GET|POST esearch.fcgi?term=..&retmax=N
    {base}/llm       POST /chat/completions (the claim-support judge; chat_api.py)

Endpoint kinds counted: works_single, works_filter, works_query, works_list, agency,
content_negotiation, efetch, esearch, xxe_canary, unknown.
"""

import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tasks.registries.settings import RegistrySettings
from tests.fake_registry import (
    arxiv_api,
    arxiv_oai,
    chat_api,
    crossref_api,
    dblp_api,
    europepmc_api,
    eutils_api,
    openalex_api,
    s2_api,
)
from tests.fake_registry.data import RegistryData, error_body
from tests.fake_registry.faults import REDIRECT_HOST, Fault, FaultPlan, FaultRule
from tests.fake_registry.limits import Pool, PoolLimit
from tests.fake_registry.reply import Reply, text_reply
from tests.fake_registry.scholarly_data import ScholarlyData
from tests.fake_registry.serving import Serving

CROSSREF_PUBLIC = PoolLimit(rate=5, concurrency=1)
CROSSREF_POLITE = PoolLimit(rate=10, concurrency=5)
NCBI_ANONYMOUS = PoolLimit(rate=3)
NCBI_WITH_KEY = PoolLimit(rate=10)
DBLP = PoolLimit(rate=1, concurrency=1)
ARXIV = PoolLimit(rate=1, concurrency=1, window=3.0)
S2_WITH_KEY = PoolLimit(rate=1)
S2_SHARED = PoolLimit(rate=1)
OPENALEX_WITH_KEY = PoolLimit(rate=10)
OPENALEX_KEYLESS = PoolLimit(rate=1)
EUROPEPMC = PoolLimit(rate=10)
LLM = PoolLimit(rate=2, concurrency=2)  # what the judge asks by default
# The scholarly services: mount point -> service name in the request log.
SCHOLARLY = {"dblp", "arxiv", "s2", "openalex", "europepmc"}
_MAINTENANCE_PAGE = (
    "<!DOCTYPE html><html><head><title>Maintenance</title></head>"
    "<body><h1>We'll be back soon</h1><p>The service is under maintenance.</p></body></html>"
)
_GATEWAY_404 = (
    "<html><head><title>404 Not Found</title></head>"
    "<body><center><h1>404 Not Found</h1></center><hr><center>nginx</center></body></html>"
)


@dataclass(frozen=True)
class RequestRecord:
    """One request as the server saw it. `status` is None when the connection was dropped."""

    at: float  # time.monotonic() on arrival
    service: str  # crossref | doi | eutils | canary | unknown
    endpoint: str
    pool: str
    method: str
    path: str  # path and query string as sent
    status: int | None
    fault: str | None
    host: str = ""  # the Host header: which name the client addressed
    user_agent: str = ""


@dataclass(frozen=True)
class _Route:
    service: str
    endpoint: str
    doi: str = ""


def route(path: str, params: dict[str, str]) -> _Route:
    """Which service and endpoint kind a request path (without query) is for."""
    if path.startswith("/crossref/works/"):
        doi = unquote(path[len("/crossref/works/") :])
        if doi.endswith("/agency"):
            return _Route("crossref", "agency", doi[: -len("/agency")])
        return _Route("crossref", "works_single", doi)
    if path.rstrip("/") == "/crossref/works":
        if any(params.get(name) for name in crossref_api.QUERY_FIELDS):
            return _Route("crossref", "works_query")
        if crossref_api.filter_dois(params.get("filter", "")):
            return _Route("crossref", "works_filter")
        return _Route("crossref", "works_list")
    if path.startswith("/doi/") and len(path) > len("/doi/"):
        return _Route("doi", "content_negotiation", unquote(path[len("/doi/") :]))
    if path.startswith("/eutils/"):
        name = path[len("/eutils/") :]
        if name in ("efetch.fcgi", "esearch.fcgi"):
            return _Route("eutils", name.removesuffix(".fcgi"))
    if path == "/xxe-canary":
        return _Route("canary", "xxe_canary")
    return _scholarly_route(path, params)


def _scholarly_route(path: str, params: dict[str, str]) -> _Route:
    service, _, rest = path.lstrip("/").partition("/")
    rest = "/" + rest.rstrip("/")
    if service == "dblp" and rest == "/search/publ/api":
        return _Route("dblp", "dblp_search")
    if service == "arxiv" and rest == "/api/query":
        return _Route("arxiv", "arxiv_ids" if params.get("id_list") else "arxiv_search")
    if service == "arxiv" and rest == "/oai2":
        return _Route("arxiv", "arxiv_oai")
    if service == "s2" and rest == "/paper/batch":
        return _Route("s2", "s2_batch")
    if service == "s2" and rest == "/paper/search/match":
        return _Route("s2", "s2_match")
    if service == "s2" and rest.startswith("/paper/"):
        return _Route("s2", "s2_paper", unquote(rest[len("/paper/") :]))
    if service == "openalex" and rest == "/works":
        by_doi = params.get("filter", "").startswith("doi:")
        return _Route("openalex", "openalex_dois" if by_doi else "openalex_search")
    if service == "europepmc" and rest == "/search":
        return _Route("europepmc", "europepmc_search")
    if service == "llm" and rest == "/chat/completions":
        return _Route("llm", "chat_completions")
    return _Route("unknown", "unknown")


class FakeRegistry(Serving):
    """A real HTTP server on 127.0.0.1 serving recorded Crossref, DataCite and PubMed data.

    bundled:     load tests/fixtures/registry (else start EMPTY and add records yourself)
    synthetic:   also load the synthetic retraction cases (10.5555/citeaudit.*, PMID 99000001-2)
    rate_limits: enforce the pools' limits with 429s (limits are advertised either way)
    latency:     seconds to wait before every answer (requests count as in flight meanwhile)
    seed:        seed of the RNG that decides which requests a rate-based fault hits
    tolerance:   seconds shaved off the 1 s sliding window, to forgive clock jitter
    """

    def __init__(
        self,
        *,
        bundled: bool = True,
        synthetic: bool = True,
        rate_limits: bool = True,
        latency: float = 0.0,
        seed: int = 0,
        tolerance: float = 0.05,
    ) -> None:
        self.data = RegistryData(bundled=bundled, synthetic=synthetic)
        self.scholarly = ScholarlyData(bundled=bundled)
        self.rate_limits = rate_limits
        self.latency = latency
        self.faults = FaultPlan(seed=seed)
        self.pools = {
            "crossref-public": Pool("public", PoolLimit(**vars(CROSSREF_PUBLIC)), tolerance),
            "crossref-polite": Pool("polite", PoolLimit(**vars(CROSSREF_POLITE)), tolerance),
            "eutils-anonymous": Pool("anonymous", PoolLimit(**vars(NCBI_ANONYMOUS)), tolerance),
            "eutils-api-key": Pool("api-key", PoolLimit(**vars(NCBI_WITH_KEY)), tolerance),
            "doi": Pool("doi", PoolLimit(rate=None), tolerance),
            "dblp": Pool("dblp", PoolLimit(**vars(DBLP)), tolerance),
            "arxiv": Pool("arxiv", PoolLimit(**vars(ARXIV)), tolerance),
            "s2-api-key": Pool("api-key", PoolLimit(**vars(S2_WITH_KEY)), tolerance),
            "s2-shared": Pool("shared", PoolLimit(**vars(S2_SHARED)), tolerance),
            "openalex-api-key": Pool("api-key", PoolLimit(**vars(OPENALEX_WITH_KEY)), tolerance),
            "openalex-keyless": Pool("keyless", PoolLimit(**vars(OPENALEX_KEYLESS)), tolerance),
            "europepmc": Pool("europepmc", PoolLimit(**vars(EUROPEPMC)), tolerance),
            "llm": Pool("llm", PoolLimit(**vars(LLM)), tolerance),
            "other": Pool("other", PoolLimit(rate=None), tolerance),
        }
        self.llm_key: str | None = None  # the Bearer key the chat endpoint insists on, if any
        self.thread_name = "fake-registry"
        self.oai_page_size = arxiv_oai.PAGE_SIZE  # records per OAI-PMH ListRecords page
        self._log: list[RequestRecord] = []
        self._log_lock = threading.Lock()

    @classmethod
    def empty(cls, **options: Any) -> "FakeRegistry":
        """A registry holding no records: fill it with add_crossref_work() and friends."""
        return cls(bundled=False, **options)

    def _new_server(self) -> ThreadingHTTPServer:
        return _Server(("127.0.0.1", 0), _Handler, self)

    @property
    def crossref_url(self) -> str:
        """Stands for https://api.crossref.org."""
        return f"{self.base_url}/crossref"

    @property
    def doi_url(self) -> str:
        """Stands for https://doi.org."""
        return f"{self.base_url}/doi"

    @property
    def pubmed_url(self) -> str:
        """Stands for https://eutils.ncbi.nlm.nih.gov/entrez/eutils."""
        return f"{self.base_url}/eutils"

    @property
    def dblp_url(self) -> str:
        """Stands for https://dblp.org."""
        return f"{self.base_url}/dblp"

    @property
    def arxiv_url(self) -> str:
        """Stands for https://export.arxiv.org."""
        return f"{self.base_url}/arxiv"

    @property
    def s2_url(self) -> str:
        """Stands for https://api.semanticscholar.org/graph/v1."""
        return f"{self.base_url}/s2"

    @property
    def openalex_url(self) -> str:
        """Stands for https://api.openalex.org."""
        return f"{self.base_url}/openalex"

    @property
    def europepmc_url(self) -> str:
        """Stands for https://www.ebi.ac.uk/europepmc/webservices/rest."""
        return f"{self.base_url}/europepmc"

    @property
    def llm_url(self) -> str:
        """Stands for an OpenAI-compatible endpoint (https://api.openai.com/v1, a local vLLM).
        Not in urls(): the judge is optional and stays off unless a test sets it."""
        return f"{self.base_url}/llm"

    def urls(self) -> dict[str, str]:
        """Every registry's base URL, by RegistrySettings field."""
        return {
            "crossref_url": self.crossref_url,
            "pubmed_url": self.pubmed_url,
            "doi_url": self.doi_url,
            "dblp_url": self.dblp_url,
            "arxiv_url": self.arxiv_url,
            "s2_url": self.s2_url,
            "openalex_url": self.openalex_url,
            "europepmc_url": self.europepmc_url,
        }

    def settings(self, **overrides: Any) -> RegistrySettings:
        """Client settings aimed at this fake, HTTP cache off unless overridden."""
        return RegistrySettings(**{**self.urls(), "cache_enabled": False, **overrides})

    @property
    def canary_url(self) -> str:
        """The URL the external-entity fault points at; fetches are counted as xxe_canary."""
        return f"{self.base_url}/xxe-canary"

    # -- data --------------------------------------------------------------------------------

    def add_crossref_work(self, work: dict[str, Any]) -> None:
        self.data.add_crossref_work(work)

    def add_datacite_record(self, doi: str, csl: dict[str, Any]) -> None:
        self.data.add_datacite_record(doi, csl)

    def add_pubmed_article(self, xml_text: str) -> str:
        return self.data.add_pubmed_article(xml_text)

    # -- limits, latency, faults -------------------------------------------------------------

    def set_crossref_limit(
        self, limit: int | None = None, concurrency: int | None = None, *, pool: str | None = None
    ) -> None:
        """Change what Crossref advertises and enforces, mid-run if need be. `pool` is "public",
        "polite" or None for both; a None limit/concurrency leaves that value unchanged."""
        for name in ("public", "polite") if pool is None else (pool,):
            target = self.pools[f"crossref-{name}"].limit
            if limit is not None:
                target.rate = limit
            if concurrency is not None:
                target.concurrency = concurrency

    def set_pubmed_limit(self, limit: int, *, api_key: bool = False) -> None:
        self.pools["eutils-api-key" if api_key else "eutils-anonymous"].limit.rate = limit

    def inject_fault(
        self,
        fault: Fault | str,
        *,
        rate: float = 0.0,
        count: int | None = None,
        service: str | None = None,
        endpoint: str | None = None,
        path_contains: str | None = None,
        slow_seconds: float = 5.0,
        huge_bytes: int = 20_000_000,
        redirect_to: str | None = None,
    ) -> FaultRule:
        """Answer matching requests with `fault`: the next `count` of them, or each with
        probability `rate` (seeded). Match on service (crossref|doi|eutils), endpoint kind and a
        substring of the path. Rules are tried in the order they were added."""
        return self.faults.add(
            FaultRule(
                Fault(fault),
                rate=rate,
                count=count,
                service=service,
                endpoint=endpoint,
                path_contains=path_contains,
                slow_seconds=slow_seconds,
                huge_bytes=huge_bytes,
                redirect_to=redirect_to,
            )
        )

    def reset(self) -> None:
        """Clear counters, the request log, faults and rate-limit windows (not data or limits)."""
        with self._log_lock:
            self._log.clear()
        self.faults.clear()
        for pool in self.pools.values():
            pool.reset()

    # -- counters ----------------------------------------------------------------------------

    @property
    def log(self) -> list[RequestRecord]:
        with self._log_lock:
            return list(self._log)

    def count(
        self, endpoint: str | None = None, *, service: str | None = None, status: int | None = None
    ) -> int:
        """Requests received (429s and faults included) matching every given criterion."""
        return sum(
            1
            for r in self.log
            if (endpoint is None or r.endpoint == endpoint)
            and (service is None or r.service == service)
            and (status is None or r.status == status)
        )

    def counts(self) -> Counter[str]:
        """Requests received per endpoint kind."""
        return Counter(r.endpoint for r in self.log)

    def rate_limited(self, service: str | None = None) -> int:
        """429s sent."""
        return self.count(service=service, status=429)

    def max_in_flight(self, service: str) -> int:
        """Most requests to `service` in flight at once (all its pools), since the last reset."""
        return max(
            (p.max_in_flight for key, p in self.pools.items() if key.startswith(service)),
            default=0,
        )

    def _record(self, record: RequestRecord) -> None:
        with self._log_lock:
            self._log.append(record)

    # -- answering ---------------------------------------------------------------------------

    def _pool_key(self, service: str, params: dict[str, str], s2_key: bool = False) -> str:
        if service == "crossref":
            return "crossref-polite" if params.get("mailto") else "crossref-public"
        if service == "eutils":
            return "eutils-api-key" if params.get("api_key") else "eutils-anonymous"
        if service == "s2":
            return "s2-api-key" if s2_key else "s2-shared"
        if service == "openalex":
            return "openalex-api-key" if params.get("api_key") else "openalex-keyless"
        if service in SCHOLARLY or service == "llm":
            return service
        return "doi" if service == "doi" else "other"

    def _answer(
        self,
        target: _Route,
        params: dict[str, str],
        accept: str,
        data: RegistryData | None = None,
        body: bytes = b"",
        authorization: str = "",
    ) -> Reply:
        data, scholarly = data or self.data, self.scholarly
        match target.endpoint:
            case "chat_completions":
                return chat_api.complete(body, self.llm_key, authorization)
            case "dblp_search":
                return dblp_api.search(scholarly, params)
            case "arxiv_ids" | "arxiv_search":
                return arxiv_api.query(scholarly, params)
            case "arxiv_oai":
                return arxiv_oai.list_records(scholarly, params, self.oai_page_size)
            case "s2_batch":
                return s2_api.batch(scholarly, params, body)
            case "s2_match":
                return s2_api.match(scholarly, params)
            case "s2_paper":
                return s2_api.paper(scholarly, target.doi, params)
            case "openalex_dois" | "openalex_search":
                return openalex_api.works(scholarly, params)
            case "europepmc_search":
                return europepmc_api.search(scholarly, params)
            case "works_single":
                return crossref_api.work(data, target.doi)
            case "agency":
                return crossref_api.agency(data, target.doi)
            case "works_filter" | "works_query" | "works_list":
                return crossref_api.works(data, params)
            case "content_negotiation":
                return crossref_api.content_negotiation(data, target.doi, accept)
            case "efetch":
                return eutils_api.efetch(data, params)
            case "esearch":
                return eutils_api.esearch(data, params)
            case "xxe_canary":
                return text_reply("canary", 200, "text/plain")
        return text_reply("Not Found", 404, "text/plain")

    def _too_many(self, target: _Route, pool: Pool) -> Reply:
        rate = pool.limit.rate or 0
        if target.service == "eutils":
            return eutils_api.rate_limit_exceeded("127.0.0.1", rate + 1, rate)
        if target.service == "dblp":
            return dblp_api.too_many()
        if target.service == "s2":
            return s2_api.too_many()
        if target.service == "openalex":
            return openalex_api.too_many()
        return text_reply("Too Many Requests", 429, "text/plain")

    def _fault_reply(
        self, rule: FaultRule, target: _Route, normal: Reply, request: "_Handler"
    ) -> Reply:
        match rule.fault:
            case Fault.NOT_FOUND:
                return text_reply(_GATEWAY_404, 404, "text/html")
            case Fault.EMPTY:
                nothing = RegistryData(bundled=False)
                return self._answer(target, request.params, request.accept, nothing)
            case Fault.PARTIAL:
                return self._answer(target, _every_other_record(request.params), request.accept)
            case Fault.REDIRECT if rule.redirect_to:
                reply = text_reply("Temporary Redirect", 307, "text/plain")
                reply.headers["Location"] = f"{rule.redirect_to}{request.path}"
                return reply
            case Fault.REDIRECT:
                port = self._server.server_address[1] if self._server else 0
                reply = text_reply("Moved Permanently", 301, "text/plain")
                reply.headers["Location"] = f"http://{REDIRECT_HOST}:{port}{request.path}"
                return reply
            case Fault.SERVER_ERROR:
                if target.service == "crossref":
                    return text_reply(
                        error_body("crossref_server_error.json"), 500, "application/json"
                    )
                return text_reply("Internal Server Error", 500, "text/plain")
            case Fault.UNAVAILABLE:
                reply = text_reply("Service Temporarily Unavailable", 503, "text/html")
                reply.headers["Retry-After"] = "1"
                return reply
            case Fault.CHATTY:
                return chat_api.chatty(request.body) if normal.status == 200 else normal
            case Fault.WRONG_CONTENT_TYPE:
                return text_reply(_MAINTENANCE_PAGE, 200, "text/html; charset=utf-8")
            case Fault.BILLION_LAUGHS:
                return eutils_api.billion_laughs(target.endpoint)
            case Fault.EXTERNAL_ENTITY:
                return eutils_api.external_entity(target.endpoint, self.canary_url)
            case Fault.HUGE:
                opener = (
                    b'<?xml version="1.0" ?>\n<PubmedArticleSet><!--'
                    if "xml" in normal.content_type
                    else b'{"status":"ok","message-type":"work","message":{"padding":"'
                )
                return Reply(200, opener, normal.content_type)
        return normal  # SLOW, TRUNCATED and DROP alter how the normal answer is sent

    def _crossref_headers(self, pool: Pool) -> dict[str, str]:
        headers = {"x-rate-limit-interval": "1s", "x-api-pool": pool.name}
        if pool.limit.rate is not None:
            headers["x-rate-limit-limit"] = str(pool.limit.rate)
        if pool.limit.concurrency is not None:
            headers["x-concurrency-limit"] = str(pool.limit.concurrency)
        return headers


def _every_other_record(params: dict[str, str]) -> dict[str, str]:
    """A batch request cut to the records at even positions (the first always stays)."""
    if "id" in params:
        ids = [pmid for pmid in params["id"].split(",") if pmid.strip()]
        return {**params, "id": ",".join(ids[::2])}
    dois = crossref_api.filter_dois(params.get("filter", ""))
    return {**params, "filter": ",".join(f"doi:{doi}" for doi in dois[::2])}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        registry: FakeRegistry,
    ) -> None:
        self.registry = registry
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real services allow
    timeout = 30  # idle keep-alive connections end instead of pinning threads
    disable_nagle_algorithm = True  # else headers and body wait ~40 ms on delayed ACKs
    server: _Server
    params: dict[str, str]
    accept: str
    body: bytes = b""  # a POST's body, as read by _params

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silent: the registry keeps its own request log."""

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _params(self) -> dict[str, str]:
        query = urlsplit(self.path).query
        self.body = b""
        if self.command == "POST":
            length = int(self.headers.get("Content-Length") or 0)
            self.body = self.rfile.read(length) if length else b""
            body = self.body.decode("utf-8", "replace")
            if "x-www-form-urlencoded" in self.headers.get("Content-Type", ""):
                query = f"{query}&{body}" if query else body
        # Repeated parameters join with commas, as E-utilities reads `id=1&id=2`.
        return {k: ",".join(v) for k, v in parse_qs(query, keep_blank_values=True).items()}

    def _handle(self) -> None:
        registry = self.server.registry
        arrived = time.monotonic()
        params = self.params = self._params()
        self.accept = self.headers.get("Accept", "")
        host = self.headers.get("Host", "")
        target = route(urlsplit(self.path).path, params)
        pool_key = registry._pool_key(
            target.service, params, s2_key=bool(self.headers.get("x-api-key"))
        )
        pool = registry.pools[pool_key]
        pool.arrive()
        admitted = pool.admit(enforce=registry.rate_limits)
        rule: FaultRule | None = None
        try:
            if admitted:
                reply = registry._answer(
                    target,
                    params,
                    self.accept,
                    body=self.body,
                    authorization=self.headers.get("Authorization", ""),
                )
                rule = registry.faults.pick(target.service, target.endpoint, self.path, host)
                if rule is not None:
                    reply = registry._fault_reply(rule, target, reply, self)
            else:
                reply = registry._too_many(target, pool)
            if target.service == "crossref":
                reply.headers.update(registry._crossref_headers(pool))
            elif target.service == "eutils" and pool.limit.rate is not None:
                reply.headers.setdefault("X-RateLimit-Limit", str(pool.limit.rate))
            # Logged before answering, so a client that has its answer sees it counted.
            registry._record(
                RequestRecord(
                    at=arrived,
                    service=target.service,
                    endpoint=target.endpoint,
                    pool=pool_key,
                    method=self.command,
                    path=self.path,
                    status=None if rule and rule.fault is Fault.DROP else reply.status,
                    fault=rule.fault.value if rule else None,
                    host=host,
                    user_agent=self.headers.get("User-Agent", ""),
                )
            )
            if registry.latency:
                time.sleep(registry.latency)
            self._send(reply, rule)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, e.g. timed out on a slow answer
        finally:
            pool.depart(admitted)

    def _send(self, reply: Reply, rule: FaultRule | None) -> None:
        fault = rule.fault if rule else None
        if fault is Fault.DROP:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault is Fault.SLOW and rule is not None:
            time.sleep(rule.slow_seconds)
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if fault is Fault.HUGE and rule is not None:
            self._send_huge(reply, rule.huge_bytes)
            return
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        if fault is Fault.TRICKLE and rule is not None:
            for index in range(len(reply.body)):
                self.wfile.write(reply.body[index : index + 1])
                self.wfile.flush()
                time.sleep(rule.slow_seconds)
        elif fault is Fault.TRUNCATED:
            self.wfile.write(reply.body[: len(reply.body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        else:
            self.wfile.write(reply.body)

    def _send_huge(self, reply: Reply, size: int) -> None:
        """The reply's opening, then padding up to `size` bytes, delimited by closing the
        connection (no Content-Length: a client must cap what it reads)."""
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        self.wfile.write(reply.body)
        chunk = b"x" * 65536
        remaining = max(size - len(reply.body), 0)
        while remaining > 0:
            self.wfile.write(chunk[: min(remaining, len(chunk))])
            remaining -= len(chunk)
