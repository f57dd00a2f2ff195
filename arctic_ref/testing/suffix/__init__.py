"""Suffix decoding: the naive oracle, the Hypothesis strategies, the state machines, the upstream adapters."""
