"""Lowering: each routine of a Strategy to the IR (assembly routines) or the C
IR (string.c).

May import gen.* and the standard library.
"""
