"""The int8 precision (weight-only, `llm.int8`): one row of the precision table (IR
`i8`), built once by SmolLM2, refused in one line by providers without it; knob 0
never builds it."""

from __future__ import annotations

import pytest
import torch
from xdsl.dialects.builtin import i8

from approx_dialect.diagnostics import ApproxError
from approx_dialect.precision import attr_of, backend_of, is_precision
from examples import squad
from examples.systems import common
from frontends.components.llm.int8 import Int8Linear
from frontends.components.settings import GenerateSettings


def test_int8_is_a_row_of_the_precision_table():
    assert attr_of("int8") == i8 and backend_of(i8) == "int8" and is_precision(i8)
    assert not is_precision(i8.__class__(16))  # i16 is no precision


def test_the_int8_variant_quantises_the_weights_once_and_answers():
    llm = common.smollm()
    assert llm.variant_for(GenerateSettings()) is llm  # knob 0: the float32 model itself
    q8 = llm.variant_for(GenerateSettings(precision="int8"))
    assert q8 is llm.with_precision("int8") and q8.name == "smollm2[int8]"
    linears = [m for m in q8.model.modules() if isinstance(m, Int8Linear)]
    assert len(linears) >= 7 * llm.depth and all(m.weight.dtype == torch.int8 for m in linears)
    assert not any(isinstance(m, Int8Linear) for m in llm.model.modules())  # the root is untouched
    passages = list(squad.paragraphs()[:3])
    answer = q8.answer("Which NFL team represented the AFC at Super Bowl 50?", passages, 8)
    assert isinstance(answer.text, str) and answer.text.strip()


def test_a_provider_without_int8_refuses_it_in_one_line():
    from tests.test_llm_support import causal

    model = causal(0)  # a transformers causal LM: no weight-only int8 (SmolLM2's and the readers')
    with pytest.raises(ApproxError, match="has no int8 variant") as err:
        model.with_precision("int8")
    assert "\n" not in str(err.value)
