"""The family table, one module per family group: each module's FAMILIES maps a family (or a
checkpoint-format variant) to its fixture recipe. make_fixtures.py builds them in this order."""

from fixture_families import (
    classic, deepseek_v4, dense, doge, dots3, frontier, latent, mamba, moe, pergemma, positions, state, variants,
)

FAMILIES = {}
for _group in (dense, moe, state, mamba, latent, frontier, classic, positions, variants, pergemma, dots3, doge, deepseek_v4):
    assert not FAMILIES.keys() & _group.FAMILIES.keys()
    FAMILIES.update(_group.FAMILIES)
