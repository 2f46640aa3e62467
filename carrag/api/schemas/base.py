"""The base of every wire type: routes validate the services' dataclasses into it by attribute
(``from_attributes``) and the CLI's HTTP client validates it from JSON, so one declaration serves both.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any

from pydantic import AfterValidator, AliasChoices, AliasPath, BaseModel, BeforeValidator, ConfigDict, StrictBool

from carrag.services.errors import InvalidInput
from carrag.services.requests import user_metadata, user_tags, user_title


class Schema(BaseModel):
    model_config = ConfigDict(from_attributes=True)


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


IsoTimestamp = Annotated[str, BeforeValidator(_iso)]
"""A timestamp on the wire: ISO 8601 text, from a ``datetime`` or from text already."""


def read_from(owner: str, name: str) -> AliasChoices:
    """Validate a field from a domain object's ``owner.name`` (a search hit's ``chunk.document_id``), or from
    JSON by its own name. The path comes first: the objects the API answers have no attribute ``name``, and
    trying a missing one first costs an AttributeError per field per item."""
    return AliasChoices(AliasPath(owner, name), name)


def _checked_by(check: Callable[[Any], Any]) -> AfterValidator:
    """A service-side check (`carrag.services.requests`) as a field validator: its InvalidInput is a 422."""

    def checked(value: Any) -> Any:
        try:
            return check(value)
        except InvalidInput as exc:
            raise ValueError(exc.message) from None

    return AfterValidator(checked)


# StrictBool first: JSON true stays a boolean (and 1 an integer) instead of being coerced
UserMetadata = Annotated[dict[str, StrictBool | int | float | str], _checked_by(user_metadata)]
"""User metadata on the wire (ingest, PATCH, search filters): a JSON object of scalar values (422 otherwise)."""
UserTags = Annotated[list[str], _checked_by(user_tags)]
"""A document's tags on the wire (ingest, PATCH): at most 50 of at most 200 characters, normalised."""
UserTitle = Annotated[str, _checked_by(user_title)]
"""A document's title on the wire: not blank, at most 1000 characters, trimmed."""
