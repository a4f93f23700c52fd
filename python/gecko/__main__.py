# SPDX-License-Identifier: Apache-2.0
"""python3 -m gecko list|echo|pub (see gecko/cli.py)."""
import sys

from .cli import main

sys.exit(main())
