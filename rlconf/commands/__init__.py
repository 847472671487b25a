"""The ``rlconf`` command's subcommands beside ``run`` (whose steps are ``rlconf.pipeline``): what they print and
which library function each calls. ``rlconf.cli`` parses the arguments and maps errors to exit statuses."""
