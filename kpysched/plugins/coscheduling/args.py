"""CoschedulingArgs, as scheduler-plugins defines them (config.x-k8s.io CoschedulingArgs)."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kpysched.plugins._shared.args import invalid

# scheduler-plugins' defaults.
DEFAULT_PERMIT_WAITING_SECONDS = 60
DEFAULT_REJECT_PERCENTAGE = 10


class CoschedulingArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    # How long a placed member waits at Permit for the rest of its group, unless its
    # PodGroup sets scheduleTimeoutSeconds.
    permit_waiting_time_seconds: int = Field(
        default=DEFAULT_PERMIT_WAITING_SECONDS, alias="permitWaitingTimeSeconds", strict=True)
    # scheduler-plugins' extra wait before a failed group is tried again. Here every
    # member of a failed group backs off on its own (1 s, doubling to 10 s) and is
    # woken only by an event that can help the group, so the field is accepted and
    # range-checked for scheduler-plugins' files, and logged as having no effect.
    pod_group_backoff_seconds: int = Field(default=0, alias="podGroupBackoffSeconds",
                                           strict=True)
    # scheduler-plugins' PostFilter threshold for rejecting a partly placed group. A
    # group here is always tried whole, so there is nothing partly placed to reject;
    # the field is accepted (and range-checked) so that scheduler-plugins' files load.
    pod_group_reject_percentage: int = Field(
        default=DEFAULT_REJECT_PERCENTAGE, alias="podGroupRejectPercentage", strict=True)

    @model_validator(mode="after")
    def _validate(self) -> Self:
        problems = []
        if self.permit_waiting_time_seconds < 0:
            problems.append("permitWaitingTimeSeconds: Invalid value: "
                            f"{self.permit_waiting_time_seconds}: must be greater than or "
                            "equal to 0")
        if self.pod_group_backoff_seconds < 0:
            problems.append("podGroupBackoffSeconds: Invalid value: "
                            f"{self.pod_group_backoff_seconds}: must be greater than or "
                            "equal to 0")
        if not 0 <= self.pod_group_reject_percentage <= 100:
            problems.append("podGroupRejectPercentage: Invalid value: "
                            f"{self.pod_group_reject_percentage}: must be between 0 and 100")
        if problems:
            raise invalid(problems)
        return self
