#!/bin/bash
# Builds bench/cupti/libkernel_trace.so on a machine with CUPTI (the GPU machine: the CUDA toolkit's extras, or
# the nvidia-cuda-cupti wheel). Usage: bench/cupti/build.sh OUT_DIR; prints the library's path.
set -eu
out=${1:?usage: build.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
inc=""
for d in /usr/local/cuda/extras/CUPTI/include /usr/local/cuda/include \
         $(python3 -c 'import nvidia, os; [print(os.path.join(p, s)) for p in nvidia.__path__ for s in ("cuda_cupti/include", "cu13/include")]' 2>/dev/null); do
  [ -f "$d/cupti.h" ] && { inc=$d; break; }
done
[ -n "$inc" ] || { echo "build.sh: no cupti.h found" >&2; exit 1; }
lib=$(dirname "$(find "$inc/.." /usr/local/cuda/extras/CUPTI -name 'libcupti.so*' 2>/dev/null | head -1)")
[ -d "$lib" ] || { echo "build.sh: no libcupti.so found" >&2; exit 1; }
# The newest kernel record these headers define: its fields are the ones the library fills.
n=$(grep -ho 'CUpti_ActivityKernel[0-9]*;' "$inc"/cupti_activity*.h | tr -dc '0-9\n' | sort -n | tail -1)
mkdir -p "$out"
g++ -std=c++17 -O2 -shared -fPIC -DKREC=CUpti_ActivityKernel$n -I"$inc" -I/usr/local/cuda/include \
    "$here/kernel_trace.cpp" -L"$lib" -Wl,-rpath,"$lib" -lcupti -o "$out/libkernel_trace.so"
echo "$out/libkernel_trace.so"
