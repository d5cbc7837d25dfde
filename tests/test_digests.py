"""DigestMap (tasks/digests.py): strings seen in a list of millions, kept as digests, answer as
a dict would, before and after their digests are merged into the sorted arrays."""

import pytest

from tasks import digests
from tasks.digests import DigestMap


def test_a_digest_map_answers_as_a_dict_across_merges(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digests, "MERGE", 7)  # merged every 7 additions
    seen, expected = DigestMap(), {}
    for n in range(100):
        key = f"key-{n % 60}"  # 40 of them come back
        seen[key] = n
        expected[key] = n
        assert seen.get(key) == n
    assert len(seen) == len(expected) == 60
    assert all(seen.get(key) == value for key, value in expected.items())
    assert "key-61" not in seen and seen.get("key-61") is None and seen.get("x", 5) == 5
    seen.add("key-3")  # already there: kept as it was
    seen.add("new")
    assert seen.get("key-3") == expected["key-3"] and "new" in seen and 3 not in seen


def test_digests_ending_in_a_zero_byte_are_found() -> None:
    # NumPy's fixed-width bytes drop trailing NULs: the digests end with 0x01 so none is lost
    seen = DigestMap()
    keys = [str(n) for n in range(5_000)]
    for key in keys:
        seen.add(key)
    seen._merge()
    assert all(key in seen for key in keys)
