"""The attack of issue 30, item 6, run in a network namespace of its own
(`unshare -n`, so that only this job's traffic is on its loopback): two
shims with a job secret join the control plane; a sniffer on loopback
(AF_PACKET, as tcpdump would on the job's network) records rank 1's hello to
its parent's port; the stranger then connects to that port, sends the hello
it saw, and a forged "lost" message. Prints one JSON object: whether the
shims still ran 3 s later, their exit codes and stderr.
Usage: replay_attack.py SHIM [secret|none] (none: no job secret; with munged
running, MUNGE credentials are the proof)."""
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

SHIM = sys.argv[1]
SECRET = len(sys.argv) < 3 or sys.argv[2] == "secret"
subprocess.run(["ip", "link", "set", "lo", "up"], check=True)

flows = {}  # (src port, dst port) -> payload bytes, in order
stop = threading.Event()


def sniff():
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(3))
    s.bind(("lo", 0))
    s.settimeout(0.2)
    while not stop.is_set():
        try:
            frame, addr = s.recvfrom(65535)
        except socket.timeout:
            continue
        if addr[2] == socket.PACKET_OUTGOING:  # each loopback packet is seen twice
            continue
        ip = frame[14:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        tcp = ip[(ip[0] & 15) * 4:]
        sport, dport = struct.unpack("!HH", tcp[:4])
        payload = tcp[(tcp[12] >> 4) * 4:]
        if payload:
            flows[(sport, dport)] = flows.get((sport, dport), b"") + payload


def up_to_hello(data):
    """The frames of a flow up to and including its hello (a greeting may
    come first), as they were on the wire; None before a whole hello."""
    at = 0
    while len(data) >= at + 4:
        n = struct.unpack("!I", data[at:at + 4])[0]
        if len(data) < at + 4 + n:
            return None
        at += 4 + n
        if b'"t":"hello"' in data[at - n:at]:
            return data[:at]
    return None


sniffer = threading.Thread(target=sniff)
sniffer.start()
time.sleep(0.3)
env = {k: v for k, v in os.environ.items()
       if not k.startswith(("OMPI_", "PMIX_", "SLURM_", "RANK", "WORLD_SIZE", "MASTER_"))}
procs = []
for rank in range(2):
    procs.append(subprocess.Popen(
        [SHIM, "-v", "--fail-fast", "job", "--", "sleep", "60"],
        env=dict(env, RANK=str(rank), WORLD_SIZE="2", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1",
                 NODE_RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT="29555",
                 **({"AML_SHIM_JOB_SECRET": "0123456789abcdef0123456789abcdef"} if SECRET
                    else {})),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
seen = None
deadline = time.monotonic() + 30
while seen is None and time.monotonic() < deadline:
    time.sleep(0.1)
    for (sport, dport), data in list(flows.items()):
        # Rank 1's hello to its parent, with what it sent before it.
        frame = up_to_hello(data)
        if frame:
            seen = (dport, frame)
report = {"seen": seen is not None}
if seen:
    dport, frame = seen
    time.sleep(0.5)  # the real rank 1 is connected
    stranger = socket.create_connection(("127.0.0.1", dport), timeout=5)
    forged = b'{"t":"lost","what":"FORGED by a stranger"}'
    stranger.sendall(frame + struct.pack("!I", len(forged)) + forged)
    time.sleep(3)
    report["running_after"] = [p.poll() is None for p in procs]
    stranger.close()
for p in procs:
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
report["codes"] = []
report["stderr"] = []
for p in procs:
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    report["codes"].append(p.returncode)
    report["stderr"].append(err)
stop.set()
sniffer.join()
print(json.dumps(report))
