"""The front end: `.copy` text parsed, validated into the frozen Strategy,
printed back, and a sweep's points.

May import gen.* and the standard library.
"""
