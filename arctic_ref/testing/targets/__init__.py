"""Checks that point at a user's implementation, named ``MODULE:ATTR``: the registry behind the
pytest plugin (``pytest --arctic-ref-…``) and ``arctic-ref check --impl``."""
