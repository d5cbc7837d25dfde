"""`citeaudit fix`: the user's own .bib corrected from real registry records, marked where it
cannot be trusted, everything else kept as written."""

import copy
import json
import os
import re
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import defusedxml.ElementTree as SafeET
import pytest
from typer.testing import CliRunner

from flows.cli.main import app
from models.audit import FieldAgreement, Lookup, Reference, Status, ValidationResult
from tasks.match.decide import decide_identified, decide_unidentified
from tasks.read import bibtex
from tasks.registries.crossref_map import crossref_work_to_csl
from tasks.registries.pubmed_map import pubmed_article_to_csl
from tasks.render.fix import fix_bibtex
from tests.fake_registry.fixtures import point_env_at

ROOT = Path(__file__).resolve().parents[1]
WORKS = {
    w["DOI"].lower(): w
    for w in json.loads(
        (ROOT / "tests" / "fixtures" / "validate" / "crossref_works.json").read_text()
    )
}
PLOS = "10.1371/journal.pone.0033693"
CLI = "from flows.cli.main import main; main()"
Done = subprocess.CompletedProcess[str]

BIB = r"""% my reading list
@string{pone = "PLoS ONE"}

@article{sadasivan2012,
  author   = {Sadasivan, Shankar and Pond, Brooks B. and Pani, Amar K. and Qu, Chunxu
              and Jiao, Yun and Smeyne, Richard J.},
  title    = {Methylphenidate exposure induces dopamine neuron loss and activation of
              microglia in basal ganglia of mice},
  journal  = pone,
  year     = 2011,
  doi      = {10.1371/journal.pone.0033693},
  keywords = {adhd, stimulants},
  file     = {papers/sadasivan.pdf},
}

@article{searched2012,
  author  = {Sadasivan, S. and Pond, B. B. and Pani, A. K. and Qu, C. and Jiao, Y.
             and Smeyne, R. J.},
  title   = {Methylphenidate Exposure Induces Dopamine Neuron Loss and Activation of
             Microglia in the Basal Ganglia of Mice},
  journal = {PLoS ONE},
  year    = {2012}
}

@article{wrongdoi2019,
  author = {Smith, Jane},
  title  = {Deep Learning for Protein Folding at Scale},
  year   = {2019},
  doi    = {10.1371/journal.pone.0033693}
}

@article{retracted2012,
  author = {Sadasivan, Shankar and Pond, Brooks B. and Pani, Amar K. and Qu, Chunxu
            and Jiao, Yun and Smeyne, Richard J.},
  title  = {Methylphenidate exposure induces dopamine neuron loss and activation of
            microglia in the basal ganglia of mice},
  year   = {2012},
  doi    = {10.1371/journal.pone.0033693}
}
"""


def audited(tmp_path: Path) -> tuple[list[Reference], dict[str, ValidationResult]]:
    path = tmp_path / "refs.bib"
    path.write_text(BIB, encoding="utf-8")
    refs = bibtex.read([path]).references
    refs = [r.model_copy(update={"citation_id": r.provenance.entry_key}) for r in refs]
    record = crossref_work_to_csl(copy.deepcopy(WORKS[PLOS]))
    retracted_work: dict[str, Any] = copy.deepcopy(WORKS[PLOS])
    retracted_work["updated-by"] = [
        {
            "DOI": "10.1371/journal.pone.0999999",
            "type": "retraction",
            "source": "retraction-watch",
            "reasons": ["+Manipulation of Images"],
            "updated": {"date-parts": [[2023, 6, 1]]},
        }
    ]
    results = {}
    for ref in refs:
        key = ref.provenance.entry_key
        if key == "searched2012":
            results[key] = decide_unidentified(ref, [record])
        else:
            found = crossref_work_to_csl(retracted_work) if key == "retracted2012" else record
            results[key] = decide_identified(ref, Lookup(identifier=PLOS, record=found))
    return refs, results


