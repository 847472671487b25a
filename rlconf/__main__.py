import sys

from rlconf.cli import main

sys.exit(main())
