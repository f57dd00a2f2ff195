"""The suffix-cache component (docs/suffix-decoding.md §9): its checks, the cache state machine, the
code-edit replays, the worked examples and the bad-input table."""
