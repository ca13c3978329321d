"""Static memory planning: what each round holds on the device, known before anything runs.

* :mod:`.budget` -- the device budget (a process constant) and the facts diagnostics report;
* :mod:`.executor` -- the prover's schedule run abstractly (compile + ``memory_analysis``) or
  for real (the same executables, device failures made loud);
* :mod:`.pool` -- the GPU allocator's pool simulated (chunks handed out whole), which the
  planner adds to each round's device set;
* :mod:`.plan` -- :func:`plan`, the :class:`Plan` (per table, per round, term by term), admission;
* :mod:`.cost` -- the estimated extra work of a plan's ways of fitting (chunks, parked,
  recomputed, row blocks), by which the planner chooses between them;
* :mod:`.model` -- :func:`model`, the same device sets in closed form (held buffers, arguments
  and outputs exact; XLA's temporaries fitted per backend), for sweeps that compile nothing.
"""

from jaxstark.memory.budget import Budget, device_budget
from jaxstark.memory.executor import RoundMemory, clear_caches, dispatch_count
from jaxstark.memory.model import TableModel, model
from jaxstark.memory.plan import Plan, TablePlan, plan

__all__ = [
    "plan", "Plan", "TablePlan", "RoundMemory", "Budget", "device_budget", "dispatch_count", "model", "TableModel",
    "clear_caches",
]  # fmt: skip
