"""Infrastructure every layer uses: the file door, units, the NPU grid, the time horizon,
and stopping on a signal."""
