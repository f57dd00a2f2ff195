"""Draft selection: the conformance suite, the seed's bug replays, and the runner-level replay check."""
