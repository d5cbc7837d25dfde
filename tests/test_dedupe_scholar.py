"""Dedupe of scraped, garbled Google Scholar records against DBLP's: real labelled pairs of Ditto's
DBLP-Scholar validation split (tests/fixtures/dedupe/dblp_scholar_sample.txt), read by the
benchmark's reader (bench/dedupe_sources.py)."""

import json
from pathlib import Path

import polars as pl
import pytest

from bench.dedupe import dedupe_linked, pair_scores, versions
from bench.dedupe_errors import RIGHT, fold_errors
from bench.dedupe_sources import Labelled, LabelledPair, dblp_scholar, ditto_item, reference
from tasks.dedupe import DedupeThresholds, records_frame
from tasks.dedupe.assign import prepared_records
from tasks.dedupe.candidates import candidate_pairs
from tasks.dedupe.compare import score_pairs
from tasks.dedupe.records import descraped, title_words
from tasks.dedupe.similarity import venues_alike
from tasks.dedupe.weights import FEATURES, load_weights, with_scraped_columns
from tasks.match.venues import venue_cut_off

SAMPLE = Path(__file__).parent / "fixtures" / "dedupe" / "dblp_scholar_sample.txt"


@pytest.fixture(scope="module")
def sample() -> tuple[list[Labelled], list[LabelledPair]]:
    return dblp_scholar(SAMPLE)


def test_a_ditto_record_is_read_as_a_citation() -> None:
    item = ditto_item(
        "Scholar:1",
        "COL title VAL on-demand data elevation in a hierarchical multimedia storage server "
        "COL authors VAL p triantallou , t papadakis COL venue VAL proc . of 23rd intl. conf . "
        "on very large data bases , vldb , COL year VAL 1997.0",
    )
    assert item.title == "on-demand data elevation in a hierarchical multimedia storage server"
    assert [(n.given, n.family) for n in item.author or []] == [
        ("p", "triantallou"),
        ("t", "papadakis"),
    ]
    assert item.container_title == "proc . of 23rd intl. conf . on very large data bases , vldb"
    assert item.year() == 1997


def test_one_record_text_is_one_record(sample: tuple[list[Labelled], list[LabelledPair]]) -> None:
    records, pairs = sample
    ids = [r.reference.citation_id for r in records]
    assert len(ids) == len(set(ids))
    assert {p.a for p in pairs} | {p.b for p in pairs} == set(ids)
    # DBLP is one list; every Scholar record is a list of its own.
    sources = {r.reference.provenance.source_file for r in records if r.source == "Scholar"}
    assert len(sources) == sum(r.source == "Scholar" for r in records)


def test_no_pair_labelled_distinct_is_matched(
    sample: tuple[list[Labelled], list[LabelledPair]],
) -> None:
    records, pairs = sample
    work_of, links = dedupe_linked([records])
    precision, _, _ = pair_scores(pairs, work_of, versions(links))
    assert precision == 1.0


def test_scraped_pairs_of_the_sample_are_found(
    sample: tuple[list[Labelled], list[LabelledPair]],
) -> None:
    """Venues cut off ("... very large & hellip ;"), years "1996.0" or missing, a name, a year
    or a venue glued to the title ("ramanv ( 2002 ) continuously adaptive ...", "... . university
    of maryland"): all but one of the 15 true pairs (before #18: 9)."""
    records, pairs = sample
    work_of, links = dedupe_linked([records])
    _, recall, _ = pair_scores(pairs, work_of, versions(links))
    assert recall >= 14 / 15


def test_every_sample_pair_is_grouped_as_the_bench_scores_it(
    sample: tuple[list[Labelled], list[LabelledPair]],
) -> None:
    """bench.dedupe_errors puts each pair in one group, and those it calls right are the ones
    bench.dedupe scores right."""
    records, pairs = sample
    groups = fold_errors(records, pairs, DedupeThresholds())
    work_of, links = dedupe_linked([records])
    precision, recall, _ = pair_scores(pairs, work_of, versions(links))
    wrong = [group for group, *_ in groups if group != RIGHT]
    missed = sum(group.startswith("true") for group in wrong)
    assert len(groups) == len(pairs)
    assert missed == round((1 - recall) * sum(p.same for p in pairs))
    assert precision < 1.0 or not any(group.startswith("false") for group in wrong)


@pytest.mark.parametrize(
    ("scraped", "written"),
    [
        ("proceedings of the international conference on very large & hellip ; ,",
         "proceedings of the international conference on very large … ,"),
        ("snodgrassâ ? ¦", "snodgrass"),
        ("n. stefanovic 1997 â ?? geominer", "n. stefanovic 1997  geominer"),
        ("SchÃ¶lkopf", "Schölkopf"),
        ("AT&T labs", "AT&T labs"),
    ],
)  # fmt: skip
def test_scraped_text_is_read_as_written(scraped: str, written: str) -> None:
    assert descraped(scraped) == written


