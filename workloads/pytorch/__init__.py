"""PyTorch execution traces (host, optionally with Kineto) to Chakra ETs, collectives included.

``host_trace`` reads the host trace and its process groups, ``collectives`` maps what PyTorch
recorded of each collective to Chakra communication nodes, ``kineto`` is our host + device
linker, ``graph`` builds a rank's nodes and edges, ``mlc`` wraps mlc-chakra where it runs, and
``convert`` chooses the path and converts every rank.
"""
