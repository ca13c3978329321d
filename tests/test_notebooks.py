"""The notebooks: each ``.ipynb`` is the twin of its jupytext ``.py`` (the readable diff), and each
executes without error on the CPU in a fresh kernel, writing its plots to files."""

from pathlib import Path

import jupytext
import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
PLOTS = {
    "memory_shapes": ["memory_vs_rows", "memory_vs_width", "chunking_frontier", "model_vs_xla_gpu",
                      "model_vs_plan_live"],
    "prove_and_inspect": ["proof_size", "round_times"],
}  # fmt: skip


def test_every_notebook_is_listed():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(PLOTS)
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.py")) == sorted(PLOTS)


@pytest.mark.parametrize("name", sorted(PLOTS))
def test_the_notebook_is_the_twin_of_its_text(name):
    text = jupytext.read(NOTEBOOKS / f"{name}.py")
    book = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert [(c.cell_type, c.source) for c in text.cells] == [(c.cell_type, c.source) for c in book.cells], (
        f"notebooks/{name}.ipynb and .py differ: run `jupytext --sync notebooks/{name}.py`"
    )
    assert all(not c.get("outputs") for c in book.cells if c.cell_type == "code"), "commit notebooks without outputs"


@pytest.mark.parametrize("name", sorted(PLOTS))
def test_the_notebook_executes_and_renders_its_plots(name, tmp_path, monkeypatch):
    monkeypatch.setenv("JAXSTARK_NOTEBOOK_OUT", str(tmp_path))  # the kernel inherits the environment
    book = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    NotebookClient(book, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    errors = [o for c in book.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    for plot in PLOTS[name]:
        png = tmp_path / f"{plot}.png"
        assert png.exists(), plot
        head = png.read_bytes()[:8]
        assert head == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000, plot