@pytest.mark.parametrize(
    ("name", "venue"),
    [
        ("proceedings of the 26th international conference on very", "VLDB"),
        ("Proceedings of the 2000 ACM SIGMOD International Conference on", "SIGMOD"),
        ("acm transactions on database", "TODS"),
        ("the vldb journal the international journal on very large", "VLDBJ"),
        ("international conference", None),  # the start of many venues' names
        ("vldb", None),  # one word is no cut-off name
    ],
)
def test_a_venue_cut_off_is_the_one_venue_it_starts(name: str, venue: str | None) -> None:
    found = venue_cut_off(name)
    assert (found.key if found else None) == venue


def test_a_cut_off_venue_is_alike_its_acronym_but_not_another_venue() -> None:
    alike = venues_alike(
        pl.Series(["vldb", "sigmod conference"]),
        pl.Series(
            ["proceedings of the 26th international conference on very", "acm sigmod record"]
        ),
    )
    assert alike.to_list() == [True, False]


def test_a_scraping_slip_does_not_crowd_a_title_out_of_its_block() -> None:
    """The glued name "hellersteirr" is the rarest word of the scraped title, but no other record
    holds it: the title's real words still pair it with the DBLP record."""
    records, _ = dblp_scholar(SAMPLE)
    thresholds = DedupeThresholds()
    prepared = prepared_records(records_frame([r.reference for r in records]), None, thresholds)
    pairs = candidate_pairs(prepared, thresholds.blocking)
    titles = prepared["title_key"]
    found = {
        tuple(sorted((titles[a], titles[b]))) for a, b in zip(pairs["a"], pairs["b"], strict=True)
    }
    assert (
        "joseph m hellersteirr potter s wheel an interactive data cleaning system",
        "potter s wheel an interactive data cleaning system",
    ) in found


def test_weights_for_other_features_are_refused(tmp_path: Path) -> None:
    stale = tmp_path / "weights.json"
    stale.write_text(
        json.dumps({"intercept": 0.0, "coefficients": {"title": 1.0}, "threshold": 0.5})
    )
    with pytest.raises(ValueError, match="weights for"):
        load_weights(stale)


def test_the_weights_in_the_repository_say_what_a_match_is() -> None:
    """Fitted on DBLP-Scholar's train split (bench/fit_dedupe_weights.py): a title alike once
    its glued ends are trimmed and shared authors speak for one work, a short title and extra
    words against it."""
    weights = dict(load_weights().coefficients)
    assert set(weights) == set(FEATURES)
    assert weights["shared_author"] > 0 and weights["author_share"] > 0
    assert weights["trimmed_title"] > 0
    assert weights["short_title"] < 0 and weights["extra_words_any"] < 0
    assert 0.5 <= load_weights().threshold < 1


WEBVIEW = "COL title VAL webview materialization COL authors VAL a labrinidis , n roussopoulos"
SAMPLING = "COL title VAL random sampling for histogram construction"
AIR = "COL authors VAL t imielinski , s viswanathan , b badrinath COL venue VAL sigmod conference"
HISTOGRAMS = (
    "COL authors VAL n thaper , s guha , p indyk , n koudas "
    "COL venue VAL {venue} COL year VAL {year}"
)

ECOBASE = (
    "COL title VAL the ecobase project : database and web technologies for environmental "
    "information systems COL authors VAL a tanaka , p valduriez COL venue VAL sigmod record "
    "COL year VAL 2001"
)
ECOBASE_UNPLACED = (
    "COL title VAL ecobase\u00e2 ?? database and web technologies for environmental information "
    "systems COL authors VAL {authors} COL venue VAL  COL year VAL 1999.0"
)
HASH_JOINS = "COL title VAL spatial hash-joins COL authors VAL {authors}"
WALRUS = (
    "COL title VAL walrus : a similarity retrieval algorithm for image databases COL authors VAL "
    "a natsev , r rastogi , k shim COL venue VAL {venue} COL year VAL {year}"
)


