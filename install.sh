#!/usr/bin/env bash
# Install everything copygen needs on a Debian-like machine: the RISC-V
# cross toolchain and qemu-user (apt, only when missing), llvm for llvm-mca
# (only when missing), then copygen itself with its test dependencies.
# With --kernel also what the real-kernel loop needs (`copygen tree`,
# `copygen kunit`, `copygen patch --test kunit`): Debian's Linux 6.12 source,
# qemu-system-riscv64 with OpenSBI, Kbuild's host tools, and the Python
# modules of checkpatch's SPDX check (ply, GitPython).
set -euo pipefail
cd "$(dirname "$0")"

need=()
if [ "${1:-}" = "--kernel" ]; then
	[ -e /usr/src/linux-source-6.12.tar.xz ] || need+=(linux-source-6.12)
	command -v qemu-system-riscv64 >/dev/null || need+=(qemu-system-misc)
	[ -e /usr/share/qemu/opensbi-riscv64-generic-fw_dynamic.bin ] || need+=(qemu-system-data)
	for t in flex bison bc make; do command -v $t >/dev/null || need+=($t); done
	[ -e /usr/include/libelf.h ] || need+=(libelf-dev)
	[ -e /usr/include/openssl/ssl.h ] || need+=(libssl-dev)
fi
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
# checkpatch.pl runs the tree's scripts/spdxcheck.py, which needs ply and GitPython
if [ "${1:-}" = "--kernel" ] && ! python3 -c "import ply, git" 2>/dev/null; then
	python3 -m pip install -q --disable-pip-version-check ply GitPython
fi
command -v pyenv >/dev/null && pyenv rehash || true
