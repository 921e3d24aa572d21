"""Measurement campaigns: kernel specs x size sweeps x archs, resumable, run locally or on Ray.

The face stays light (the command line imports this package to register its commands): the
campaign file and its errors are here; running one is :func:`karyamorph.campaign.runner.run_campaign`
(its items from :func:`karyamorph.campaign.items.expand`; on a cluster with
:class:`karyamorph.campaign.distributed.RayExecutor`).
"""

from karyamorph.campaign.definition import CampaignError, CampaignFile, Sweep, load_campaign

__all__ = ["CampaignError", "CampaignFile", "Sweep", "load_campaign"]