@pytest.mark.parametrize(
    ("dblp", "scholar", "same"),
    [
        # A short title in two forms of one venue, the year missing on one side.
        (
            "COL title VAL dynamic multidimensional histograms "
            + HISTOGRAMS.format(venue="sigmod conference", year="2002"),
            "COL title VAL multidimensional dynamic histograms "
            + HISTOGRAMS.format(
                venue="proceedings of the acm sigmod international conference on & hellip ; ,",
                year="",
            ),
            True,
        ),
        # ... but not in another venue.
        (
            "COL title VAL dynamic multidimensional histograms "
            + HISTOGRAMS.format(venue="sigmod conference", year="2002"),
            "COL title VAL multidimensional dynamic histograms "
            + HISTOGRAMS.format(venue="proceedings of the vldb conference", year=""),
            False,
        ),
        # The very short title by the same first author, cited with nothing else.
        (
            WEBVIEW + " COL venue VAL sigmod conference COL year VAL 2000",
            WEBVIEW + " COL venue VAL  COL year VAL ",
            True,
        ),
        # ... or by two of its authors, the first dropped.
        (
            "COL title VAL sybase replication server COL authors VAL a gorelik , y wang , "
            "m deppe COL venue VAL sigmod conference COL year VAL 1994",
            "COL title VAL sybase replication server COL authors VAL agy wang , m deppe "
            "COL venue VAL  COL year VAL ",
            True,
        ),
        # ... but not by another first author.
        (
            WEBVIEW + " COL venue VAL sigmod conference COL year VAL 2000",
            "COL title VAL webview materialization COL authors VAL n roussopoulos "
            "COL venue VAL  COL year VAL ",
            False,
        ),
        # A title inside the other, the same year, one side naming no author (its only name
        # is debris).
        (
            SAMPLING + " : how much is enough ? COL authors VAL s chaudhuri , r motwani , "
            "v narasayya COL venue VAL sigmod conference COL year VAL 1998",
            SAMPLING
            + " COL authors VAL s chaudhuri\u00e2 ? \u00a6 COL venue VAL  COL year VAL 1998.0",
            True,
        ),
        # ... but not in another year.
        (
            SAMPLING + " : how much is enough ? COL authors VAL s chaudhuri , r motwani , "
            "v narasayya COL venue VAL sigmod conference COL year VAL 1998",
            SAMPLING
            + " COL authors VAL s chaudhuri\u00e2 ? \u00a6 COL venue VAL  COL year VAL 2001.0",
            False,
        ),
        # A short title inside the other by the same authors: a dropped head, a glued venue.
        (
            "COL title VAL energy efficient indexing on air " + AIR + " COL year VAL 1994",
            "COL title VAL indexing on air "
            + AIR.replace("sigmod conference", "proceedings of acm sigmod")
            + " COL year VAL ",
            True,
        ),
        (
            "COL title VAL updating xml COL authors VAL i tatarinov , z ives , a halevy , d weld "
            "COL venue VAL sigmod conference COL year VAL 2001",
            "COL title VAL updating xml . acm intl COL authors VAL i tatarinov , zg ives , "
            "a halevy , d weld COL venue VAL conference on management of data ( sigmod ) , "
            "COL year VAL ",
            True,
        ),
        # ... however short, where the same two authors or more back it, a year missing.
        (
            HASH_JOINS.format(authors="m lo , c ravishankar") + " COL venue VAL sigmod conference "
            "COL year VAL 1996",
            HASH_JOINS.format(authors="ml lo , cv ravishankar").replace(
                "hash-joins", "hash-joins , acm sigmod intl"
            )
            + " COL venue VAL conference on management of data , COL year VAL ",
            True,
        ),
        (
            HASH_JOINS.format(authors="m lo , c ravishankar") + " COL venue VAL sigmod conference "
            "COL year VAL 1996",
            HASH_JOINS.format(authors="ml lo").replace("hash-joins", "hash-joins , acm sigmod intl")
            + " COL venue VAL conference on management of data , COL year VAL ",
            False,
        ),
        # ... but not by one shared author.
        (
            "COL title VAL energy efficient indexing on air " + AIR + " COL year VAL 1994",
            "COL title VAL indexing on air COL authors VAL t imielinski , j chen COL venue VAL "
            "proceedings of acm sigmod COL year VAL 1994",
            False,
        ),
        # "part i" is the "i" of the other title, not another number.
        (
            "COL title VAL probabilistic temporal databases , i : algebra COL authors VAL a "
            "dekhtyar , r ross , v subrahmanian COL venue VAL acm trans . database syst . "
            "COL year VAL 2001",
            "COL title VAL probabilistic temporal databases , part i : algebra COL authors VAL a "
            "dekhtyar , r ross , vs subrahmanian COL venue VAL acm transactions on database "
            "systems , COL year VAL ",
            True,
        ),
        # The very short title in the same year, one side naming no author (an index's
        # authorless entry).
        (
            "COL title VAL treasurer 's message COL authors VAL  COL venue VAL  COL year VAL 2000",
            "COL title VAL treasurer 's message COL authors VAL j hammer COL venue VAL sigmod "
            "COL year VAL 2000.0",
            True,
        ),
        # ... but not in another year.
        (
            "COL title VAL treasurer 's message COL authors VAL  COL venue VAL  COL year VAL 2002",
            "COL title VAL treasurer 's message COL authors VAL j hammer COL venue VAL sigmod "
            "COL year VAL 2000.0",
            False,
        ),
        # A scraped twin of the same year, its authors garbled beyond the rules (weighed).
        (
            "COL title VAL research in databases and data-intensive applications - computer "
            "science department and fzi , university of karlsruhe COL authors VAL b k\u0456nig-"
            "ries , p lockemann COL venue VAL sigmod record COL year VAL 1997",
            "COL title VAL research in databases and data-intensive applications computer "
            "science dept. and fzi , university of COL authors VAL u herzog , g hillebrand , "
            "u kslsch , b ksnig-ries , p COL venue VAL sigmod record , COL year VAL 1997.0",
            True,
        ),
        # ... but not two papers of one group in one year (two teams, each naming others).
        (
            "COL title VAL prospector : a content-based multimedia server for massively parallel "
            "architectures COL authors VAL s choo , w o'connell , g linerman , h chen , "
            "k ganapathy , a biliris , e panagos , d schrader COL venue VAL sigmod conference "
            "COL year VAL 1996",
            "COL title VAL a teradata content-based multimedia object manager for massively "
            "parallel architectures COL authors VAL w o'connell , i ieong , d schrader , "
            "c watson , g au , a biliris , s choo , p colin , g linderman , e panagos , j wang , "
            "t walter COL venue VAL sigmod conference COL year VAL 1996.0",
            False,
        ),
        # An undated citation's number that is the other's year is that year run into the title.
        (
            "COL title VAL online aggregation COL authors VAL j hellerstein , p haas , h wang "
            "COL venue VAL sigmod conference COL year VAL 1997",
            "COL title VAL wang. , hj ( 1997 ) online aggregation COL authors VAL jm hellerstein "
            ", pj haas COL venue VAL proc . acm sigmod conference on management of COL year VAL ",
            True,
        ),
        # ... written with two digits ("vldb 97"), or a year off, as the citation's year may be.
        (
            "COL title VAL online aggregation COL authors VAL j hellerstein , p haas , h wang "
            "COL venue VAL sigmod conference COL year VAL 1997",
            "COL title VAL wang. , hj ( 97 ) online aggregation COL authors VAL jm hellerstein "
            ", pj haas COL venue VAL proc . acm sigmod conference on management of COL year VAL ",
            True,
        ),
        (
            "COL title VAL online aggregation COL authors VAL j hellerstein , p haas , h wang "
            "COL venue VAL sigmod conference COL year VAL 1997",
            "COL title VAL wang. , hj ( 1996 ) online aggregation COL authors VAL jm hellerstein "
            ", pj haas COL venue VAL proc . acm sigmod conference on management of COL year VAL ",
            True,
        ),
        # ... but another year is a title number.
        (
            "COL title VAL online aggregation COL authors VAL j hellerstein , p haas , h wang "
            "COL venue VAL sigmod conference COL year VAL 1997",
            "COL title VAL wang. , hj ( 1999 ) online aggregation COL authors VAL jm hellerstein "
            ", pj haas COL venue VAL proc . acm sigmod conference on management of COL year VAL ",
            False,
        ),
        # A conference paper and its journal version, the journal's authors scraped garbled
        # (a given name for a surname): weighed, a version.
        (
            "COL title VAL scalable parallel data mining for association rules COL authors VAL "
            "e han , g karypis , v kumar COL venue VAL sigmod conference COL year VAL 1997",
            "COL title VAL scalable parallel data mining for association rules COL authors VAL "
            "h eui-hong , g karypis COL venue VAL ieee transactions on knowledge and data "
            "engineering , COL year VAL ",
            True,
        ),
        # A conference paper and its journal version years later, in a journal not named one.
        (
            "COL title VAL cure : an efficient clustering algorithm for large databases COL "
            "authors VAL s guha , r rastogi , k shim COL venue VAL sigmod conference COL year "
            "VAL 1998",
            "COL title VAL cure : an efficient clustering algorithm for large databases COL "
            "authors VAL s guha , r rastogi , k shim COL venue VAL information systems , COL "
            "year VAL 2001.0",
            True,
        ),
        # A journal version five years after the conference paper, by the same authors.
        (
            WALRUS.format(venue="sigmod conference", year="1999"),
            WALRUS.format(
                venue="ieee transactions on knowledge and data engineering ,", year="2004.0"
            ),
            True,
        ),
        # ... where the conference's venue is of no known kind ("vldb").
        (
            "COL title VAL fast incremental maintenance of approximate histograms COL authors "
            "VAL p gibbons , y matias , v poosala COL venue VAL vldb COL year VAL 1997",
            "COL title VAL fast incremental maintenance of approximate histograms COL authors "
            "VAL pb gibbons , y matias , v poosala COL venue VAL acm transactions on database "
            "systems , COL year VAL 2002.0",
            True,
        ),
        # ... but not in one venue (in two of its forms).
        (
            WALRUS.format(venue="sigmod conference", year="1999"),
            WALRUS.format(
                venue="proceedings of the acm sigmod international conference on ,", year="2004.0"
            ),
            False,
        ),
        # The same title credited to the index that printed it, not to people: no authors.
        (
            "COL title VAL the whips prototype for data warehouse creation and maintenance COL "
            "authors VAL w labio , y zhuge , j wiener , h gupta , h garcia-molina , j widom COL "
            "venue VAL sigmod conference COL year VAL 1997",
            "COL title VAL the whips prototype for data warehouse creation and maintenance . COL "
            "authors VAL acms anthology , p edition COL venue VAL  COL year VAL ",
            True,
        ),
        # Two author lists of one year that share nobody, under all but the same title: given
        # names scraped for surnames (Cluet, Veltri, Vodislav), weighed alike.
        (
            "COL title VAL views in a large scale xml repository COL authors VAL s cluet , "
            "p veltri , d vodislav COL venue VAL vldb COL year VAL 2001",
            "COL title VAL views in a large scale xml repository [ c ] COL authors VAL c sophie "
            ", v pierangelo , v dan COL venue VAL  COL year VAL 2001.0",
            True,
        ),
        # A citation naming no venue, two years or more from the paper: another printing of it.
        (ECOBASE, ECOBASE_UNPLACED.format(authors="ak tanaka , p valduriez"), True),
        # ... but not by other authors.
        (ECOBASE, ECOBASE_UNPLACED.format(authors="j smith , k jones"), False),
        # ... nor a journal article and a conference paper years after it.
        (
            WALRUS.format(
                venue="ieee transactions on knowledge and data engineering ,", year="1999"
            ),
            WALRUS.format(venue="sigmod conference", year="2004.0"),
            False,
        ),
        # A title of five words, the same in one venue and year, whatever the scraped authors.
        (
            "COL title VAL the microsoft database research group COL authors VAL d lomet , "
            "r barga , s chaudhuri COL venue VAL sigmod record COL year VAL 1998",
            "COL title VAL the microsoft database research group . COL authors VAL acms "
            "anthology COL venue VAL sigmod record COL year VAL 1998.0",
            True,
        ),
    ],
)
def test_short_titles_and_parts_of_scraped_pairs(
    tmp_path: Path, dblp: str, scholar: str, same: bool
) -> None:
    split = tmp_path / "pair.txt"
    split.write_text(f"{dblp}\t{scholar}\t1\n", encoding="utf-8")
    records, pairs = dblp_scholar(split)
    work_of, links = dedupe_linked([records])
    _, recall, _ = pair_scores(pairs, work_of, versions(links))
    assert recall == (1.0 if same else 0.0)


