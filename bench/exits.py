"""How a bench script ends on bad input: copygen's own errors (a missing or
invalid file, an unknown profile, a failing toolchain) and a file the
script cannot open, as the one-line message the copygen command prints,
not a traceback; exit status 2 for bad input, 1 for a tool or a run that
failed, as `copygen` itself.

Role: `exit_status`.  May import copygen's error classes only.
"""
from __future__ import annotations

import sys

from copygen.emu.errors import ElfError, EmuError, ProfileError  # noqa: E402
from copygen.errors import CopygenError, ToolError  # noqa: E402


def exit_status(main, *args) -> int:
    """main(*args)'s exit status (None: 0), or 1/2 with the error on stderr."""
    try:
        return main(*args) or 0
    except CopygenError as err:
        print(err.render(), file=sys.stderr)
        return 1 if isinstance(err, ToolError) else 2
    except (ProfileError, ElfError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except EmuError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except (FileNotFoundError, PermissionError, IsADirectoryError,
            NotADirectoryError) as err:     # a file the script reads or writes itself
        print(f"{err.filename or ''}: error: {err.strerror or err}", file=sys.stderr)
        return 2
