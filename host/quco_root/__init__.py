"""QuCo: queue-configurator firmware, emulator, GST tools, host shim and reference model."""