@pytest.mark.parametrize(
    ("title", "key"),
    [
        ("onviews andxml", "on views and xml"),
        (
            "optimizationofquerieswithuserdefined predicates",
            "optimization of queries with user defined predicates",
        ),
        # Lost ligature bytes ("e cient") are debris around the words it still splits off.
        (
            "anecientalgorithmforminingassociationrules",
            "a nec i ent algorithm for mining association rules",
        ),
        ("joseph m hellersteirr", "joseph m hellersteirr"),  # a garbled name is not cut up
        ("Evaluating Queries", "evaluating queries"),
    ],
)
def test_words_run_together_are_split(title: str, key: str) -> None:
    assert title_words(title) == key


def _ditto(title: str, authors: str) -> str:
    return f"COL title VAL {title} COL authors VAL {authors} COL venue VAL  COL year VAL "


def test_a_title_with_names_glued_to_its_head_is_a_candidate_by_its_tail(tmp_path: Path) -> None:
    """The glued names are the scraped title's rarest words (other citations hold them), its
    first words too: the last words of both titles still pair them."""
    split = tmp_path / "pairs.txt"
    dblp = _ditto("optimizing queries across diverse data sources", "l haas , d kossmann")
    scholar = _ditto(
        "d kossmann el wimmers and j yang optimizing queries across diverse data sources",
        "l haas",
    )
    others = [
        _ditto("d kossmann el wimmers the state of the art in query processing", "r ramakrishnan"),
        _ditto("el wimmers and j yang semistructured data sources", "d kossmann"),
        _ditto("optimizing queries over streams", "s madden"),
        _ditto("data sources diverse in kind", "a levy"),
    ]
    assert ("DBLP:0", "Scholar:1") in _candidates(split, dblp, [scholar, *others])


