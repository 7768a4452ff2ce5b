"""``python -m tidelake.cli``."""

from . import main

main(prog_name="tidelake")
