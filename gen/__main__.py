"""`python -m gen` runs the copygen command line."""
from gen.cli import main

main()
