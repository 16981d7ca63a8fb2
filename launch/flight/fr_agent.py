# aml-shim's flight-recorder agent (docs/control-plane.md, "Naming the
# culprit"). aml-shim writes this file as `sitecustomize` into its private
# directory and puts that directory first on its ranks' PYTHONPATH, as
# opentelemetry-instrument and ddtrace-run hook Python: no change to the
# script. It runs the user's own sitecustomize (the next one on sys.path),
# and, once torch.distributed is imported, one daemon thread that waits for
# the process group; when torch itself serves no dump pipe (Gloo ranks;
# torch before 2.5), the thread makes the pipe torch would have,
# <TORCH_NCCL_DEBUG_INFO_PIPE_FILE><rank>.pipe, and on each byte written
# there writes the flight recorder's dump to <TORCH_FR_DUMP_TEMP_FILE><rank>
# (a look's, asked for with no stack traces: to <...><rank>.light)
# (whole: a temporary file renamed; the first time stack traces are asked
# for, the record without them first, under a mark <dump>.more that stays
# until the one with them is in place: symbolizing them the first time can
# take seconds), with Gloo's pg_config mended so that
# torchfrtrace loads it; it writes the record to <...><rank>.exit as an
# exception ends the rank (its peer's death ends a Gloo collective at once). It never prints, never raises into the rank and
# never blocks it; a torch with no flight recorder gets a one-line
# <prefix><rank>.why instead, which aml-shim's verdict quotes. With
# --warm-restart it is there too (with or without the recorder), and
# writes, once the process group is up, which installed modules the rank
# imported (_aml_learn_modules): what the next attempt's standby imports.
import sys


def _aml_flight_why(prefix, rank, text):
    import os
    try:
        tmp = "%s%d.why.tmp" % (prefix, rank)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, text.encode("utf-8", "replace")[:300])
        finally:
            os.close(fd)
        os.rename(tmp, "%s%d.why" % (prefix, rank))
    except Exception:
        pass


def _aml_flight_mend(blob):
    # Gloo's dump (torch 2.14) keys the default group '' in pg_config while
    # its entries and pg_status name it: the one unnamed config is that group.
    import pickle
    d = pickle.loads(blob)
    cfg = d.get("pg_config") if isinstance(d, dict) else None
    if not isinstance(cfg, dict) or "" not in cfg:
        return blob
    names = {}
    for name in (d.get("pg_status") or {}):
        if name not in cfg:
            names.setdefault(name, "")
    for e in d.get("entries") or ():
        pg = e.get("process_group") if isinstance(e, dict) else None
        if isinstance(pg, tuple) and pg and pg[0] not in cfg:
            names[pg[0]] = pg[1] if len(pg) > 1 and pg[1] else names.get(pg[0], "")
    if len(names) != 1:
        return blob
    (name, desc), = names.items()
    c = dict(cfg.pop(""))
    c["name"] = name
    c["desc"] = c.get("desc") or desc
    cfg[name] = c
    return pickle.dumps(d, protocol=2)


def _aml_group_up():
    # Waits until the process group is up (a dict lookup per nap, the naps
    # doubling to 1 s); torch.distributed then.
    import time
    nap = 0.05
    while True:
        time.sleep(nap)
        nap = min(nap * 2, 1.0)
        dist = sys.modules.get("torch.distributed")
        try:
            # (While torch.distributed is still being imported, what it
            # defines may not be there yet: looked at again.)
            if dist is not None and dist.is_available() and dist.is_initialized():
                return dist
        except Exception:
            pass


