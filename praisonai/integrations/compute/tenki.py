"""PraisonAI's ``praisonai.integrations.compute.tenki``: this module *becomes*
:mod:`praisonai.compute.providers.tenki` (one module object in ``sys.modules``, not a copy), so a
name patched through either path is patched for both."""

import sys

from praisonai.compute.providers import tenki as _provider

sys.modules[__name__] = _provider
