# aml-shim's warm standby (docs/control-plane.md, "Warm restarts"). With
# --warm-restart aml-shim starts, beside each running rank, the rank's own
# interpreter with the rank's own flags on this file instead of the script,
# in the environment the next attempt's rank would have, in the idle
# scheduling class (aml-shim brings it back before its order). It imports the
# modules named in AML_SHIM_STANDBY_MODULES (--preload), then those in the
# file AML_SHIM_STANDBY_LEARNED (what the rank had imported by the time its
# process group was up: aml-shim's agent writes it), at once when it is
# there, else as soon as it is while it waits on the descriptor
# AML_SHIM_STANDBY_FD for its order: at a restart aml-shim writes
# the attempt's working directory, the script (or -m module), sys.argv and
# the attempt's whole environment, and closes it; the standby takes them and
# runs the script as the interpreter would have (or the -m module). The
# descriptor closed with nothing written (the job ended, or no restart came):
# it exits 0 at once, having run nothing.
import os
import sys


def _aml_standby_learned():
    # What the rank imported (its agent wrote it: one name a line, in the
    # order of their import); None while it is not there.
    learned = os.environ.get("AML_SHIM_STANDBY_LEARNED")
    if not learned:
        return []
    try:
        fd = os.open(learned, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            return f.read(1 << 22).decode("utf-8", "replace").splitlines()
    except OSError:
        return []


def _aml_standby_import(names):
    import importlib
    for name in names:
        if not name or name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: B036 (the script meets it again, as it would cold)
            pass


def _aml_standby_order(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    fields = b"".join(chunks).split(b"\0")
    if len(fields) < 6 or fields[0] != b"aml-standby-1":
        os._exit(0)
    cwd, kind, target = (os.fsdecode(f) for f in fields[1:4])
    argc = int(fields[4])
    argv = [os.fsdecode(f) for f in fields[5:5 + argc]]
    envc = int(fields[5 + argc])
    env = [f.partition(b"=") for f in fields[6 + argc:6 + argc + envc]]
    return cwd, kind, target, argv, env


def _aml_standby_wait(fd):
    # --preload's modules, the rank's own when they are known, then the
    # order; the rank's own as soon as they are, while it waits.
    import select
    _aml_standby_import(os.environ.get("AML_SHIM_STANDBY_MODULES", "").split(","))
    learned = _aml_standby_learned()
    if learned is not None:
        _aml_standby_import(learned)
    while learned is None and not select.select([fd], [], [], 1.0)[0]:
        learned = _aml_standby_learned()
        if learned is not None:
            _aml_standby_import(learned)


def _aml_standby_run():
    fd = int(os.environ["AML_SHIM_STANDBY_FD"])
    _aml_standby_wait(fd)
    cwd, kind, target, argv, env = _aml_standby_order(fd)
    os.environ.clear()
    for k, _, v in env:
        os.environb[k] = v
    os.chdir(cwd)
    sys.argv[:] = argv
    # aml-shim's flight-recorder agent (its sitecustomize) waited for the
    # rank's own variables.
    arm = getattr(sys, "_aml_flight_arm", None)
    if arm is not None:
        del sys._aml_flight_arm
        arm()
    import runpy
    here = os.path.abspath(__file__)
    try:
        if kind == "module":
            sys.path[0] = os.getcwd()
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.realpath(target))
            runpy.run_path(target, run_name="__main__")
    except SystemExit:
        raise
    except BaseException as e:
        # As the interpreter reports an uncaught exception, without this
        # file's and runpy's frames: the script's own traceback, exit 1.
        tb = e.__traceback__
        ours = (here, getattr(runpy, "__file__", None), "<frozen runpy>")
        while tb is not None and tb.tb_frame.f_code.co_filename in ours:
            tb = tb.tb_next
        if isinstance(e, KeyboardInterrupt):
            raise
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        sys.exit(1)


if __name__ == "__main__":
    _aml_standby_run()
