"""The suffix-tree component (docs/suffix-decoding.md §9): its checks, the naive oracle, the tree state
machine, the seeded differential runs, the worked examples and the bad-input table."""
