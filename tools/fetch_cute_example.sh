#!/usr/bin/env bash
# Put CUTLASS's public CuTe DSL Hopper persistent GEMM example where bench/gemm_sweep.py
# --cute-example looks for it: .gpu/cute_example/dense_gemm_persistent.py (git-ignored; the file
# is NVIDIA's, never committed here).
#
#   tools/fetch_cute_example.sh [GIT_DIR] [COMMIT]
#
# GIT_DIR: a clone or mirror of github.com/NVIDIA/cutlass (default: a local mirror at
# /work/.mirror/NVIDIA+cutlass/repo; or clone it yourself). COMMIT: the revision to read; the
# default is the last commit that changed the file (CUTLASS v4.5, unchanged through v4.7), which
# compiles with nvidia-cutlass-dsl 4.8.1 (checked with fake tensors for sm_90a).
set -euo pipefail
GIT_DIR=${1:-/work/.mirror/NVIDIA+cutlass/repo}
COMMIT=${2:-cb37157db50d0528c4aea99feb37946ec278e3d9}
SRC=examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm_persistent.py
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST="$ROOT/.gpu/cute_example/dense_gemm_persistent.py"
mkdir -p "$(dirname "$DEST")"
git --git-dir "$GIT_DIR" show "$COMMIT:$SRC" > "$DEST.tmp"
mv "$DEST.tmp" "$DEST"
echo "$DEST (from $COMMIT:$SRC)"
