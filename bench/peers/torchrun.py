#!/usr/bin/env python3
"""torchrun as Debian ships it, with the fix each version needs to start:
- torch 1.13 (bookworm) on Python 3.11: Python 3.11 no longer yields
  zero-valued IntFlag members when iterating, so Std.from_str("0") (the
  default for --redirects and --tee) returns None and torchrun crashes
  before launching anything;
- torch 2.x built without libuv (trixie's 2.6): the c10d rendezvous's
  TCPStore asks for libuv regardless of USE_LIBUV; with USE_LIBUV=0 it is
  created without it, as the workers' own stores are.
Everything else is torchrun unchanged."""
import os
import sys

from torch.distributed.elastic.multiprocessing import api

_orig = api.Std.from_str


def _from_str(vm):
    value = _orig(vm)
    return api.Std.NONE if value is None else value


api.Std.from_str = staticmethod(_from_str)

if os.environ.get("USE_LIBUV") == "0":
    import torch.distributed as _dist
    from torch.distributed.elastic.rendezvous import c10d_rendezvous_backend as _c10d

    class _StoreWithoutLibuv(_dist.TCPStore):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    _dist.TCPStore = _c10d.TCPStore = _StoreWithoutLibuv

from torch.distributed.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