def test_fix_corrects_verified_entries_and_marks_the_rest(tmp_path: Path) -> None:
    refs, results = audited(tmp_path)
    statuses = [results[k].status.value for k in results]
    assert statuses == ["verified", "verified", "mismatch", "verified"]
    fixed = fix_bibtex(BIB, refs, results)
    text = fixed.text
    sadasivan = text[text.index("@article{sadasivan2012") : text.index("@article{searched2012")]
    # What the matcher forgave is the user's: the title missing a "the" (0.9x) and the
    # online-first year (2011 for 2012) stay; macro, keys, order and own fields are kept.
    assert "title    = {Methylphenidate exposure induces dopamine neuron loss and" in sadasivan
    assert "year     = 2011," in sadasivan and "journal  = pone," in sadasivan
    assert "  pages    = {e33693}," in sadasivan  # added at the end, lined up with the rest
    fields = [line.split("=")[0].strip() for line in sadasivan.splitlines()[1:] if "=" in line]
    assert fields[:-1] == ["author", "title", "journal", "year", "doi", "keywords", "file", "pages"]
    assert (
        "citeaudit = {correction notice (https://doi.org/10.1371/annotation/c76da2c1" in sadasivan
    )
    assert text.startswith('% my reading list\n@string{pone = "PLoS ONE"}\n')
    # Found by search: its DOI is added.
    searched = text[text.index("@article{searched2012") : text.index("@article{wrongdoi2019")]
    assert "  doi     = {10.1371/journal.pone.0033693}" in searched
    # A DOI pointing at another paper, and a retracted work: marked, never deleted or corrected.
    wrong = text[text.index("@article{wrongdoi2019") : text.index("@article{retracted2012")]
    assert "citeaudit = {mismatch: DOI resolves to a different paper" in wrong
    assert "title  = {Deep Learning for Protein Folding at Scale}" in wrong
    retracted = text[text.index("@article{retracted2012") :]
    assert "title  = {Methylphenidate exposure induces dopamine neuron loss and" in retracted
    assert (
        "citeaudit = {retraction notice (https://doi.org/10.1371/journal.pone.0999999, 2023-06-01,"
        " retraction-watch): Manipulation of Images}" in retracted
    )
    # The diff reads entry by entry.
    diff = fixed.diff()
    assert "@sadasivan2012 (verified, correction)\n  + pages = {e33693}\n" in diff
    assert "- year" not in diff and "- title" not in diff
    assert "@retracted2012 (verified, retraction)" in diff
    # Fixing the fixed file changes nothing more.
    again = bibtex.read([_written(tmp_path, text)]).references
    again = [r.model_copy(update={"citation_id": r.provenance.entry_key}) for r in again]
    assert fix_bibtex(text, again, results).text == text


