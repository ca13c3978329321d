"""Static device-memory planning (device sets per round, budget, admission). Not built yet; see
the "Memory model" section of DESIGN.md for what will live here."""
