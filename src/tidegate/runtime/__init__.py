"""The running pipeline graph: compilation, per-worker caches, destinations, back-pressure, simulation."""
