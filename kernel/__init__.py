"""copygen's kernel layer: a real Linux tree, built by Kbuild, booted in
QEMU, tested with the kernel's own KUnit suites.

tree (a Debian linux-source tarball -> a git tree with one commit) and
kunit (the tree's kunit.py at one commit, results per suite; a series of
commits in one build directory).  It tests patches; it writes none.
May import gen.toolchain, copygen.errors and the standard library; patch may
import it, it imports no layer above it.
"""
