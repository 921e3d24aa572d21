"""How every item of a campaign runs: the stages chosen and their limits, and the definition hash.

A :class:`Plan` is small and picklable, so a Ray worker builds its own stage objects from it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from karyamorph.campaign.definition import CampaignError, CampaignFile
from karyamorph.campaign.items import Item
from karyamorph.harness.pipeline import StageSelectionError, default_stages, select_stages
from karyamorph.harness.stages.base import Stage

GPU_STAGES = frozenset({"sanitize", "correctness", "timing", "metrics"})
"""The stages that need a CUDA device (without one they skip, saying so). A campaign that runs
any of them goes to the GPU workers; one that runs none is compile-side and runs on CPUs."""


@dataclass(frozen=True, slots=True)
class Plan:
    """The stage selection and limits of a campaign (``only`` None: every stage, less ``skip``)."""

    only: tuple[str, ...] | None = None
    skip: tuple[str, ...] = ()
    timeout_s: float | None = None
    check_budget_s: float | None = None

    def stages(self) -> list[Stage]:
        """Fresh stage objects, in pipeline order.

        Raises
        ------
        StageSelectionError
            A name is not a stage, or nothing is left to run.
        """
        return select_stages(default_stages(self.timeout_s, self.check_budget_s), self.only, self.skip)

    @property
    def names(self) -> tuple[str, ...]:
        """The names of the stages that run, in order."""
        return tuple(s.name for s in self.stages())

    @property
    def needs_gpu(self) -> bool:
        """Whether any stage that runs needs a CUDA device."""
        return any(n in GPU_STAGES for n in self.names)


def plan_of(campaign: CampaignFile) -> Plan:
    """The plan a campaign file states.

    Raises
    ------
    CampaignError
        A stage name in ``stages`` or ``skip`` is not a stage, or nothing is left to run.
    """
    plan = Plan(campaign.stages, campaign.skip, campaign.timeout_s, campaign.check_budget_s)
    try:
        plan.stages()
    except StageSelectionError as exc:
        raise CampaignError(f"{campaign.path.name}: campaign.stages", str(exc)) from None
    return plan


def definition_hash(campaign: CampaignFile, items: Sequence[Item], plan: Plan) -> str:
    """What makes two campaigns the same campaign: its name, its stages and limits, its items.

    ``campaign run`` on a file whose hash (and label) match a campaign in the database resumes
    that campaign; a file edited into other items or stages starts a new one.
    """
    content = {
        "name": campaign.name,
        "stages": list(plan.names),
        "timeout_s": plan.timeout_s,
        "check_budget_s": plan.check_budget_s,
        "items": [i.key for i in items],
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()
