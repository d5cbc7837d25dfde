"""An arXiv id cited at a venue, looked up in the local snapshots with no live registry: the
arXiv snapshot's record is the preprint; only a record of the published version verifies the
venue (as the live path looks for it: tasks/lookup/chunk.py)."""

import shutil
from pathlib import Path

from models.audit import Provenance, Reference, Status
from models.csl import CSLItem
from tasks.lookup import lookup_references
from tasks.lookup.snapshots import LocalSnapshots
from tasks.snapshots import arxiv, dblp
from tasks.snapshots.store import build

FIXTURES = Path(__file__).parent / "fixtures" / "snapshots"
LABEL = "dblp@2026-11-02"  # the fixture dump's newest mdate


def test_offline_an_arxiv_id_cited_at_a_venue_is_verified_by_the_published_version(
    tmp_path: Path,
) -> None:
    """The arXiv snapshot holds the preprint, dblp's the ICCV paper: cited at ICCV it verifies
    by dblp's record; cited at CVPR, the preprint alone does not verify the venue, and dblp's
    snapshot, complete and dated after 2021, is CVPR's registry of record: no snapshot placing
    it there, it exists only as a preprint (the live search's finding when no registry does)."""
    root, dump = tmp_path / "snapshots", tmp_path / "dump"
    dump.mkdir()
    for name in ("dblp.xml.gz", "dblp.dtd"):
        shutil.copy(FIXTURES / name, dump / name)
    build(dblp.BUILDER, [dump / "dblp.xml.gz"], root)
    build(arxiv.BUILDER, [FIXTURES / "arxiv-metadata-oai-snapshot.json"], root)
    snapshots = LocalSnapshots.open(root)
    assert snapshots is not None
    at_iccv, at_cvpr = (_swin(venue) for venue in ("ICCV", "CVPR"))
    published, elsewhere = lookup_references(
        [at_iccv, at_cvpr], None, offline=True, snapshots=snapshots
    )
    arxiv_label = snapshots.works["arxiv"].label
    snapshots.close()
    assert (published.status, published.registry) == (Status.VERIFIED, LABEL)
    assert published.matched_id == "conf/iccv/LiuL00W0LG21"
    assert (elsewhere.status, elsewhere.registry) == (Status.MISMATCH, arxiv_label)
    assert "exists only as a preprint" in elsewhere.reason
    assert "'CVPR'" in elsewhere.reason and LABEL in elsewhere.reason


def _swin(venue: str) -> Reference:
    """Swin Transformer (ICCV 2021), cited with its arXiv id at `venue`."""
    names = ("Liu Ze", "Lin Yutong", "Cao Yue", "Hu Han", "Wei Yixuan", "Zhang Zheng")
    csl = {
        "id": venue,
        "type": "paper-conference",
        "title": "Swin Transformer: Hierarchical Vision Transformer using Shifted Windows",
        "author": [{"family": n.split()[0], "given": n.split()[1]} for n in names],
        "container-title": venue,
        "issued": {"date-parts": [[2021]]},
    }
    ref = Reference(
        citation_id=venue,
        provenance=Provenance(source_file="refs.bib", entry_key=venue),
        item=CSLItem.from_csl(csl),
    )
    return ref.model_copy(update={"ids": ref.ids.model_copy(update={"arxiv": "2103.14030"})})
