"""NCBI E-utilities answers (efetch, esearch) in the shapes recorded in shared/data/pubmed, plus
the hostile XML bodies used to test that clients parse safely."""

import json
import re
from collections.abc import Mapping
from xml.sax.saxutils import escape

from tests.fake_registry.data import RegistryData
from tests.fake_registry.reply import Reply, json_reply, text_reply

XML_TYPE = "text/xml; charset=UTF-8"
JSON_TYPE = "application/json; charset=UTF-8"
PUBMED_HEAD = (
    '<?xml version="1.0" ?>\n'
    '<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" '
    '"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'
)
ESEARCH_HEAD = (
    '<?xml version="1.0" encoding="UTF-8" ?>\n'
    '<!DOCTYPE eSearchResult PUBLIC "-//NLM//DTD esearch 20060628//EN" '
    '"https://eutils.ncbi.nlm.nih.gov/eutils/dtd/20060628/esearch.dtd">\n'
)
ESEARCH_MIN_SCORE = 80.0  # PubMed's boolean search returns only matches, unlike Crossref's
_IDENTIFIER_TERM = re.compile(
    r'"?([^"\[\]]+?)"?\s*\[(doi|pmid|uid|aid|lid|location id)\]', re.IGNORECASE
)
_OR = re.compile(r"\bOR\b")
_FIELD_TAG = re.compile(r"\[[^\]]*\]")
_OPERATORS = re.compile(r"\b(AND|OR|NOT)\b|[()\"]")


def _ids(params: Mapping[str, str]) -> list[str]:
    return [pmid.strip() for pmid in params.get("id", "").split(",") if pmid.strip()]


def efetch(data: RegistryData, params: Mapping[str, str]) -> Reply:
    """`efetch.fcgi?db=pubmed&id=1,2&retmode=xml`: stored articles in request order; unknown ids
    are simply left out, as efetch does."""
    ids = _ids(params)
    if not ids:
        body = (
            '<?xml version="1.0" encoding="UTF-8" ?>\n<eFetchResult>\n'
            "\t<ERROR>Empty id list - nothing todo</ERROR>\n</eFetchResult>\n"
        )
        return text_reply(body, 400, XML_TYPE)
    articles = [data.pubmed[pmid].xml for pmid in dict.fromkeys(ids) if pmid in data.pubmed]
    body = PUBMED_HEAD + "<PubmedArticleSet>\n" + "\n".join(articles) + "\n</PubmedArticleSet>\n"
    return text_reply(body, 200, XML_TYPE)


def search_pmids(data: RegistryData, term: str, limit: int) -> list[str]:
    """Identifier terms (`10.1/x[doi]`, `123[pmid]`) match exactly; other text is ranked fuzzily
    over title, authors, year and journal, keeping only confident matches."""
    exact = [hit for part in _OR.split(term) for hit in _IDENTIFIER_TERM.findall(part)]
    if exact:
        found = []
        for value, field in exact:
            value = value.strip().lower()
            if field.lower() in ("pmid", "uid") and value in data.pubmed:
                found.append(value)
            else:
                found += [a.pmid for a in data.pubmed.values() if a.doi == value]
        return list(dict.fromkeys(found))[:limit]
    text = _OPERATORS.sub(" ", _FIELD_TAG.sub(" ", term))
    ranked = data.pubmed_ranker().rank(text, limit=limit, min_score=ESEARCH_MIN_SCORE)
    return [pmid for pmid, _ in ranked]


def esearch(data: RegistryData, params: Mapping[str, str]) -> Reply:
    term = params.get("term", "")
    retmax = int(params["retmax"]) if params.get("retmax", "").isdigit() else 20
    retstart = int(params["retstart"]) if params.get("retstart", "").isdigit() else 0
    matches = search_pmids(data, term, limit=len(data.pubmed)) if term.strip() else []
    page = matches[retstart : retstart + retmax]
    if params.get("retmode") == "json":
        result = {
            "count": str(len(matches)),
            "retmax": str(len(page)),
            "retstart": str(retstart),
            "idlist": page,
            "translationset": [],
            "querytranslation": term,
        }
        return json_reply(
            {"header": {"type": "esearch", "version": "0.3"}, "esearchresult": result},
            content_type=JSON_TYPE,
        )
    ids = "".join(f"<Id>{pmid}</Id>\n" for pmid in page)
    body = (
        f"{ESEARCH_HEAD}<eSearchResult><Count>{len(matches)}</Count><RetMax>{len(page)}</RetMax>"
        f"<RetStart>{retstart}</RetStart><IdList>\n{ids}</IdList><TranslationSet/>"
        f"<QueryTranslation>{escape(term)}</QueryTranslation></eSearchResult>\n"
    )
    return text_reply(body, 200, XML_TYPE)


def rate_limit_exceeded(client: str, count: int, limit: int) -> Reply:
    """NCBI's 429 body: JSON even when XML was asked for."""
    body = {
        "error": "API rate limit exceeded",
        "api-key": client,
        "count": str(count),
        "limit": str(limit),
    }
    reply = Reply(429, json.dumps(body).encode(), "application/json")
    reply.headers.update({"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": "0"})
    return reply


def _hostile(endpoint: str, doctype_subset: str, payload: str) -> Reply:
    if endpoint == "esearch":
        root = (
            "<eSearchResult><Count>1</Count><RetMax>1</RetMax><RetStart>0</RetStart>"
            f"<IdList><Id>1</Id></IdList><QueryTranslation>{payload}</QueryTranslation>"
            "</eSearchResult>"
        )
        name = "eSearchResult"
    else:
        root = (
            '<PubmedArticleSet><PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM">'
            '<PMID Version="1">1</PMID><Article><ArticleTitle>'
            f"{payload}</ArticleTitle></Article></MedlineCitation></PubmedArticle></PubmedArticleSet>"
        )
        name = "PubmedArticleSet"
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE {name} [\n{doctype_subset}]>\n{root}\n'
    )
    return text_reply(body, 200, XML_TYPE)


def billion_laughs(endpoint: str) -> Reply:
    """Ten levels of ten-fold entity expansion: ~3 GB if a parser expands it."""
    entities = ['<!ENTITY lol0 "lol">']
    entities += [f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)]
    return _hostile(endpoint, "\n".join(entities) + "\n", "&lol9;")


def external_entity(endpoint: str, canary_url: str) -> Reply:
    """SYSTEM entities to a local file and to the server's canary URL (which counts fetches)."""
    subset = (
        f'<!ENTITY local SYSTEM "file:///etc/passwd">\n<!ENTITY remote SYSTEM "{canary_url}">\n'
    )
    return _hostile(endpoint, subset, "&local;&remote;")