def _aml_flight_run():
    import os
    import time
    stem = os.environ.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE")
    prefix = os.environ.get("TORCH_FR_DUMP_TEMP_FILE") or os.environ.get(
        "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")
    if not stem or not prefix:
        return
    # Until the group is up, what aml-shim's verdict says of this rank (it
    # has no pipe to ask): it is starting, not missing an agent. (The same
    # words as fr_env.h's kStillStartingWhy: aml-shim counts a rank that has
    # no pipe and says nothing else as starting.)
    starting = os.environ.get("RANK", "")
    if starting.isdigit():
        _aml_flight_why(prefix, int(starting), "still starting: no process group yet")
    dist = _aml_group_up()
    rank = dist.get_rank()
    if starting.isdigit():
        try:
            os.unlink("%s%s.why" % (prefix, starting))
        except OSError:
            pass
    pipe = "%s%d.pipe" % (stem, rank)
    torch = sys.modules.get("torch")
    version = getattr(torch, "__version__", "?")
    try:
        import torch._C._distributed_c10d as c10d
    except Exception:
        c10d = None
    try:
        backend = str(dist.get_backend())
    except Exception:
        backend = ""
    nccl = "nccl" in backend
    dump = getattr(c10d, "_dump_nccl_trace", None) if nccl else None
    dump = dump or getattr(c10d, "_dump_fr_trace", None)
    if dump is None:
        _aml_flight_why(prefix, rank, "torch %s has no flight recorder" % version)
        return
    # torch's own reader (a NCCL default group, torch 2.5 on) makes the pipe
    # as its group starts: it serves it, not us. One nap: while the rank
    # waits in a collective, each wake-up of this thread may wait seconds
    # for the GIL.
    if nccl:
        time.sleep(2)
    if os.path.exists(pipe):
        return
    try:
        os.mkfifo(pipe, 0o600)
    except OSError:
        return  # someone else's pipe now
    try:
        fd = os.open(pipe, os.O_RDWR)  # a reader and a writer: read() waits, never EOF
    except OSError:
        return
    import threading
    lock = threading.Lock()  # one dump at a time: this thread's, or the exception's
    symbolized = [False]  # a dump with stack traces was written (they cost little since)
    _aml_flight_at_exception(dump, prefix, rank, version, lock, symbolized)
    while True:
        try:
            asked = os.read(fd, 64)
            if not asked:
                time.sleep(1)
                continue
        except OSError:
            return
        # b"p" alone: a look (progress, the straggler check) that needs no
        # stack traces; anything else (a hang, a failure) has them.
        stacks = asked.strip(b"p") != b""
        with lock:
            if stacks and not symbolized[0]:
                _aml_flight_first(dump, prefix, rank, version)
                symbolized[0] = True
            else:
                _aml_flight_write(dump, prefix, rank, version, stacks,
                                  suffix="" if stacks else ".light")


def _aml_flight_first(dump, prefix, rank, version):
    # The first dump with stack traces symbolizes them (torch 2.14 imports
    # torch._inductor then: seconds on a busy node). The record without them
    # first, under a mark that stays until the one with them is in place:
    # aml-shim takes the first when the second does not come in time.
    import os
    mark = "%s%d.more" % (prefix, rank)
    try:
        os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600))
    except OSError:
        return _aml_flight_write(dump, prefix, rank, version)
    try:
        _aml_flight_write(dump, prefix, rank, version, False)
        _aml_flight_write(dump, prefix, rank, version)
    finally:
        try:
            os.unlink(mark)
        except OSError:
            pass


def _aml_flight_write(dump, prefix, rank, version, stacks=True, suffix=""):
    # The record, whole: a temporary file renamed. The temporary file is
    # this writer's own (process and thread): a second writer of the same
    # rank's record (test_culprit in a CI run: rank 7's rename found its
    # "fr-...-rank-7.tmp" gone, and its stack traces were lost) renames its
    # own, whole; the last rename wins. A look's record (no stack traces)
    # goes to <dump>.light, never to the dump: a hang's ask, which needs
    # them, must not take a look's record written late (fr_env.h).
    import os
    import threading
    try:
        blob = _aml_flight_mend(dump(True, stacks, False))
        tmp = "%s%d.%d.%d.tmp" % (prefix, rank, os.getpid(), threading.get_ident())
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC |
                      getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            view = memoryview(blob)
            while view:
                view = view[os.write(out, view):]
        finally:
            os.close(out)
        os.rename(tmp, "%s%d%s" % (prefix, rank, suffix))
    except Exception as e:
        _aml_flight_why(prefix, rank, "torch %s could not dump its flight recorder: %s: %s"
                        % (version, type(e).__name__, str(e)[:200]))


def _aml_flight_at_exception(dump, prefix, rank, version, lock, symbolized):
    # A Gloo rank whose peer died raises from its collective at once and
    # exits before anyone can ask it: as the exception ends it, its record
    # is written (to <dump>.exit, which aml-shim takes whenever it was
    # written: the rank may end before it is asked), so that aml-shim can
    # say where it waited. Then the hook
    # that was there runs, as it would have. A dump of the agent's thread
    # under way (asked for as the failure began) finishes first: the rank
    # ends after this hook, and a thread cut off in its first dump left its
    # mark (<dump>.more) standing, so that aml-shim took the record for one
    # still to come and said the rank had none (test_culprit.py in CI).
    # Waited for 5 s at most: the rank's end is never held long. The record
    # has stack traces only when a dump with them was written before (they
    # cost little since): the first symbolizes them (torch 2.14 imports
    # torch._inductor, seconds on a busy node), and the exception's record
    # is wanted for where the rank waited, its traceback printed anyway.
    # (Written with them, under this lock, the 8 ranks of a failed job on 2
    # busy cores in CI held the thread's quick record back: one rank's
    # record came after --dump-timeout, and the verdict said it had none.)
    before = sys.excepthook

    def hook(kind, value, tb):
        try:
            import os
            held = lock.acquire(timeout=5)
            try:
                _aml_flight_write(dump, prefix, rank, version, symbolized[0], ".exit")
                try:
                    os.unlink("%s%d.more" % (prefix, rank))
                except OSError:
                    pass
            finally:
                if held:
                    lock.release()
        except BaseException:
            pass
        before(kind, value, tb)

    sys.excepthook = hook


