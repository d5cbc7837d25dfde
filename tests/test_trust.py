"""Trusted domains: the shipped list, overrides, subdomains, lookalikes and identifiers."""

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tasks.score.trust import (
    DEFAULT_TRUSTED_DOMAINS_FILE,
    TRUSTED_DOMAINS_ENV,
    host_is_trusted,
    is_trusted,
    load_trusted_domains,
    parse_domain_list,
)

DEFAULTS = load_trusted_domains(DEFAULT_TRUSTED_DOMAINS_FILE)


def test_the_shipped_list_holds_the_scholarly_and_health_defaults() -> None:
    for domain in ("doi.org", "nih.gov", "nature.com", "thelancet.com", "who.int", "arxiv.org"):
        assert domain in DEFAULTS
    assert {"gov", "edu", "ac.uk"} <= DEFAULTS  # suffix rules, stored without their dot


@pytest.mark.parametrize(
    "source",
    [
        "https://www.ncbi.nlm.nih.gov/pmc/articles/PMC4765623/",
        "https://pubmed.ncbi.nlm.nih.gov/26958203/",
        "https://doi.org/10.1038/nature14539",
        "http://WWW.Nature.COM./articles/nature14539",
        "https://blogs.sciencemag.org/pipeline/",
        "https://www.cs.stanford.edu/people/x",
        "https://www.ox.ac.uk/research",
        "www.thelancet.com/journals/lancet",
        "nejm.org/doi/full/10.1056/x",
        "doi:10.1038/nature14539",
        "10.1038/nature14539",
        "https://doi.org/gcgk7g",
        "PMID: 26958203",
        "PMC4765623",
        "arXiv:1106.5730",
    ],
)
def test_trusted_sources(source: str) -> None:
    assert is_trusted(source, DEFAULTS)


@pytest.mark.parametrize(
    "source",
    [
        "https://nih.gov.evil.com/paper",
        "https://nature.com-journal.net/x",
        "https://evilnature.com/",
        "https://nih.gov@evil.com/",
        "https://evil.com\\@nih.gov/",
        "http://alifar76.github.io/sklearn-metrics/",
        "javascript:alert('10.1038/nature14539')",
        "data:text/html,nih.gov",
        "file:///home/me/nature.com/paper.pdf",
        "mailto:editor@nejm.org",
        "ISBN 978-0-262-03561-3",
        "Smith J. Deep learning. Nature 2015",
        "paper.pdf",
        "http://[::1",
        "",
    ],
)
def test_untrusted_sources(source: str) -> None:
    assert not is_trusted(source, DEFAULTS)


def test_env_variable_replaces_the_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    custom = tmp_path / "domains.txt"
    custom.write_text("# only our lab\nexample-lab.org  # the lab wiki\n", encoding="utf-8")
    monkeypatch.setenv(TRUSTED_DOMAINS_ENV, str(custom))
    assert load_trusted_domains() == frozenset({"example-lab.org"})
    assert is_trusted("https://wiki.example-lab.org/page")
    assert not is_trusted("https://www.nature.com/articles/x")
    assert is_trusted("doi:10.1038/nature14539")  # identifiers do not depend on the list

    custom.write_text("nature.com\n", encoding="utf-8")
    stat = custom.stat()
    os.utime(custom, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert is_trusted("https://www.nature.com/articles/x")  # an edited file is read again


def test_an_explicit_path_wins_over_the_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file, explicit = tmp_path / "env.txt", tmp_path / "explicit.txt"
    env_file.write_text("env.example\n", encoding="utf-8")
    explicit.write_text(".ac.jp\n", encoding="utf-8")
    monkeypatch.setenv(TRUSTED_DOMAINS_ENV, str(env_file))
    assert load_trusted_domains(explicit) == frozenset({"ac.jp"})
    assert is_trusted("https://www.u-tokyo.ac.jp/", load_trusted_domains(explicit))


@pytest.mark.parametrize("line", ["https://nature.com", "*.nih.gov", "nature .com", "nih.gov/path"])
def test_malformed_entries_are_reported_with_their_line(line: str) -> None:
    with pytest.raises(ValueError, match=r"list\.txt:3"):
        parse_domain_list(f"# header\nnih.gov\n{line}\n", origin="list.txt")


_LABEL = st.from_regex(r"[a-z][a-z0-9]{0,9}", fullmatch=True)
# Entries whose parent is not itself trusted: "evil" + entry then names an unrelated site.
_STANDALONE = sorted(
    d
    for d in DEFAULTS
    if "." in d
    and not any(".".join(d.split(".")[i:]) in DEFAULTS for i in range(1, d.count(".") + 1))
)


@settings(max_examples=200)
@given(st.sampled_from(sorted(DEFAULTS)), _LABEL)
def test_every_subdomain_of_a_trusted_entry_is_trusted(domain: str, label: str) -> None:
    assert is_trusted(f"https://{label}.{domain}/any/path", DEFAULTS)
    assert host_is_trusted(f"{label}.{domain}", DEFAULTS)


@settings(max_examples=200)
@given(st.sampled_from(_STANDALONE), _LABEL)
def test_lookalikes_of_a_trusted_entry_are_not_trusted(domain: str, label: str) -> None:
    assert not is_trusted(f"https://{domain}.{label}-evil.com/", DEFAULTS)
    assert not is_trusted(f"https://{label}{domain}/", DEFAULTS)
    assert not is_trusted(f"https://{domain}@{label}.example.com/", DEFAULTS)
