"""The deployment files (docker-compose.yml, Dockerfile, .dockerignore) checked without a Docker engine:
the compose file against the Compose Specification schema (and by a real `docker compose config`
where one is installed), and the invariants the stack depends on."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ElementTree
from importlib.metadata import version
from pathlib import Path

import jsonschema
import pytest
import yaml

from carrag.services.rerankers.flashrank import MODEL_ARCHIVE_URL
from carrag.services.settings import Settings
from carrag.services.stores.elasticsearch.layout import SUPPORTED_MAJOR

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "docker-compose.yml"
COMPOSE_SCHEMA = Path(__file__).parent / "fixtures" / "compose" / "compose-spec.json"


def pinned_elasticsearch_version() -> str:
    """The single pin: the version the test harness runs (tests/es_harness/pom.xml)."""
    pom = ElementTree.parse(ROOT / "tests" / "es_harness" / "pom.xml").getroot()
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    return pom.find("m:properties/m:elasticsearch.version", namespace).text.strip()  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE_FILE.read_text())


@pytest.fixture(scope="module")
def services(compose: dict) -> dict:
    return compose["services"]


# --- docker-compose.yml ---------------------------------------------------------------------------
def test_compose_file_matches_the_compose_specification(compose: dict) -> None:
    validator = jsonschema.Draft7Validator(json.loads(COMPOSE_SCHEMA.read_text()))
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(compose)]
    assert errors == []
    broken = yaml.safe_load(COMPOSE_FILE.read_text())
    broken["services"]["api"]["depends_on"]["ollama"]["condition"] = "service_ready"
    assert not validator.is_valid(broken), "the schema really checks depends_on conditions"


def _compose_command() -> list[str] | None:
    candidates = [["docker", "compose"], ["docker-compose"]]
    for command in candidates:
        if shutil.which(command[0]) is None:
            continue
        probe = subprocess.run([*command, "version"], capture_output=True, text=True, timeout=60)
        if probe.returncode == 0:
            return command
    return None


def test_docker_compose_config_accepts_the_file() -> None:
    command = _compose_command()
    if command is None:
        pytest.skip("no Docker Compose implementation installed (`docker compose` / `docker-compose`)")
    result = subprocess.run(
        [*command, "-f", str(COMPOSE_FILE), "config", "-q"], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr


def test_elasticsearch_service(services: dict) -> None:
    elasticsearch = services["elasticsearch"]
    image, tag = elasticsearch["image"].rsplit(":", 1)
    assert image == "docker.elastic.co/elasticsearch/elasticsearch"
    assert tag == pinned_elasticsearch_version(), "the image runs the version the tests run"
    environment = elasticsearch["environment"]
    assert environment["discovery.type"] == "single-node"
    assert environment["xpack.security.enabled"] == "false"
    heap = re.findall(r"-Xm([sx])(\S+)", environment["ES_JAVA_OPTS"])
    assert dict(heap)["s"] == dict(heap)["x"], "a fixed heap (-Xms == -Xmx)"
    assert "_cluster/health" in " ".join(elasticsearch["healthcheck"]["test"])
    assert any(volume.split(":")[1] == "/usr/share/elasticsearch/data" for volume in elasticsearch["volumes"])


def test_client_and_server_major_versions_match() -> None:
    server_major = int(pinned_elasticsearch_version().split(".")[0])
    assert int(version("elasticsearch").split(".")[0]) == server_major == SUPPORTED_MAJOR


def test_ollama_services_pull_the_configured_models(services: dict) -> None:
    assert services["ollama"]["healthcheck"]["test"]
    pull = services["ollama-pull"]
    assert pull["depends_on"]["ollama"]["condition"] == "service_healthy"
    assert pull["restart"] == "no"
    script = " ".join(pull["command"])
    environment = services["api"]["environment"]
    for model in (environment["OLLAMA_EMBED_MODEL"], environment["OLLAMA_LLM_MODEL"]):
        assert f"ollama pull {model}" in script
    assert pull["environment"]["OLLAMA_HOST"] == environment["OLLAMA_BASE_URL"]


def test_api_service_waits_for_its_dependencies_and_is_configured(services: dict) -> None:
    api = services["api"]
    assert api["build"]["dockerfile"] == "Dockerfile" and (ROOT / api["build"]["context"] / "Dockerfile").is_file()
    assert api["depends_on"] == {
        "elasticsearch": {"condition": "service_healthy"},
        "ollama": {"condition": "service_healthy"},
        "ollama-pull": {"condition": "service_completed_successfully"},
    }
    assert api["healthcheck"]["test"]
    environment = {key: str(value) for key, value in api["environment"].items()}
    unknown = {key.lower() for key in environment} - set(Settings.model_fields)
    assert not unknown, f"not Carrag settings (typo?): {unknown}"
    interpolated = {key: re.sub(r"\$\{[^:}]+:-([^}]*)\}", r"\1", value) for key, value in environment.items()}
    settings = Settings(_env_file=None, **{key.lower(): value for key, value in interpolated.items()})
    chosen = (settings.store, settings.embedder, settings.llm, settings.tagger)
    assert chosen == ("elasticsearch", "ollama", "ollama", "llm")
    assert settings.elasticsearch_url == "http://elasticsearch:9200"
    assert settings.ollama_base_url == "http://ollama:11434" and settings.host == "0.0.0.0"
    assert str(settings.resolved_reranker_cache_dir) == _dockerfile_env()["RERANKER_CACHE_DIR"]


def test_every_named_volume_is_declared_and_used(compose: dict, services: dict) -> None:
    used = {
        volume.split(":")[0]
        for service in services.values()
        for volume in service.get("volumes", [])
        if not volume.startswith((".", "/"))
    }
    assert used == set(compose["volumes"]) == {"es-data", "ollama-models", "api-data"}


# --- Dockerfile -----------------------------------------------------------------------------------
def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with continuation lines joined and comments dropped."""
    text = (ROOT / "Dockerfile").read_text()
    logical, current = [], ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        current += line.rstrip("\\").strip() + " " if line.rstrip().endswith("\\") else line.strip()
        if not line.rstrip().endswith("\\"):
            logical.append(current.strip())
            current = ""
    pairs = []
    for line in logical:
        instruction, _, arguments = line.partition(" ")
        pairs.append((instruction.upper(), arguments.strip()))
    return pairs