def _aml_flight_legacy():
    # torch before 2.9 reads the recorder's older names: set from the new
    # ones aml-shim set, before any process group reads them (torch 2.9 on
    # warns of the old names, so aml-shim sets only the new).
    import os
    torch = sys.modules.get("torch")
    version = getattr(sys.modules.get("torch.version"), "__version__", None) or getattr(
        torch, "__version__", None)
    if not version:
        return
    try:
        major, minor = (int(x) for x in str(version).split(".")[:2])
    except ValueError:
        return
    if (major, minor) >= (2, 9):
        return
    for new, old in (("TORCH_FR_BUFFER_SIZE", "TORCH_NCCL_TRACE_BUFFER_SIZE"),
                     ("TORCH_FR_DUMP_TEMP_FILE", "TORCH_NCCL_DEBUG_INFO_TEMP_FILE")):
        if new in os.environ and old not in os.environ:
            os.environ[old] = os.environ[new]


class _AmlFlightWatch(object):
    """Starts the thread as torch.distributed is first imported; answers no
    import itself."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch.distributed":
            try:
                sys.meta_path.remove(self)
            except ValueError:
                pass
            try:
                _aml_flight_legacy()
            except Exception:
                pass
            import os
            import threading
            if os.environ.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE"):
                t = threading.Thread(target=_aml_flight_quiet, name="aml-shim-flight-recorder")
                t.daemon = True
                t.start()
            if os.environ.get("AML_SHIM_LEARN_MODULES"):
                t = threading.Thread(target=_aml_learn_quiet, name="aml-shim-warm-restart")
                t.daemon = True
                t.start()
        return None


def _aml_flight_quiet():
    try:
        _aml_flight_run()
    except BaseException:
        pass


def _aml_learn_quiet():
    try:
        _aml_learn_modules()
    except BaseException:
        pass


def _aml_learn_modules():
    # --warm-restart (docs/control-plane.md, "Warm restarts"): once the
    # rank's process group is up (its first collective follows), the
    # installed modules it has imported, in the order of their import, go
    # to <AML_SHIM_LEARN_MODULES><RANK>; the next attempt's standby for this
    # rank imports them. Only modules from the interpreter's own library and
    # site directories: never the user's code (the script's directory,
    # PYTHONPATH), which the script imports itself, where it expects to.
    import os
    prefix = os.environ["AML_SHIM_LEARN_MODULES"]
    rank = os.environ.get("RANK", "")
    if not rank.isdigit():
        return
    dist = _aml_group_up()
    if dist.get_rank() != int(rank):
        return  # not the rank aml-shim started (a process it spawned)
    import site
    import sysconfig
    roots = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            roots.add(p)
    try:
        roots.update(site.getsitepackages())
        roots.add(site.getusersitepackages())
    except Exception:
        pass
    roots = tuple(os.path.join(os.path.realpath(r), "") for r in roots if r)
    names = []
    for name, mod in list(sys.modules.items()):
        if mod is None or name in ("__main__", "__mp_main__", "sitecustomize",
                                   "usercustomize") or name.startswith("_aml"):
            continue
        f = getattr(mod, "__file__", None)
        if not isinstance(f, str) or not os.path.realpath(f).startswith(roots):
            continue
        names.append(name)
    tmp = "%s%s.%d.tmp" % (prefix, rank, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.write(fd, ("\n".join(names) + "\n").encode("utf-8", "replace"))
    finally:
        os.close(fd)
    os.rename(tmp, prefix + rank)


def _aml_flight_chain():
    # The user's own sitecustomize, as if this one were not here; what it
    # raises goes on to Python's site module, as it would have.
    import importlib.machinery
    import importlib.util
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)


def _aml_flight_arm():
    try:
        if "torch.distributed" in sys.modules:
            _AmlFlightWatch().find_spec("torch.distributed")
        else:
            sys.meta_path.insert(0, _AmlFlightWatch())
    except Exception:
        pass


# A --warm-restart standby (launch/warm_standby.py) is no rank yet: its
# variables are an earlier attempt's. It arms the agent once it has the
# rank's own.
if "AML_SHIM_STANDBY_FD" in __import__("os").environ:
    sys._aml_flight_arm = _aml_flight_arm
else:
    _aml_flight_arm()
_aml_flight_chain()
