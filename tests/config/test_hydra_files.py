"""Hydra's files beside a job are masked in place: every job's secrets, whatever the order."""

from __future__ import annotations

import threading
from pathlib import Path

from ragexp.config.hydra_files import hydra_files, mask_secrets

TOKENS = [f"tok-{i:02d}Qz91xVab" for i in range(8)]


def test_the_job_files_and_the_sweep_file_are_named(tmp_path: Path) -> None:
    files = hydra_files(tmp_path / "0", ".hydra", tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in files] == [
        "0/.hydra/config.yaml", "0/.hydra/hydra.yaml", "0/.hydra/overrides.yaml", "multirun.yaml",
    ]  # fmt: skip
    assert hydra_files(tmp_path, None, None) == []  # hydra.output_subdir=null: nothing saved


def test_secrets_and_url_passwords_are_masked_and_the_rest_kept(tmp_path: Path) -> None:
    path = tmp_path / "overrides.yaml"
    path.write_text(
        f"- system.options.token={TOKENS[0]}\n- system.url=http://team:pw-Secret4@host/ask\n"
        "- retriever.top_k=3\n"
    )
    mask_secrets([path, tmp_path / "absent.yaml"], [TOKENS[0]])
    assert path.read_text() == (
        "- system.options.token=***\n- system.url=http://team:***@host/ask\n- retriever.top_k=3\n"
    )


def test_jobs_masking_one_sweep_file_at_once_keep_each_others_masks(tmp_path: Path) -> None:
    path = tmp_path / "multirun.yaml"
    path.write_text("".join(f"- system.options.token={t}\n" for t in TOKENS) * 1000)
    jobs = [threading.Thread(target=mask_secrets, args=([path], [t])) for t in TOKENS]
    for job in jobs:
        job.start()
    for job in jobs:
        job.join()
    text = path.read_text()
    assert not [t for t in TOKENS if t in text]
    assert text == "- system.options.token=***\n" * (len(TOKENS) * 1000)
