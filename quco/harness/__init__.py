"""The harness: the firmware's pick (the unit through host.device, or the reference model) judged
by the performance model. evaluate.py runs the paper's cases, ablations and portability on the
model with the firmware's configurations; sweep.py varies GST fields and compares QuCo's pick
with the model's best. It sits above both sides of the stack, the device library (host/,
emulator/, firmware/) and the model (perfmodel/), which do not import each other."""
