"""`python -m gpudissect` runs the command line."""

from gpudissect.cli import main

main()
