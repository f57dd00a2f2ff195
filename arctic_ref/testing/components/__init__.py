"""One module of named checks per component: ``suffix_tree``, ``suffix_cache``, ``sampler``, ``drafter``,
``exchange`` and ``model``. ``arctic_ref.testing.front_door`` imports each when it is asked for."""