def test_the_weights_read_titles_without_their_glued_ends_and_misspelt_names() -> None:
    """A scraped title with the authors' names glued to its head and the venue to its tail is
    the title; a misspelt surname is the same author; other words or other people are not."""
    pairs = pl.DataFrame(
        {
            "title_key_a": ["the third manifesto", "a vision of management of complex models"],
            "title_key_b": [
                "h darwen cj date the third manifesto sigmod 1995",
                "a vision for managing complex models",
            ],
            "surnames_a": [["darwen", "date"], ["bernstein", "halevy", "pottinger"]],
            "surnames_b": [["darwen"], ["bemsten", "smith", "pottinger"]],
            "a": [0, 1],
            "b": [2, 3],
        }
    )
    records = pl.DataFrame(
        {"authors": ["h darwen; cj date", "pa bernstein; ay halevy", "h darwen", "p bemsten"]}
    )
    scraped = with_scraped_columns(pairs, records)
    assert scraped["trimmed_title_sim"].to_list()[0] == 1.0
    assert scraped["trimmed_title_sim"].to_list()[1] < 0.95
    # Glued words go from the ends, articles among them ("the", "a").
    assert scraped["trimmed_words"].to_list() == [2, 5]
    assert scraped["author_share"].to_list() == [1.0, pytest.approx(2 / 3)]
    assert scraped["swapped_share"].to_list() == [0.0, 0.0]


