"""The built-in providers, one module or small package each. Each registers under the entry-point
group ``praisonai.compute`` (pyproject.toml) exactly as a third-party provider does; nothing here
imports them, so a vendor SDK loads only when its provider is used."""
