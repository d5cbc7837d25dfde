"""Real references (Deep Review CSL-JSON items) as the audit's Reference objects."""

import json
from pathlib import Path

from models.audit import Provenance, Reference
from models.csl import CSLItem
from tasks.identifiers import identifiers_of

SAMPLE = Path(__file__).parent / "fixtures" / "score" / "deep_review_sample.json"


def deep_review_references() -> list[Reference]:
    references = []
    for data in json.loads(SAMPLE.read_text(encoding="utf-8")):
        item = CSLItem.from_csl(data)
        references.append(
            Reference(
                citation_id=f"deep-review:{item.id}",
                item=item,
                provenance=Provenance(source_file=SAMPLE.name, entry_key=item.id),
                ids=identifiers_of(item),
                raw=None,
                stated_confidence=None,
            )
        )
    return references
