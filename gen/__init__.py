"""copygen code generator: front end, lowering, scheduling, emission, toolchain, CLI."""
__version__ = "0.1.0"