def test_the_weights_read_names_with_given_and_family_swapped() -> None:
    """Scholar files "Byoung-Kee Yi" as "y byoung-kee" where DBLP has "b yi": no surname is
    shared, yet each name is the other's with its parts swapped, at the same place (train
    split: "fast time sequence indexing for arbitrary lp norms", Yi and Faloutsos)."""
    dblp = ditto_item(
        "DBLP:0",
        "COL title VAL fast time sequence indexing for arbitrary lp norms COL authors VAL "
        "b yi , c faloutsos COL venue VAL vldb COL year VAL 2000",
    )
    scholar = ditto_item(
        "Scholar:1",
        "COL title VAL fast time sequence indexing for arbitrary lp norms [ a ] COL authors VAL "
        "y byoung-kee , f christos COL venue VAL COL year VAL 2000.0",
    )
    other = ditto_item(
        "Scholar:2",
        "COL title VAL fast time sequence indexing for arbitrary lp norms COL authors VAL "
        "c yannis , f byron COL venue VAL COL year VAL 2000.0",
    )
    records = records_frame([reference(item.id, item.id, item) for item in (dblp, scholar, other)])
    pairs = pl.DataFrame(
        {
            "a": [0, 0],
            "b": [1, 2],
            "title_key_a": records["title_key"].gather([0, 0]),
            "title_key_b": records["title_key"].gather([1, 2]),
            "surnames_a": records["surnames"].gather([0, 0]),
            "surnames_b": records["surnames"].gather([1, 2]),
        }
    )
    scraped = with_scraped_columns(pairs, records)
    assert scraped["author_share"].to_list() == [0.0, 0.0]
    assert scraped["swapped_share"].to_list() == [1.0, 0.0]
    assert dict(load_weights().coefficients)["swapped_names"] > 0


def test_a_garbled_copy_votes_by_its_title_inside_the_other(tmp_path: Path) -> None:
    """Average linkage: a scraped copy too unlike another to compare ("ã cents ... range queries
    in olap data cubes ã cents" and "range queries in data cubes") counts the shorter title
    found inside the longer, not the whole titles' likeness, and so does not keep the work's
    citations apart (DBLP-Scholar's train split)."""
    dblp = (
        "COL title VAL range queries in olap data cubes COL authors VAL c ho , r agrawal , "
        "n megiddo , r srikant COL venue VAL sigmod conference COL year VAL 1997"
    )
    scholar = [
        "COL title VAL range queries in data cubes COL authors VAL ct ho , r agrawal , "
        "r srihant COL venue VAL proc . int\u00e2 ?? l conf . management of data ( sigmod ) , "
        "COL year VAL ",
        "COL title VAL range queries in olap data cubes COL authors VAL h ch , r agrawal , "
        "n megiddo , r srikant COL venue VAL proc . acm sigmod int . conf . on management of "
        "data , COL year VAL ",
        "COL title VAL range queries in olap data cubes in : joan p , ed COL authors VAL ct ho , "
        "r agrawal , r megiddo , r srikant COL venue VAL proceedings of the international acm "
        "sigmod conference . acm & hellip ; , COL year VAL ",
        "COL title VAL range queries in olap data cubes COL authors VAL ct ho , r agrawal , "
        "n megiddo , r srikant COL venue VAL  COL year VAL ",
        "COL title VAL range queries in olap cubes COL authors VAL ct ho , r agrawal , "
        "r megiddo\u00e2 ? \u00a6 COL venue VAL proceedings of the international acm sigmod "
        "conference , acm & hellip ; , COL year VAL ",
        "COL title VAL \u00e3 cents \u00e2 ? \u00ac \u00e5?range queries in olap data "
        "cubes\u00e3 cents \u00e2 ? \u00ac \u00e2 ? COL authors VAL ct ho , r agrawal , "
        "n megiddo , r srikant COL venue VAL proc . acm sigmod \u00e3 cents , COL year VAL ",
    ]
    assert _recall(tmp_path, dblp, scholar) == 1.0


