"""`python -m gpudissect` runs the command line (a missing dependency is one line, see entry.py)."""

from gpudissect.entry import main

main()
