"""PraisonAI's ``praisonai.integrations.compute.modal_compute``: this module *becomes*
:mod:`praisonai.compute.providers.modal` (one module object in ``sys.modules``, not a copy), so a
name patched through either path is patched for both."""

import sys

from praisonai.compute.providers import modal as _provider

sys.modules[__name__] = _provider
