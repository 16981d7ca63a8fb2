#!/usr/bin/env python3
"""torchrun as Debian ships it (torch 1.13), with one fix so it starts on
Python 3.11: Python 3.11 no longer yields zero-valued IntFlag members when
iterating, so torch 1.13's Std.from_str("0") (the default for --redirects
and --tee) returns None and torchrun crashes before launching anything.
Everything else is torchrun unchanged."""
import sys

from torch.distributed.elastic.multiprocessing import api

_orig = api.Std.from_str


def _from_str(vm):
    value = _orig(vm)
    return api.Std.NONE if value is None else value


api.Std.from_str = staticmethod(_from_str)

from torch.distributed.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
