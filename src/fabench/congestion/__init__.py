"""Congestion: victims measured alone and under aggressors, the GPCNeT impact factor."""

from .impact import ImpactFactor, ImpactRow, impact_factors, impact_rows
from .session import CongestionConfig, congestion_campaign, run_congestion
from .victims import VICTIMS, VictimSettings

__all__ = ["VICTIMS", "CongestionConfig", "ImpactFactor", "ImpactRow", "VictimSettings",
           "congestion_campaign", "impact_factors", "impact_rows", "run_congestion"]
