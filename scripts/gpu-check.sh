#!/usr/bin/env bash
# The GPU checks as one script, with a short report. On a machine with an
# NVIDIA GPU it uses the real CUDA runtime and NCCL; without one it uses the
# stand-in libraries (build/tests/libfake_*.so, "GPUs" in host memory), so it
# runs everywhere. Exit status: the number of failed checks.
#   scripts/gpu-check.sh            # builds first if build/aml-shim is missing
set -u
cd "$(dirname "$0")/.."
SHIM=${AML_SHIM:-$PWD/build/aml-shim}
PY=${AML_PYTHON:-/usr/bin/python3}
[ -x "$SHIM" ] || scripts/build.sh >/dev/null || exit 1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

fails=0
report() {  # report NAME OK|FAIL DETAIL
  printf '%-44s %-4s %s\n' "$1" "$2" "$3"
  [ "$2" = ok ] || fails=$((fails + 1))
}
elapsed() { "$PY" -c 'import sys,time; print(f"{time.time()-float(sys.argv[1]):.2f} s")' "$1"; }
now() { "$PY" -c 'import time; print(time.time())'; }

if nvidia-smi -L >/dev/null 2>&1 && [ "$(nvidia-smi -L | grep -c '^GPU')" -gt 0 ]; then
  mode=real
  gpus=$(nvidia-smi -L | grep -c '^GPU')
  first_uuid=$(nvidia-smi -L | sed -n '1s/.*(UUID: \(.*\))/\1/p')
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1 | sed 's/^/gpu: /'
else
  mode=stand-in
  gpus=2
  first_uuid=""
  export AML_SHIM_LIBCUDART=${AML_FAKE_CUDART:-$PWD/build/tests/libfake_cudart.so}
  export AML_SHIM_LIBNCCL=${AML_FAKE_NCCL:-$PWD/build/tests/libfake_nccl.so}
  export FAKE_CUDA_DEVICES=$gpus CUDA_VISIBLE_DEVICES=0,1
  [ -f "$AML_SHIM_LIBNCCL" ] || cmake --build build --target fake_cudart fake_nccl >/dev/null
fi
echo "mode: $mode ($gpus GPUs), $("$SHIM" --version)"
one_gpu=${first_uuid:-0}
bytes=256M
[ "$mode" = real ] || bytes=32M  # host-memory stand-ins are slow
one() {  # runs "$@" seeing one GPU
  if [ "$mode" = real ]; then CUDA_VISIBLE_DEVICES=$one_gpu "$@"
  else CUDA_VISIBLE_DEVICES=0 FAKE_CUDA_DEVICES=1 "$@"; fi
}

# 1. The NCCL preflight across every GPU of this machine.
t=$(now)
if "$SHIM" --nproc-per-node gpu --preflight nccl --preflight-bytes $bytes -- true 2>"$out/1"; then
  report "preflight nccl, $bytes, all GPUs" ok "$(elapsed "$t"): $(grep -o 'busbw [0-9.]* GB/s' "$out/1" | head -1)"
else
  report "preflight nccl, $bytes, all GPUs" FAIL "$(tail -1 "$out/1")"
fi

# 2. One GPU has no bus bandwidth: --min-busbw is not judged, and says so.
if one "$SHIM" --preflight nccl --preflight-bytes $bytes --min-busbw 5000 -- true 2>"$out/2" &&
   grep -q -- '--min-busbw not judged' "$out/2"; then
  report "one GPU: --min-busbw says not judged" ok "$(grep -o '[0-9]* GPU,' "$out/2" | head -1)"
else
  report "one GPU: --min-busbw says not judged" FAIL "$(tail -1 "$out/2")"
fi

# 3. Two processes on one GPU are refused before anything runs.
one "$SHIM" --nproc-per-node 2 --preflight nccl -- touch "$out/ran" 2>"$out/3"
rc=$?
if [ "$rc" != 0 ] && [ ! -e "$out/ran" ]; then
  report "two processes per GPU refused" ok "exit $rc"
else
  report "two processes per GPU refused" FAIL "exit $rc: $(tail -1 "$out/3")"
fi

# 4. CUDA_VISIBLE_DEVICES by UUID counts as one GPU.
if [ -n "$first_uuid" ]; then
  n=$(CUDA_VISIBLE_DEVICES=$first_uuid "$SHIM" --nproc-per-node gpu -- sh -c 'echo $LOCAL_RANK' | wc -l)
  [ "$n" = 1 ] && report "CUDA_VISIBLE_DEVICES=GPU-uuid: 1 child" ok "" ||
    report "CUDA_VISIBLE_DEVICES=GPU-uuid: 1 child" FAIL "$n children"
fi

# 5. --numa-bind binds each child (all CPUs where the GPU has no NUMA node).
if "$SHIM" --nproc-per-node gpu --numa-bind -- sh -c 'grep Cpus_allowed_list /proc/self/status' \
     >"$out/5" 2>&1; then
  report "--numa-bind" ok "$(head -1 "$out/5" | tr -s '\t ' ' ')"
