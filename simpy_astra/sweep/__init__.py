"""Design-space sweeps: expand axes over a base scenario, run the points, keep every result.

``spec`` reads the sweep YAML and expands it into points, ``point`` runs one point (in any
process, local or remote), ``store`` appends results and knows what is already done,
``runner`` runs points on a local process pool or a Dask cluster, ``plots`` and ``summary``
show the outcome.
"""
