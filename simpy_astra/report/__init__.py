"""Reports of a finished run: the console summary and progress line (``console``), per-node
CSVs (``csv_tables``), the Perfetto trace and terminal timeline (``timeline``), the opt-in
node and chunk recorder they read (``recorder``) and link-statistics formatting (``links``)."""
