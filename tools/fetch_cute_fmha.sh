#!/usr/bin/env bash
# Put CUTLASS's public CuTe DSL Hopper FMHA example where bench/attention.py --cute-fmha looks
# for it: .gpu/cute_example/fmha.py, with the helpers package it imports (`from helpers import
# fmha_helpers`) beside it in .gpu/cute_example/helpers/ (all git-ignored; the files are
# NVIDIA's, never committed here).
#
#   tools/fetch_cute_fmha.sh [GIT_DIR] [COMMIT]
#
# GIT_DIR: a clone or mirror of github.com/NVIDIA/cutlass (default: a local mirror at
# /work/.mirror/NVIDIA+cutlass/repo; or clone it yourself). COMMIT: the revision to read, one
# for all three files so the example and its helpers match; the default is the last commit that
# changed fmha.py (CUTLASS v4.5), which compiles with nvidia-cutlass-dsl 4.8.1 (checked with
# fake tensors for sm_90a: tests/test_attention_cute_fmha.py).
set -euo pipefail
GIT_DIR=${1:-/work/.mirror/NVIDIA+cutlass/repo}
COMMIT=${2:-cb37157db50d0528c4aea99feb37946ec278e3d9}
BASE=examples/python/CuTeDSL
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST="$ROOT/.gpu/cute_example"
mkdir -p "$DEST/helpers"
for pair in cute/hopper/kernel/attention/fmha.py:fmha.py \
  helpers/__init__.py:helpers/__init__.py helpers/fmha_helpers.py:helpers/fmha_helpers.py; do
  src="$BASE/${pair%%:*}" dst="$DEST/${pair#*:}"
  git --git-dir "$GIT_DIR" show "$COMMIT:$src" > "$dst.tmp"
  mv "$dst.tmp" "$dst"
  echo "$dst (from $COMMIT:$src)"
done