def test_two_undated_copies_set_apart_vote_by_their_titles(tmp_path: Path) -> None:
    """Average linkage: two undated scraped copies of one work that a hard stop sets apart (a
    year run into one title, "1995 . high-concurrency locking in r-trees", is a number the other
    lacks) vote by their titles, not as a veto, and so do not keep the work's citations apart
    (DBLP-Scholar's train split)."""
    dblp = (
        "COL title VAL high-concurrency locking in r-trees COL authors VAL m kornacker , "
        "d banks COL venue VAL vldb COL year VAL 1995"
    )
    scholar = [
        "COL title VAL high-concurrency in r-trees [ c ] COL authors VAL m komacker , d banks "
        "COL venue VAL proc 21th international conference on vldb , COL year VAL ",
        "COL title VAL high-concurrency in r-trees COL authors VAL m kornacker , d banks "
        "COL venue VAL proc . 21th international conference on vldb , COL year VAL ",
        "COL title VAL 1995 . high-concurrency locking in r-trees COL authors VAL m kronacker , "
        "d banks COL venue VAL proc . 21th int . conf . on very large data COL year VAL ",
    ]
    assert _recall(tmp_path, dblp, scholar) == 1.0


def _recall(folder: Path, dblp: str, scholars: list[str]) -> float:
    """Recall over the pairs of one DBLP record and Scholar records of it, all deduped as one
    batch."""
    split = folder / "pairs.txt"
    split.write_text("".join(f"{dblp}\t{s}\t1\n" for s in scholars), encoding="utf-8")
    records, pairs = dblp_scholar(split)
    work_of, links = dedupe_linked([records])
    return pair_scores(pairs, work_of, versions(links))[1]


def test_a_title_without_its_words_as_keys_is_a_candidate_by_its_author(tmp_path: Path) -> None:
    """A scraped title whose rarest words are a glued venue ("updating xml , acm sigmod int")
    keeps none of the work's title words among its keys, first or last words included; its
    first author and first word still meet the work (DBLP-Scholar's train split)."""
    dblp = (
        "COL title VAL updating xml COL authors VAL i tatarinov , z ives , a halevy , d weld "
        "COL venue VAL sigmod conference COL year VAL 2001"
    )
    scholar = (
        "COL title VAL updating xml , acm sigmod int COL authors VAL i tatarinov , zg ives , "
        "ay halevy , ds weld COL venue VAL conf . on management of data , COL year VAL "
    )
    # Other records hold the work's words more often than the glued venue's.
    others = [
        _ditto("updating xml views", "a one"),
        _ditto("xml updating rules", "b two"),
        _ditto("updating xml data", "c three"),
        _ditto("acm sigmod int notes", "d four"),
    ]
    found = _candidates(tmp_path / "pairs.txt", dblp, [scholar, *others])
    assert ("DBLP:0", "Scholar:1") in found


def _candidates(split: Path, dblp: str, scholars: list[str]) -> set[tuple[str, str]]:
    """The candidate pairs (citation ids) of one DBLP record and Scholar records."""
    split.write_text("".join(f"{dblp}\t{s}\t0\n" for s in scholars), encoding="utf-8")
    records, _ = dblp_scholar(split)
    thresholds = DedupeThresholds()
    prepared = prepared_records(records_frame([r.reference for r in records]), None, thresholds)
    pairs = candidate_pairs(prepared, thresholds.blocking)
    ids = prepared["citation_id"]
    return {(ids[a], ids[b]) for a, b in zip(pairs["a"], pairs["b"], strict=True)}


