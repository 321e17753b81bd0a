"""Package data: the Jinja templates of the emitted files (laid out, not
decided, here).  May import nothing.
"""
