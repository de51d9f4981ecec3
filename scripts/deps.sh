#!/usr/bin/env bash
# Installs what building uvmprefetch needs on Debian or Ubuntu. The CUDA toolkit
# (12.8 or newer: headers, nvcc) is expected under /usr/local/cuda or on PATH.
set -euo pipefail
packages=(cmake ninja-build g++ libspdlog-dev libfmt-dev catch2 libcli11-dev
          libtomlplusplus-dev nlohmann-json3-dev libzstd-dev python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi
if [ ! -f /usr/local/cuda/include/cuda.h ] && ! command -v nvcc >/dev/null; then
  echo "uvmprefetch needs the CUDA toolkit (12.8 or newer) for cuda.h: install it under /usr/local/cuda" >&2
  exit 1
fi
