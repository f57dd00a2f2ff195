"""The rejection-sampler conformance kit: exact and statistical checks against any sampler."""
