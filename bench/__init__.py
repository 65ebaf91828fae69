"""`python -m bench`: how fast the toolkit answers, and how fast the clusters it builds are.

Plan time and memory are measured on whole child processes (`bench.probe`, which runs the real
`gpu-cluster plan` entry point), one at a time so timings are fair; the fabric and scratch checks
plan every catalog type in-process (`bench.worker`), a few processes in parallel. See
docs/performance.md for the figures and the command that reproduces them.
"""
