"""The README's library examples run as written."""

import re
from pathlib import Path

import jax

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()


def test_readme_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert len(blocks) >= 2
    namespace = {"jax": jax}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102
