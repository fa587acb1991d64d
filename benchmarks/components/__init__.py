"""The benchmarks' components: multilang programs run by the host (not imported by it)."""
