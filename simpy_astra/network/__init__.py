"""Network backends: how long bytes take between two NPUs, and send/receive matching."""
