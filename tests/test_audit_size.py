"""An audit past MAX_AUDIT_REFERENCES is refused before any lookup, pointing to `import`: a
generated list one reference too long, against the fake registry over real HTTP."""

from pathlib import Path

import pytest

from flows.audit import MAX_AUDIT_REFERENCES, TooLargeForAudit, run_pipeline
from models.job import JobParams
from tasks.errors import exit_code
from tests.fake_registry import FakeRegistry


def params(path: Path, tmp_path: Path) -> JobParams:
    return JobParams(
        inputs=[str(path)], job_id="big", out_dir=str(tmp_path / "out"), styles=[], offline=False
    )


def test_an_audit_past_the_limit_is_refused_before_any_lookup(
    registry_env: FakeRegistry, tmp_path: Path
) -> None:
    path = tmp_path / "ids.txt"
    path.write_text("".join(f"10.1234/n{n}\n" for n in range(MAX_AUDIT_REFERENCES + 1)))
    with pytest.raises(TooLargeForAudit) as refused:
        run_pipeline(params(path, tmp_path))
    assert "citeaudit import" in str(refused.value)
    assert exit_code(refused.value) == 2
    assert registry_env.count() == 0
    assert not (tmp_path / "out" / "big").exists()
