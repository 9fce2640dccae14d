"""PraisonAI's ``praisonai.integrations.compute.daytona``: this module *becomes*
:mod:`praisonai.compute.providers.daytona` (one module object in ``sys.modules``, not a copy), so a
name patched through either path is patched for both."""

import sys

from praisonai.compute.providers import daytona as _provider

sys.modules[__name__] = _provider