def _written(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "fixed.bib"
    path.write_text(text, encoding="utf-8")
    return path


def run_fix(fake_registry: Any, tmp_path: Path, source: Path, out: Path) -> str:
    """`citeaudit fix SOURCE -o OUT` as a process; what it prints."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from flows.cli.main import main; main()",
            "fix",
            str(source),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**os.environ, **point_env_at(fake_registry, tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_fix_command_writes_a_new_file_and_prints_the_diff(fake_registry, tmp_path: Path) -> None:
    source = ROOT / "examples" / "references.bib"
    before = source.read_text(encoding="utf-8")
    out = tmp_path / "fixed.bib"
    printed = run_fix(fake_registry, tmp_path, source, out)
    assert source.read_text(encoding="utf-8") == before  # the input is never touched
    fixed = out.read_text(encoding="utf-8")
    assert "@made2023up (unmatched)" in printed and "@wrongdoi2019 (mismatch)" in printed
    assert fixed.count("citeaudit = {") == 2
    assert printed.endswith(
        "5 entries: 3 corrected, 2 marked (field `citeaudit`), 0 already marked, 0 unchanged\n"
    )
    unchanged = [line for line in before.splitlines() if line not in fixed.splitlines()]
    assert unchanged == []  # every line the user wrote is still there
    # Fixed again: nothing changes, and the entries still marked are not counted as clean.
    again = run_fix(fake_registry, tmp_path, out, tmp_path / "fixed-again.bib")
    assert (tmp_path / "fixed-again.bib").read_text(encoding="utf-8") == fixed
    assert again == (
        "5 entries: 0 corrected, 0 marked (field `citeaudit`), 2 already marked, 3 unchanged\n"
    )


def test_a_mistyped_doi_beside_the_pmid_that_verifies_is_corrected(
    fake_registry, tmp_path: Path
) -> None:
    # PubMed holds PMID 9997 (DOI 10.1016/0005-2795(76)90109-4); the citer mistyped the DOI.
    source = tmp_path / "refs.bib"
    source.write_text(
        "@article{typo1976,\n"
        "  title = {Magnetic studies of Chromatium flavocytochrome C552. A mechanism for\n"
        "           heme-flavin interaction},\n"
        "  journal = {Biochimica et biophysica acta},\n"
        "  year = {1976},\n"
        "  doi = {10.1016/0005-2795(76)90109-9},\n"
        "  pmid = {9997},\n"
        "}\n",
        encoding="utf-8",
    )
    out = tmp_path / "fixed.bib"
    printed = run_fix(fake_registry, tmp_path, source, out)
    assert "@typo1976 (verified)" in printed
    assert "+ doi = {10.1016/0005-2795(76)90109-4}" in printed
    fixed = out.read_text(encoding="utf-8")
    assert "doi = {10.1016/0005-2795(76)90109-4}" in fixed, fixed


def test_fix_usage_errors(tmp_path: Path) -> None:
    ris = tmp_path / "refs.ris"
    ris.write_text("TY  - JOUR\nTI  - A title\nER  - \n")
    bib = tmp_path / "refs.bib"
    bib.write_text("@article{a, title={A title}}\n")
    for args in (["fix", str(ris)], ["fix", str(bib), "-o", str(bib)], ["fix", "nothing.bib"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
    assert bib.read_text() == "@article{a, title={A title}}\n"


def fix_offline(tmp_path: Path, out: str = "fixed.bib", **options: Any) -> subprocess.Popen[str]:
    """`citeaudit fix refs.bib --offline -o OUT` started in `tmp_path`, as a real process."""
    return subprocess.Popen(
        [sys.executable, "-c", CLI, "fix", "refs.bib", "--offline", "-o", out],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **options,
    )


def fixed_offline(tmp_path: Path, out: str = "fixed.bib", **options: Any) -> Done:
    """`citeaudit fix refs.bib --offline -o OUT` in `tmp_path`, run to its end."""
    with fix_offline(tmp_path, out, **options) as process:
        stdout, stderr = process.communicate(timeout=120)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def many_entries(count: int) -> str:
    """`count` entries that stay unverified offline (each gets a mark)."""
    return "".join(
        f"@article{{entry{n},\n  author = {{Writer, Anne and Reader, Bob}},\n"
        f"  title  = {{A study of things, part {n}}},\n  year   = {{2001}},\n}}\n\n"
        for n in range(count)
    )


def test_a_full_disk_leaves_the_earlier_fixed_file_whole(tmp_path: Path) -> None:
    """The file size limit stands for a full disk: the write fails midway. The -o file an
    earlier run wrote is kept as it was, and no summary says it was written."""
    (tmp_path / "refs.bib").write_text(many_entries(300), encoding="utf-8")
    earlier = "@article{kept,\n  title = {Written by an earlier run},\n}\n"
    (tmp_path / "fixed.bib").write_text(earlier, encoding="utf-8")
    limit = 16 * 1024  # the fixed file is ~40 KB

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    for debug in ("", "0", "1"):  # CITEAUDIT_DEBUG changes what is said, not the exit code
        env = {**os.environ, "CITEAUDIT_DEBUG": debug}
        done = fixed_offline(tmp_path, preexec_fn=small_disk, env=env)
        assert done.returncode == 3, done.stderr
        assert done.stdout == ""  # no diff, no "300 entries: ..." before the file is there
        assert done.stderr.startswith("citeaudit: error: fixed.bib: not written (File too large)")
        assert (tmp_path / "fixed.bib").read_text(encoding="utf-8") == earlier
        assert sorted(p.name for p in tmp_path.iterdir()) == ["fixed.bib", "refs.bib"]


def test_kill_9_while_writing_leaves_the_old_file_or_the_whole_new_one(tmp_path: Path) -> None:
    (tmp_path / "refs.bib").write_text(many_entries(1000), encoding="utf-8")
    assert fixed_offline(tmp_path, "whole.bib").returncode == 0
    whole = (tmp_path / "whole.bib").read_bytes()
    earlier = b"@article{kept,\n  title = {Written by an earlier run},\n}\n"
    out = tmp_path / "fixed.bib"
    out.write_bytes(earlier)
    before = out.stat()
    with fix_offline(tmp_path) as process:
        while process.poll() is None:  # killed the moment the file changes
            now = out.stat()
            if (now.st_ino, now.st_size, now.st_mtime_ns) != (
                before.st_ino,
                before.st_size,
                before.st_mtime_ns,
            ):
                process.kill()
                break
        process.communicate(timeout=120)
    assert out.read_bytes() in (earlier, whole)


def test_the_next_fix_sweeps_what_a_killed_writer_left(tmp_path: Path) -> None:
    """A `kill -9` mid-write leaves `.fixed.bib.XXXX.tmp` beside the output: the next `fix -o`
    removes it, and leaves a fresh one alone (it may be another writer's, still running)."""
    (tmp_path / "refs.bib").write_text(many_entries(3), encoding="utf-8")
    stale = tmp_path / ".fixed.bib.k1ll3d.tmp"
    stale.write_bytes(b"@article{half")
    os.utime(stale, (1, 1))
    fresh = tmp_path / ".fixed.bib.wr1t1ng.tmp"
    fresh.write_bytes(b"@article{half")
    other = tmp_path / ".other.bib.k1ll3d.tmp"  # not this output's: not ours to remove
    other.write_bytes(b"")
    os.utime(other, (1, 1))
    assert fixed_offline(tmp_path).returncode == 0
    assert not stale.exists()
    assert fresh.exists() and other.exists()


def test_an_output_that_cannot_be_written_is_a_usage_error_before_the_audit(
    fake_registry, tmp_path: Path
) -> None:
    """A folder, a folder that does not exist, and the input under another name (a hard link:
    it was rewritten in place). Found before any registry is asked, whatever CITEAUDIT_DEBUG."""
    source = ROOT / "examples" / "references.bib"
    (tmp_path / "refs.bib").write_bytes(source.read_bytes())
    os.link(tmp_path / "refs.bib", tmp_path / "linked.bib")
    (tmp_path / "folder").mkdir()
    env = {**os.environ, **point_env_at(fake_registry, tmp_path), "CITEAUDIT_DEBUG": "1"}
    for out, said in (
        ("folder", "is a folder"),
        (str(tmp_path / "nowhere" / "x.bib"), "no folder"),
        ("linked.bib", "is the input file"),
    ):
        args = [sys.executable, "-c", CLI, "fix", "refs.bib", "-o", out]
        done = subprocess.run(
            args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"citeaudit: error: -o {out}: {said}"), done.stderr
        assert len(done.stderr.splitlines()) == 1
    assert fake_registry.count() == 0
    assert (tmp_path / "refs.bib").read_bytes() == source.read_bytes()


def test_a_bib_is_bibtex_even_with_an_html_comment_on_top(tmp_path: Path) -> None:
    head = "<!-- exported by a web tool; paste it into <body> of your page -->\n"
    entry = "@article{a2001,\n    title = {A title},\n    year  = {2001},\n}\n"
    (tmp_path / "refs.bib").write_text(head + entry, encoding="utf-8")
    done = fixed_offline(tmp_path)
    assert done.returncode == 0, done.stderr
    mark = "    citeaudit = {unverified: offline},\n"
    assert (tmp_path / "fixed.bib").read_text(encoding="utf-8") == head + entry.replace(
        ",\n}", ",\n" + mark + "}"
    )
    assert "@a2001 (unverified)\n  + citeaudit = {unverified: offline}" in done.stdout


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_fix_keeps_the_files_byte_order_mark_and_crlf_line_endings(
    tmp_path: Path, encoding: str
) -> None:
    entry = "@article{a2001,\r\n  title = {A title},\r\n  year  = {2001},\r\n}\r\n"
    (tmp_path / "refs.bib").write_bytes(entry.encode(encoding))
    done = fixed_offline(tmp_path)
    assert done.returncode == 0, done.stderr
    marked = entry.replace(",\r\n}", ",\r\n  citeaudit = {unverified: offline},\r\n}")
    assert (tmp_path / "fixed.bib").read_bytes() == marked.encode(encoding)


def test_a_broken_entry_is_one_line_naming_it_and_the_rest_is_fixed(tmp_path: Path) -> None:
    source = (ROOT / "examples" / "references.bib").read_text(encoding="utf-8")
    broken = "@article{broken2001,\n  title = {Missing its closing brace,\n  year = 2001\n\n"
    (tmp_path / "refs.bib").write_text(broken + source, encoding="utf-8")
    done = fixed_offline(tmp_path)
    assert done.returncode == 0, done.stderr
    # bibtexparser's own multi-line warning would repeat it on stderr
    assert done.stderr == ""
    (error,) = [line for line in done.stdout.splitlines() if "broken2001" in line]
    assert error == (
        "refs.bib:broken2001: malformed entry: Unexpected block start: `@string`. "
        "Was still looking for field-value closing `}`"
    )
    assert done.stdout.count("(unverified)") == 5


def test_a_latin1_file_is_fixed_into_utf8_with_a_warning(tmp_path: Path) -> None:
    entry = "@article{muller1999,\n  author = {M\u00fcller, J\u00fcrgen},\n"
    entry += "  title = {\u00dcber die Stabilit\u00e4t von Tr\u00e4gern},\n}\n"
    (tmp_path / "refs.bib").write_bytes(entry.encode("latin-1"))
    done = fixed_offline(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == (
        "refs.bib: warning: not UTF-8: the whole file was read as cp1252 (detected); "
        "the fixed file is UTF-8"
    )
    fixed = (tmp_path / "fixed.bib").read_text(encoding="utf-8")
    assert fixed == entry.replace(",\n}\n", ",\n  citeaudit = {unverified: offline},\n}\n")


def test_a_missing_title_comes_from_pubmed_without_its_full_stop(tmp_path: Path) -> None:
    xml = (ROOT / "tests/fixtures/registries/pubmed_36987902.xml").read_bytes()
    article = next(e for e in SafeET.fromstring(xml) if e.tag == "PubmedArticle")
    record = pubmed_article_to_csl(article)
    text = "@article{bruserud2023,\n  author = {Bruserud, Ø. and Arnes, K. and others},\n}\n"
    path = _written(tmp_path, text)
    (ref,) = bibtex.read([path]).references
    result = decide_identified(ref, Lookup(identifier="36987902", record=record))
    fixed = fix_bibtex(text, [ref], {ref.citation_id: result}).text
    assert (
        "title  = {Patients over 75 years admitted to the National Burn Centre, Haukeland" in fixed
    )
    assert "2000-19}," in fixed and "2000-19.}" not in fixed


def test_a_mark_the_entry_no_longer_earns_is_removed(tmp_path: Path) -> None:
    refs, results = audited(tmp_path)
    marked = fix_bibtex(BIB, refs, results).text
    assert "citeaudit = {mismatch: DOI resolves to a different paper" in marked
    again = bibtex.read([_written(tmp_path, marked)]).references
    again = [r.model_copy(update={"citation_id": r.provenance.entry_key}) for r in again]
    # Later the DOI's record agrees with the entry (say, the registry fixed its metadata).
    wrong = next(r for r in again if r.citation_id == "wrongdoi2019")
    agrees = FieldAgreement(title=1.0, authors=1.0, year=1.0)
    now = {
        **results,
        "wrongdoi2019": ValidationResult(
            citation_id="wrongdoi2019", status=Status.VERIFIED, record=wrong.item, agreement=agrees
        ),
    }
    fixed = fix_bibtex(marked, again, now)
    entry = fixed.text[fixed.text.index("@article{wrongdoi2019") :]
    entry = entry[: entry.index("\n}\n") + 3]
    original = BIB[BIB.index("@article{wrongdoi2019") :]
    # The entry as the user wrote it, but for the comma adding the mark put after their last field.
    assert entry.replace(",\n}", "\n}") == original[: original.index("\n}\n") + 3]
    assert "@wrongdoi2019 (verified)\n  - citeaudit = {mismatch" in fixed.diff()
    assert fix_bibtex(fixed.text, again, now).text == fixed.text


def test_fix_never_makes_a_real_entry_worse(fake_registry, tmp_path: Path) -> None:
    """Google Scholar's PaLM and GPT-4 entries and a `%`-commented entry, fixed over real HTTP
    against the registries' real records (PaLM's preprint year 2022; GPT-4's 279 names, some
    broken): each changed field is asserted, and nothing else changes."""
    source = ROOT / "tests" / "fixtures" / "reflists" / "scholar" / "ml.bib"
    before = source.read_text(encoding="utf-8")
    out = tmp_path / "fixed.bib"
    printed = run_fix(fake_registry, tmp_path, source, out)
    fixed = out.read_text(encoding="utf-8")
    # PaLM cited as JMLR 2023: the preprint's 2022 is a year the matcher forgave, not an error.
    assert "@chowdhery2023palm" not in printed and "year={2023}" in fixed
    # GPT-4's ten names and `others`: kept, not expanded into the record's 279; the DOI it lacks
    # is added (the arXiv DOI of the preprint it cites).
    assert "@achiam2023gpt (verified)\n  + doi = {10.48550/arXiv.2303.08774}\n\n" in printed
    # No author list: the record's would be the fix, but 'Achiam, OpenAI Josh' and
    # 'Fulford, Is-abella' are not names: marked, not written.
    assert (
        "@openai2023gpt4 (verified)\n  + doi = {10.48550/arXiv.2303.08774}\n"
        "  + citeaudit = {verified; the registry's author list is not written: "
        "'Achiam, OpenAI Josh' looks broken}\n"
    ) in printed
    assert "Is-abella" not in fixed
    # The commented-out entry is a comment: not read, never edited.
    assert "wolf_2019" not in printed
    assert fixed.endswith(before[before.index("% @article{wolf_2019") :])
    added = [line for line in fixed.splitlines() if line not in before.splitlines()]
    assert added == [
        "  doi  = {10.48550/arXiv.2303.08774},",  # after `year={2023}` and a comma
        "  primaryClass={cs.CL},",
        "  doi  = {10.48550/arXiv.2303.08774},",
        "  citeaudit = {verified; the registry's author list is not written: 'Achiam, OpenAI "
        "Josh' looks broken},",
    ]
    assert printed.endswith(
        "3 entries: 2 corrected, 0 marked (field `citeaudit`), 0 already marked, 1 unchanged\n"
    )


def test_fix_in_a_pipe_says_how_far_it_is(fake_registry, tmp_path: Path) -> None:
    """Piped (no terminal), fix prints a progress line now and then on stderr, as audit does:
    a long fix must not stay silent for minutes."""
    fake_registry.latency = 0.3  # long enough for a line every 0.1 s
    done = subprocess.run(
        [sys.executable, "-c", CLI, "fix", str(ROOT / "examples" / "references.bib")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={
            **os.environ,
            **point_env_at(fake_registry, tmp_path),
            "CITEAUDIT_PROGRESS_SECONDS": "0.1",
        },
    )
    assert done.returncode == 0, done.stderr
    lines = re.findall(r"^citeaudit: (.+), \d+:\d\d elapsed$", done.stderr, re.MULTILINE)
    assert lines and set(lines) <= {"starting", *(f"validate {n}/5" for n in range(6))}, lines
    assert any(line.startswith("validate") for line in lines), done.stderr
    assert done.stdout.startswith("% A small reference list")  # the fixed BibTeX on stdout
