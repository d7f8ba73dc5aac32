"""Workflows over whole stores: rechunking and v2 -> v3 migration."""

from .convert import ArrayCheck, ConversionResult, VerificationError, convert
from .plan import RechunkPlanError
from .rechunk import RechunkPlan, rechunk

__all__ = ["rechunk", "RechunkPlan", "RechunkPlanError", "convert", "ConversionResult", "ArrayCheck",
           "VerificationError"]
