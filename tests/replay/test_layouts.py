"""The layout modules behind ``make_buffer``: one per name in ``LAYOUTS``, each buffer's
functions are its layout's, and ``capacity_of`` reads the capacity back from every layout's
state (shapes only: ``jax.eval_shape``, nothing is allocated or compiled)."""

from __future__ import annotations

import jax
import pytest

from jaxrl_pim.replay import LAYOUTS, capacity_of, make_buffer
from jaxrl_pim.replay.layouts import MODULES


def test_one_layout_module_per_layout_name():
    assert tuple(MODULES) == LAYOUTS


@pytest.mark.parametrize("layout", LAYOUTS)
def test_buffer_functions_are_the_layouts_and_capacity_reads_back(layout):
    buffer = make_buffer(layout, 7, 3, 4, 2)
    for name in ("init", "add", "gather"):
        assert getattr(buffer, name).func is getattr(MODULES[layout], name)
    state = jax.eval_shape(buffer.init)
    assert capacity_of(state, layout) == 7
    with pytest.raises(ValueError, match="layout"):
        capacity_of(state, "bogus")
