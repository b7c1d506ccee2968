"""The README's Python programs run as written (on the engine of this test run)."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M) if README.exists() else []


@pytest.mark.skipif(not BLOCKS, reason="no README.md with Python programs beside the tests")
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_program(index):
    code = BLOCKS[index]
    assert "cairn.launch" in code
    exec(compile(code, f"README.md python block {index + 1}", "exec"), {"__name__": "__readme__"})
