"""Proving rounds, one module per round (numbering as in DESIGN.md): trace commit (main, then
aux), composition, out-of-domain evaluation, DEEP + FRI, queries. Each round is a jitted pure
function from PyTree to PyTree, so the memory planner can lower and compile it on abstract
shapes; each is jitted with ``keep_unused=True``, so XLA's argument figure counts every buffer
the round is handed (the planner checks this).
"""
