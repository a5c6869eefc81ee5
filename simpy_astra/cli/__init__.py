"""The command line, one module per command: ``main`` dispatches, ``run`` simulates a
scenario or the reference's flags, ``sweep``/``generate``/``convert``/``calibrate``/``validate``
are the other subcommands."""
