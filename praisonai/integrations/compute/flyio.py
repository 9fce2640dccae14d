"""PraisonAI's ``praisonai.integrations.compute.flyio``: this module *becomes*
:mod:`praisonai.compute.providers.flyio` (one module object in ``sys.modules``, not a copy), so a
name patched through either path is patched for both. Our class is ``FlyCompute``; the module
also binds PraisonAI's name for it, ``FlyioCompute``."""

import sys

from praisonai.compute.providers import flyio as _provider

sys.modules[__name__] = _provider
