"""The phases lowering builds routines from: scheduled word blocks, the shift
copy, sub-word pieces, the clear ladder, and the fault exits of every user
access.

May import gen.* and the standard library.
"""
