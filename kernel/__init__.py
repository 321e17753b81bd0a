"""copygen's kernel layer: a real Linux tree, built by Kbuild, booted in
QEMU, tested with the kernel's own KUnit suites and copygen's fault suite.

tree (a Debian linux-source tarball -> a git tree with one commit), kunit
(the tree's kunit.py at one commit, results per suite; a series of
commits in one build directory), faultsuite (the fault suite's files, from
templates/usercopy_fault_kunit.*.j2), faultpatch (the suite as a commit
under a tested commit, or as a patch of its own) and speedsuite (a
test-only suite that forces the misaligned-access probe's verdict and
counts which of a two-body patch's copies ran).  It tests patches; the
one it writes is its own test suite's.
May import gen.toolchain, gen.resources, copygen.errors, jinja2 and the
standard library; patch may import it, it imports no layer above it.
"""
