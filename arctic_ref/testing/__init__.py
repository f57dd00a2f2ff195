"""The kit: checks that point at an implementation (ours or yours) and say whether it conforms.

Needs the ``testing`` extra (Hypothesis and SciPy): ``pip install 'arctic-ref[testing]'``.
"""

try:
    import hypothesis
    import scipy
except ImportError as error:  # the product itself needs neither; the kit needs both
    raise ImportError(
        f"arctic_ref.testing needs the 'testing' extra (missing: {error.name}): pip install 'arctic-ref[testing]'"
    ) from error

del hypothesis, scipy