else
  report "--numa-bind" FAIL "$(tail -1 "$out/5")"
fi

# 6. The preflight worker dies with its shim (SIGTERM during a long preflight:
#    8 GiB on a GPU; the stand-in NCCL hangs in init instead).
tag=AML_GPU_CHECK=$$
workers() {
  for p in $(pgrep -f -- '__nccl-worker'); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "$tag" && echo "$p"
  done
}
if [ "$mode" = real ]; then
  env "$tag" "$SHIM" --preflight nccl --preflight-bytes 8G -- sleep 100 2>/dev/null &
else
  env "$tag" FAKE_NCCL_HANG_RANK=0 "$SHIM" --preflight nccl --preflight-timeout 600 -- sleep 100 \
    2>/dev/null &
fi
shim=$!
for _ in $(seq 100); do [ -n "$(workers)" ] && break; sleep 0.1; done
started=$(workers | wc -l)
kill -TERM $shim 2>/dev/null
wait $shim 2>/dev/null
for _ in $(seq 50); do [ -z "$(workers)" ] && break; sleep 0.1; done
left=$(workers | wc -l)
if [ "$started" -gt 0 ] && [ "$left" = 0 ]; then
  report "NCCL worker dies with its shim (SIGTERM)" ok ""
else
  report "NCCL worker dies with its shim (SIGTERM)" FAIL "$started started, $left left"
fi

# 7. Start-up: 8 children running `true`.
t=$(now)
"$SHIM" --nproc-per-node 8 -- true && report "start-to-exit, 8 x true" ok "$(elapsed "$t")" ||
  report "start-to-exit, 8 x true" FAIL ""

# 8. DDP over NCCL on every GPU (needs PyTorch with CUDA).
if [ "$mode" = real ] && "$PY" -c 'import torch,sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
  t=$(now)
  if "$SHIM" --nproc-per-node gpu -- "$PY" examples/train_ddp.py --backend nccl --epochs 10 >"$out/8" 2>&1; then
    report "DDP over NCCL, all GPUs" ok "$(elapsed "$t"): $(grep -c 'weights' "$out/8") ranks, $(grep -o 'weights [0-9a-f]*' "$out/8" | sort -u | wc -l) weight digest(s)"
  else
    report "DDP over NCCL, all GPUs" FAIL "$(tail -2 "$out/8" | tr '\n' ' ')"
  fi
else
  echo "DDP over NCCL: skipped (no GPU or no CUDA PyTorch)"
fi
# 9. --spares: a node's NCCL check before another attempt (its GPUs
#    all-reduce once more as its ranks end in a restart round), on one GPU
#    (the unit test, with the real libraries: not judged, and fit).
tests=build/shim/preflight/aml_preflight_tests
if [ "$mode" = real ] && [ -x "$tests" ]; then
  if one env AML_TEST_REAL_GPU=1 "$tests" --gtest_filter=NodeNcclCheck.OnARealGpu >"$out/9" 2>&1 &&
     grep -q '\[  PASSED  \] 1 test' "$out/9"; then
    report "node's NCCL check before a restart" ok "$(grep -o '([0-9]* ms)' "$out/9" | tail -1)"
  else
    report "node's NCCL check before a restart" FAIL "$(grep -m1 -A3 'Failure' "$out/9" | tr '\n' ' ')"
  fi
fi

# 10. A hang's flight record through torch's own NCCL pipe reader: one rank
#     on one GPU runs 5 all-reduces and sleeps; --hang-timeout judges it,
#     the rank's dump is asked for and read (torch's reader answers in
#     5-7 s on an H100), kept in --log-dir, and the verdict says that its
#     last collective completed (docs/control-plane.md, "Naming the culprit").
if [ "$mode" = real ] && "$PY" -c 'import torch,sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
  cat >"$out/hang.py" <<'PY'
import time, torch, torch.distributed as dist
dist.init_process_group("nccl")
t = torch.ones(1 << 20, device="cuda")
for _ in range(5):
    dist.all_reduce(t)
torch.cuda.synchronize()
print("5 all-reduces done", flush=True)
time.sleep(600)
PY
  t=$(now)
  one "$SHIM" --hang-timeout 8s --dump-timeout 20s --log-dir "$out/10" -- "$PY" "$out/hang.py" >"$out/10.out" 2>&1
  code=$?
  verdict=$(grep -m1 -E '^aml-shim: (no )?culprit' "$out/10.out")
  if [ "$code" = 124 ] && [ -s "$out/10/fr-attempt1-rank-0" ] &&
     echo "$verdict" | grep -q "every rank's last collective completed"; then
    report "a hang's NCCL flight record" ok "$(elapsed "$t"): $(wc -c <"$out/10/fr-attempt1-rank-0") bytes"
  else
    report "a hang's NCCL flight record" FAIL "exit $code; ${verdict:-$(tail -3 "$out/10.out" | tr '\n' ' ')}"
  fi
fi

exit $fails
