"""Pipeline schedules shared by the generators: typed tasks and a registry by name."""
