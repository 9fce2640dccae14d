"""PraisonAI's import paths under our name (``praisonai.integrations.compute``), so code written
for PraisonAI imports its compute providers unchanged. Nothing here is a second implementation:
each name is the provider defined in :mod:`praisonai.compute.providers`."""
