"""`python -m copygen` runs the copygen command line."""
from copygen.cli import main

main()
