"""arctic_ref: a typed Python reference implementation and test harness for Snowflake Arctic
Inference's extensions to vLLM's GPU model runner.

Import order (nothing imports inside a function): ``suffix`` → ``testing`` → ``cli``.
"""

from arctic_ref.suffix import Draft, SuffixDecodingCache, SuffixDecodingDraft, SuffixInputError, SuffixTree

__all__ = ["Draft", "SuffixDecodingCache", "SuffixDecodingDraft", "SuffixInputError", "SuffixTree"]
__version__ = "0.1.0"
