"""Custom collectives: algorithms given as files rather than code. ASTRA-sim's per-rank Chakra
ET graphs (``et_graph``) and MSCCL-IR XML (``msccl_xml``, turned into such graphs per size), read
before the run and handed to the system layer as one phase per rank (``files``)."""