@pytest.mark.parametrize(
    ("authors", "surnames"),
    [
        ("acms anthology , p edition", []),
        ("portal.acm.org", []),
        ("w labio , y zhuge", ["labio", "zhuge"]),
    ],
)
def test_an_index_credited_as_author_is_no_author(authors: str, surnames: list[str]) -> None:
    item = ditto_item("Scholar:1", f"COL title VAL t COL authors VAL {authors} COL year VAL ")
    frame = records_frame([reference("Scholar:1", "Scholar:1", item)])
    assert frame["surnames"].to_list() == [surnames]


def test_a_pair_beyond_the_year_window_votes_only_as_a_late_version(tmp_path: Path) -> None:
    """The same first author brings pairs up to six years apart together to find late journal
    versions; the others (here: one venue) were never compared before and cast no vote."""
    split = tmp_path / "pairs.txt"
    dblp = WALRUS.format(venue="sigmod conference", year="1999")
    scholar = WALRUS.format(venue="sigmod conference", year="2004.0")
    split.write_text(f"{dblp}\t{scholar}\t0\n", encoding="utf-8")
    records, _ = dblp_scholar(split)
    thresholds = DedupeThresholds()
    prepared = prepared_records(records_frame([r.reference for r in records]), None, thresholds)
    pairs = candidate_pairs(prepared, thresholds.blocking)
    assert pairs.height == 1
    assert score_pairs(prepared, pairs, thresholds).is_empty()


@pytest.mark.parametrize(
    ("dblp", "scholar", "glued"),
    [
        # An initial glued to the head ("weld, d. 2001. updating xml") is no title word to block
        # by: words of one or two letters are no undated citation's keys.
        (
            "COL title VAL updating xml COL authors VAL i tatarinov , z ives , a halevy , "
            "d weld COL venue VAL sigmod conference COL year VAL 2001",
            "COL title VAL weld\u00e2 ?? , d. 2001 . updating xml COL authors VAL i tatarinov , "
            "z ives , a halevy COL venue VAL proceedings of COL year VAL ",
            "d weld 2001 notes",
        ),
        # Names glued to the head ("gm and merialdo, p. 1997. to weave the web") are rarer than
        # the work's words, which the head, tail and author keys miss too (a title of four words
        # has no other tail): an undated citation's six rarest words make its keys.
        (
            "COL title VAL to weave the web COL authors VAL p atzeni , g mecca , p merialdo "
            "COL venue VAL vldb COL year VAL 1997",
            "COL title VAL gm and merialdo , p. 1997 . to weave the web COL authors VAL p atzeni "
            "COL venue VAL 23rd international conference on very large databases ( vldb "
            "COL year VAL ",
            "meri aldo 1997 notes",
        ),
    ],
)
def test_words_glued_to_a_scraped_title_do_not_crowd_out_its_keys(
    tmp_path: Path, dblp: str, scholar: str, glued: str
) -> None:
    """Other records hold the glued words, but the work's own words more often; the pair is
    still a candidate (DBLP-Scholar's train split)."""
    words = dblp.split(" COL authors")[0].removeprefix("COL title VAL ").split()
    others = [
        _ditto(glued, "a one"),
        _ditto(" ".join([*words[-2:], "pages"]), "b two"),
        _ditto(" ".join([*reversed(words[-2:]), "rules"]), "c three"),
    ]
    found = _candidates(tmp_path / "pairs.txt", dblp, [scholar, *others])
    assert ("DBLP:0", "Scholar:1") in found


_SURVEY = "efficient query processing in distributed database systems"


def _dated(title: str, authors: str, year: str) -> str:
    return f"COL title VAL {title} COL authors VAL {authors} COL venue VAL  COL year VAL {year}"


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # Two annual editions: the dated one names its own year in its title.
        (
            _dated("global tuberculosis report 2020", "world health organization", "2020"),
            _dated("global tuberculosis report 2019", "world health organization", ""),
        ),
        # Two teams that share nobody under one title in one year: two papers.
        (
            _dated(_SURVEY, "j smith , k lee , m wong", "1999"),
            _dated(_SURVEY, "a brown , a kim , p chan", "1999"),
        ),
        # Initials that merely mirror each other ("j smith", "s jones") are no swapped names.
        (_dated(_SURVEY, "j smith", "1999"), _dated(_SURVEY, "s jones", "1999")),
        (
            _dated(_SURVEY, "j smith , k lee , m wong", "1999"),
            _dated(_SURVEY, "s jones , a kim , p chan", "1999"),
        ),
    ],
)
def test_other_works_under_one_title_stay_apart(tmp_path: Path, a: str, b: str) -> None:
    assert _recall(tmp_path, a, [b]) == 0.0
