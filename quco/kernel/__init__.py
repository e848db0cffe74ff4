"""The kernel format (format.py, kernel.schema.json): a kernel launch as kernel.json describes it,
checked with the ABI's rules and packed into the launch record the unit reads. Beside gst/ on the
specification floor: the device library and the performance model both read kernels through it."""
