"""Providers written to PraisonAI's duck-typed ``ComputeProviderProtocol``, used as ours.

``resolve_compute(obj)`` returns such an object unchanged (PraisonAI's bridge does); every entry
point that provisions (``Sandbox.create``, ``SharedCompute``, agents' ``compute=``) wraps it in
:class:`ForeignProvider` (``registry.compute_provider``), which offers our contract through the
object's ``execute`` alone.
"""

from praisonai.compute.foreign._protocol import ForeignConfig, looks_like_provider, protocol_problem
from praisonai.compute.foreign.provider import ForeignProvider

__all__ = ["ForeignConfig", "ForeignProvider", "looks_like_provider", "protocol_problem"]
