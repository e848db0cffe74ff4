"""QuCo: the queue configurator's firmware, the emulated SoC that runs it, the host library, the
performance model and the paper's claims. Each subfolder is a package; docs/README.md maps them."""
