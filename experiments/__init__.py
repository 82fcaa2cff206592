"""Experiments: research scripts that measure what the project claims (accuracy comparisons, the
interval calibration, training baselines, pre-registered reports), each with its plan and results
under experiments/results/ or docs/results/. Timings live in benchmarks/, not here."""
