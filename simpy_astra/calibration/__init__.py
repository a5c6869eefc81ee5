"""Calibrate a network to a real cluster from NVIDIA nccl-tests logs, and validate it.

``nccl_log`` reads the logs, ``simulator_adapter`` drives the simulator (one adapter function),
``model`` fits the parameters (``system_defaults``, ``network_dims`` and ``geomean_solver``
its parts), ``report`` prints measured against simulated and draws the plot,
``holdout`` keeps the fitted rows and the predicted ones apart, ``algorithms`` picks each
collective's algorithm where several collectives' logs decide it, ``regimes`` finds NCCL's
protocol switch in the logs and fits each side.
The commands are ``simpy_astra/cli/calibrate.py`` and ``simpy_astra/cli/validate.py``.
"""
