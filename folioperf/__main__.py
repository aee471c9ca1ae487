import sys

from folioperf.cli import main

sys.exit(main())
