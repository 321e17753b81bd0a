"""`python -m copygen` runs the copygen command line.  May import copygen.cli."""
from copygen.cli import main

main()
