"""PraisonAI's ``praisonai.integrations.compute.docker``: this module *becomes*
:mod:`praisonai.compute.providers.docker` (one module object in ``sys.modules``, not a copy), so a
name patched through either path is patched for both."""

import sys

from praisonai.compute.providers import docker as _provider

sys.modules[__name__] = _provider
