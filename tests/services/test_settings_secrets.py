"""Secrets in Settings are SecretStr: shown as ********** wherever settings are printed or logged."""

from __future__ import annotations

from pathlib import Path

from carrag.services.container import build_llm
from carrag.services.llms.openai_compatible import OpenAICompatibleLLM
from carrag.services.settings import revealed
from tests.conftest import make_settings

SECRETS = {
    "api_keys": "first-key, second-key",
    "openai_api_key": "sk-openai-secret",
    "elasticsearch_api_key": "es-api-secret",
    "elasticsearch_password": "es-password-secret",
}


def test_secrets_never_appear_when_settings_are_shown(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, **SECRETS)
    for shown in (repr(settings), str(settings), settings.model_dump_json(), str(settings.model_dump())):
        for secret in ("first-key", "second-key", "sk-openai-secret", "es-api-secret", "es-password-secret"):
            assert secret not in shown


async def test_the_clients_still_get_the_values(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, llm="openai", **SECRETS)
    assert [key.get_secret_value() for key in settings.api_keys] == ["first-key", "second-key"]
    assert revealed(settings.elasticsearch_password) == "es-password-secret"
    assert revealed(None) is None
    llm = build_llm(settings)
    assert isinstance(llm, OpenAICompatibleLLM)
    assert llm._client.headers["Authorization"] == "Bearer sk-openai-secret"
    await llm.aclose()
