"""Two bodies in one kernel, picked at boot by the kernel's probe of
misaligned access speed (`copygen patch --fast-body`, docs/speeds.md).

dispatch (the slots each strategy may fill, the static branch on the
probe's key, the new uaccess.S) -> probe (the kernel's boot probe run on a
cost profile: which body a core of that profile runs) -> commit_text (the
two-body commit message) -> run (`copygen patch SLOW --fast-body FAST`
start to finish).  stringplan and stringrun do the same for memcpy and
memmove (`--routine string`).

Role: the two-body patch.  May import the patch package's other modules,
gen, emu, measure, verify, kernel.kunit, copygen.errors and the standard
library.
"""
