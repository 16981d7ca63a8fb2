# aml-shim's store host (docs/control-plane.md, "Warm restarts"). With
# --warm-restart, the shim of the node that runs rank 0 starts the job's own
# interpreter on this file once, in the idle scheduling class; it imports
# torch.distributed, says "ready" on the socket AML_SHIM_STORE_FD, and waits.
# Before each restart aml-shim brings it back to the normal class and writes
# "host ADDR PORT WORLD_SIZE": it opens a TCPStore server on PORT (the next
# attempt's MASTER_PORT; the last attempt's store is closed) and answers
# "ok PORT" or "error WHY". The attempt's ranks then all start as clients of
# it (TORCHELASTIC_USE_AGENT_STORE=True, as torchrun's agent store): none
# reaches the port before the store listens. The first time it also makes a
# client as torch's rendezvous would (a torch 2.x built without libuv cannot:
# an error, and rank 0 hosts each store). The socket closed: it exits 0.
import os


def _aml_store_host():
    fd = int(os.environ["AML_SHIM_STORE_FD"])
    try:
        import datetime
        from torch.distributed import TCPStore
    except BaseException as e:  # noqa: B036 (said to the shim: rank 0 hosts each store)
        os.write(fd, ("error %s: %s\n" % (type(e).__name__, e)).replace("\n", " ").encode()
                 + b"\n")
        return
    os.write(fd, b"ready\n")
    store = None
    probed = False
    pending = b""
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            words = line.decode("utf-8", "replace").split()
            if len(words) != 4 or words[0] != "host":
                continue
            store = None  # the last attempt's, closed before the next opens
            args = (words[1], int(words[2]), int(words[3]), True, datetime.timedelta(seconds=1800))
            try:
                try:
                    # torch 2.x: libuv or not as its rendezvous reads it.
                    store = TCPStore(*args, wait_for_workers=False,
                                     use_libuv=os.environ.get("USE_LIBUV", "1") == "1")
                except TypeError:  # torch 1.x: no use_libuv
                    store = TCPStore(*args, wait_for_workers=False)
                if not probed:
                    # A client as torch's rendezvous makes one under the
                    # agent store (its defaults): torch 2.x built without
                    # libuv (Debian's) refuses to make it.
                    TCPStore(words[1], int(words[2]), is_master=False,
                             timeout=datetime.timedelta(seconds=30))
                    probed = True
                os.write(fd, ("ok %s\n" % words[2]).encode())
            except BaseException as e:  # noqa: B036
                # Its port closed before it answers: rank 0 may bind it.
                store = None
                why = ("%s: %s" % (type(e).__name__, e)).replace("\n", " ")
                os.write(fd, ("error %s\n" % why).encode())


if __name__ == "__main__":
    _aml_store_host()
