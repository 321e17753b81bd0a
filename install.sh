#!/usr/bin/env bash
# Install everything copygen needs on a Debian-like machine: the RISC-V
# cross toolchain and qemu-user (apt, only when missing), llvm for llvm-mca
# (only when missing), then copygen itself with its test dependencies.
set -euo pipefail
cd "$(dirname "$0")"

need=()
[ -e /usr/riscv64-linux-gnu/lib/libc.a ] || need+=(libc6-dev-riscv64-cross)
command -v "${CROSS_COMPILE:-riscv64-linux-gnu-}gcc" >/dev/null || need+=(gcc-riscv64-linux-gnu)
command -v "${CROSS_COMPILE:-riscv64-linux-gnu-}ld" >/dev/null || need+=(binutils-riscv64-linux-gnu)
command -v qemu-riscv64 >/dev/null || need+=(qemu-user)
command -v llvm-mca >/dev/null || need+=(llvm)
if ((${#need[@]})); then
	echo "install.sh: installing ${need[*]}" >&2
	SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -e '.[test]'
command -v pyenv >/dev/null && pyenv rehash || true
