"""A user's own plugin, loaded by tests/unit/test_config.py as `tests.unit.cfg_sample_plugin:Spread`."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kubesched.framework.interface import FilterPlugin, Plugin, ScorePlugin


class SpreadArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    max_skew: int = Field(1, alias="maxSkew")
    zone_label: str = Field("topology.kubernetes.io/zone", alias="zoneLabel")

    @field_validator("max_skew")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value <= 0:
            raise ValueError("must be greater than zero")
        return value


class Spread(Plugin, FilterPlugin, ScorePlugin):
    name = "Spread"
    Args: ClassVar[type[BaseModel] | None] = SpreadArgs


class NotAPlugin:
    pass
