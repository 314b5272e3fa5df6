"""``python -m posenc.experiments train|evaluate|all|compare`` (:mod:`posenc.experiments.cli`)."""

import sys

from posenc.experiments.cli import main

sys.exit(main())
