"""The sampler kit's check ids, each spelled once. The code that runs a check records its verdict
under one of these names and the table (``table.py``) gives each one its row; the table refuses to
import when a name here has no row or a row's id is not one of these."""

from typing import Final

E1: Final = "E1"
E2: Final = "E2"
E3: Final = "E3"
E4: Final = "E4"
E5: Final = "E5"
E6: Final = "E6"
E7: Final = "E7"
E8: Final = "E8"
E9: Final = "E9"
E10: Final = "E10"
E11: Final = "E11"
E12: Final = "E12"
E13: Final = "E13"
E14: Final = "E14"
E15_SPEC_LEN: Final = "E15-SPEC-LEN"
E15_SHAPES: Final = "E15-SHAPES"
E15_FLAGS: Final = "E15-FLAGS"
E15_NAN: Final = "E15-NAN"
E16: Final = "E16"
E17: Final = "E17"
E18: Final = "E18"
E20: Final = "E20"
RNG_ORDER: Final = "RNG-ORDER"
S1: Final = "S1"
S2: Final = "S2"
S3: Final = "S3"
S4: Final = "S4"
S5: Final = "S5"
S5_SPEED: Final = "S5-SPEED"
S_DESIGN: Final = "S-DESIGN"


def declared_ids() -> tuple[str, ...]:
    """Every id above, in the order written."""
    return tuple(value for name, value in globals().items() if name.isupper() and isinstance(value, str))