def _stages() -> list[list[tuple[str, str]]]:
    stages: list[list[tuple[str, str]]] = []
    for instruction, arguments in dockerfile_instructions():
        if instruction == "FROM":
            stages.append([])
        stages[-1].append((instruction, arguments))
    return stages


def _dockerfile_env(stage: int = -1) -> dict[str, str]:
    values: dict[str, str] = {}
    for instruction, arguments in _stages()[stage]:
        if instruction == "ENV":
            values.update(re.findall(r'(\w+)=("[^"]*"|\S+)', arguments))
    return {key: value.strip('"') for key, value in values.items()}


def test_dockerfile_builds_on_python_311_slim_in_two_stages() -> None:
    stages = _stages()
    assert [stage[0][1].split()[0] for stage in stages] == ["python:3.11-slim", "python:3.11-slim"]
    runtime = dict(stages[-1])
    assert json.loads(runtime["ENTRYPOINT"]) == ["carrag"] and json.loads(runtime["CMD"]) == ["serve"]
    assert "HEALTHCHECK" in runtime and runtime["EXPOSE"] == "8000"
    environment = _dockerfile_env()
    assert environment["HOST"] == "0.0.0.0" and environment["DATA_DIR"] == "/data"


def test_dockerfile_bakes_the_reranker_model_in() -> None:
    build = _stages()[0]
    arguments = dict(value.split("=", 1) for kind, value in build if kind == "ARG")
    assert arguments["RERANKER_MODEL"] == Settings.model_fields["reranker_model"].default
    assert arguments["RERANKER_CACHE_DIR"] == _dockerfile_env()["RERANKER_CACHE_DIR"]
    source, destination = next(value.split() for kind, value in build if kind == "ADD")
    assert source == MODEL_ARCHIVE_URL.format("${RERANKER_MODEL}")
    unpack = next(value for kind, value in build if kind == "RUN" and destination in value)
    assert 'python -m zipfile -e /tmp/reranker.zip "$RERANKER_CACHE_DIR"' in unpack
    assert "missing_model_reason" in unpack, "the build fails if the baked model is incomplete"
    assert any(kind == "COPY" and "--from=build /opt/carrag" in value for kind, value in _stages()[-1])


def test_dockerfile_compiles_llama_cpp_like_the_makefile() -> None:
    makefile_flags = re.search(r"CMAKE_ARGS \?= (.+)", (ROOT / "Makefile").read_text())
    assert makefile_flags is not None
    assert _dockerfile_env(0)["CMAKE_ARGS"] == makefile_flags.group(1).strip()


def test_dockerfile_copies_only_what_exists_and_is_not_ignored() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    for instruction, arguments in _stages()[0]:
        if instruction != "COPY" or arguments.startswith("--from"):
            continue
        for source in arguments.split()[:-1]:
            assert (ROOT / source).exists(), source
            assert source not in ignored, f"{source} is excluded by .dockerignore"


def test_deploy_doc_names_the_pinned_version() -> None:
    assert pinned_elasticsearch_version() in (ROOT / "docs" / "deploy.md").read_text()


def test_deploy_doc_lists_every_setting_the_compose_file_sets(services: dict) -> None:
    """docs/deploy.md's "Settings" table says "The compose file sets:" — so it lists all of them."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    table = text.split("The compose file sets:", 1)[1].split("\n\n", 2)[1]
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", table))
    assert set(services["api"]["environment"]) - documented == set()
