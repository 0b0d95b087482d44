"""``python -m gear_agent.cli``: the ``gear`` command without the console script."""

from gear_agent.cli import main

main()
