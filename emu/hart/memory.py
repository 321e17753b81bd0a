"""Paged physical memory with the kernel's permission model.

Role: 4 KiB pages, each user or kernel, readable / writable / executable.
S-mode rules: a user page is reachable by loads and stores only while
`sstatus.SUM` is set, and never executable; a kernel page always is (within
its r/w/x bits).  An access that breaks a rule raises `MemFault` (not an
EmuError: the machine turns it into an `__ex_table` fixup or an `Oops`).
A misaligned access is allowed; when it spans two pages both are checked
before any byte is touched, so a faulting store writes nothing.

For the block translator each mode (SUM clear / set) has a read table and a
write table: page number -> `Views` of the pages that mode may read / write,
so a permitted access is one dict lookup and one memoryview index.
Imports: emu.errors.
"""

from __future__ import annotations

from dataclasses import dataclass

from copygen.emu.errors import MapError

PAGE_SHIFT = 12
PAGE_SIZE = 1 << PAGE_SHIFT
PAGE_MASK = PAGE_SIZE - 1

# Views tuple layout: index -> memoryview format (index 0 is the bytearray).
VIEW_FORMATS = (None, "B", "H", "I", "Q", "b", "h", "i")
VIEW_INDEX = {(1, False): 1, (2, False): 2, (4, False): 3, (8, False): 4,
              (1, True): 5, (2, True): 6, (4, True): 7, (8, True): 4}


class MemFault(Exception):
    """An access the permission model refuses (internal; see module doc)."""

    def __init__(self, addr: int, cause: str) -> None:
        super().__init__(f"{cause} at {addr:#x}")
        self.addr, self.cause = addr, cause


@dataclass(slots=True)
class Page:
    data: bytearray
    views: tuple
    user: bool
    readable: bool
    writable: bool
    executable: bool


def _views(data: bytearray) -> tuple:
    mv = memoryview(data)
    return (data,) + tuple(mv.cast(f) for f in VIEW_FORMATS[1:])


class Memory:
    """Pages plus the per-mode lookup tables used by both execution paths."""

    def __init__(self) -> None:
        self.pages: dict[int, Page] = {}
        # [sum] -> {page number: views}
        self.read_table: tuple[dict, dict] = ({}, {})
        self.write_table: tuple[dict, dict] = ({}, {})
        self.code_version = 0  # bumped when executable bytes change

    # --- mapping -----------------------------------------------------------
    def map(self, addr: int, size: int, *, user: bool, readable: bool = True,
            writable: bool = True, executable: bool = False) -> None:
        if addr & PAGE_MASK or size <= 0 or size & PAGE_MASK:
            raise MapError(f"map({addr:#x}, {size:#x}): address and size must be positive "
                           f"multiples of the {PAGE_SIZE}-byte page")
        if addr < 0 or addr + size > 1 << 64:
            raise MapError(f"map({addr:#x}, {size:#x}): outside the 64-bit address space")
        code = executable
        for pn in range(addr >> PAGE_SHIFT, (addr + size) >> PAGE_SHIFT):
            old = self.pages.get(pn)
            data = old.data if old else bytearray(PAGE_SIZE)
            views = old.views if old else _views(data)
            code = code or bool(old and old.executable)
            self.pages[pn] = Page(data, views, user, readable, writable, executable)
            self._index(pn)
        if code:  # translated blocks only depend on executable pages
            self.code_version += 1

    def unmap(self, addr: int, size: int) -> None:
        code = False
        for pn in range(addr >> PAGE_SHIFT, (addr + size + PAGE_MASK) >> PAGE_SHIFT):
            old = self.pages.pop(pn, None)
            code = code or bool(old and old.executable)
            self._index(pn)
        if code:
            self.code_version += 1

    def _index(self, pn: int) -> None:
        page = self.pages.get(pn)
        for sum_set in (0, 1):
            for table, allowed in ((self.read_table[sum_set], page and page.readable),
                                   (self.write_table[sum_set], page and page.writable)):
                if allowed and (not page.user or sum_set):
                    table[pn] = page.views
                else:
                    table.pop(pn, None)

    # --- checks used by the machine ---------------------------------------
    def check(self, addr: int, size: int, kind: str, sum_set: int) -> None:
        """Raise MemFault unless every byte of [addr, addr+size) is allowed.
        The fault's address is the first byte of the refused part: an
        access that crosses into a refused page reports that page's start,
        as the privileged spec has stval for a misaligned access's faulting
        portion (and QEMU's si_addr)."""
        table = self.write_table[sum_set] if kind == "store" else self.read_table[sum_set]
        first, last = addr >> PAGE_SHIFT, (addr + size - 1) >> PAGE_SHIFT
        for pn in (first, last) if first != last else (first,):
            if pn not in table:
                raise MemFault(max(addr, pn << PAGE_SHIFT),
                               f"{kind}: {self._reason(pn, kind, sum_set)}")

    def _reason(self, pn: int, kind: str, sum_set: int) -> str:
        page = self.pages.get(pn)
        if page is None:
            return "unmapped"
        if page.user and (kind == "fetch" or not sum_set):
            return "user page while SUM clear" if kind != "fetch" else "user page not executable"
        if kind == "store":
            return "read-only"
        return "not readable" if kind == "load" else "not executable"

    def fetch_check(self, addr: int) -> None:
        page = self.pages.get(addr >> PAGE_SHIFT)
        if page is None or page.user or not page.executable:
            raise MemFault(addr, f"fetch: {self._reason(addr >> PAGE_SHIFT, 'fetch', 0)}")

    # --- data access (permissions already checked) ------------------------
    def get(self, addr: int, size: int) -> int:
        off = addr & PAGE_MASK
        if off + size <= PAGE_SIZE:
            return int.from_bytes(self.pages[addr >> PAGE_SHIFT].data[off:off + size], "little")
        return int.from_bytes(self.host_read(addr, size), "little")

    def put(self, addr: int, size: int, value: int) -> None:
        off = addr & PAGE_MASK
        raw = (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        if off + size <= PAGE_SIZE:
            self.pages[addr >> PAGE_SHIFT].data[off:off + size] = raw
        else:
            self.host_write(addr, raw)

    # --- host access: ignores permissions, needs mapped pages -------------
    def host_read(self, addr: int, n: int) -> bytes:
        out = bytearray()
        while n > 0:
            page = self._mapped(addr, n)
            off = addr & PAGE_MASK
            take = min(n, PAGE_SIZE - off)
            out += page.data[off:off + take]
            addr, n = addr + take, n - take
        return bytes(out)

    def host_write(self, addr: int, data: bytes) -> None:
        data = memoryview(bytes(data))
        while len(data):
            page = self._mapped(addr, len(data))
            off = addr & PAGE_MASK
            take = min(len(data), PAGE_SIZE - off)
            page.data[off:off + take] = data[:take]
            if page.executable:
                self.code_version += 1
            addr, data = addr + take, data[take:]

    def _mapped(self, addr: int, n: int) -> Page:
        page = self.pages.get(addr >> PAGE_SHIFT)
        if page is None:
            raise MapError(f"{n} bytes at {addr:#x}: page {addr & ~PAGE_MASK:#x} is not mapped")
        return page
