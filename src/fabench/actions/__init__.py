"""What each command does, one module per command of fabench.commands.

fabench.commands only declares arguments and names the function here that does the work
(``func="fabench.actions.bench:main"``); the CLI imports that module when the command runs,
so building the parser (every ``--help``, every usage error) loads none of the measurement,
statistics or model code behind it."""
