"""PraisonAI's ``praisonai.integrations.compute.e2b``: this module *becomes*
:mod:`praisonai.compute.providers.e2b` (one module object in ``sys.modules``, not a copy), so a
name patched through either path is patched for both."""

import sys

from praisonai.compute.providers import e2b as _provider

sys.modules[__name__] = _provider
