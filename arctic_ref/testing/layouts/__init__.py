"""Layout conformance: the layout matrix over gloo or NCCL, exchanges, volumes, cross-mode schedules."""
