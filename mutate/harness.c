// SPDX-License-Identifier: MIT
/*
 * copygen qemu oracle: run emitted uaccess.S / string.c routines as a Linux
 * user program under qemu-riscv64, with the kernel's machine model imitated:
 *
 *  - SIGILL on the sstatus CSR instructions (illegal in U-mode) is emulated:
 *    we keep sstatus in a variable and step over the instruction;
 *  - SIGSEGV on a PROT_NONE page is looked up in __ex_table and resumed at
 *    the fixup, as the kernel's trap handler does; no entry = an oops.
 *
 * Input, one case per line on stdin:
 *   FN DST_OFF SRC_OFF N FAULT_SIDE FAULT_AT SEED
 *   FN: to | from | clear | memcpy | memmove | memset
 *   FAULT_SIDE: none | dst | src; FAULT_AT: the arena offset (a multiple of
 *   4096) from which that side's arena is inaccessible
 * Output, one line per case:
 *   RET SUM_AT_EXIT PREFIX_OK REST_UNTOUCHED HASH
 * where PREFIX_OK: dst[0, n-RET) holds the expected bytes; REST_UNTOUCHED:
 * dst[n-RET, n) is unchanged; HASH: FNV-1a of the whole destination arena
 * (over its 64-bit words).
 * With the option -w a sixth field follows: WSUM, sum over the destination
 * arena of byte[i] * (splitmix64(i) | 1) mod 2^64 in hex, a digest a vector
 * library can compute too (tests/test_emu_vs_qemu.py compares the emulator's
 * destination with it).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define PAGE		4096UL
#define ARENA		(4 * PAGE + 16384)	/* room for n <= 16 KiB + offsets */
#define SR_SUM		0x40000UL
#define CSR_SSTATUS	0x100

struct extable { int insn, fixup; short type, data; };
extern struct extable __start___ex_table[] __attribute__((weak));
extern struct extable __stop___ex_table[] __attribute__((weak));

unsigned long __asm_copy_to_user(void *, const void *, unsigned long) __attribute__((weak));
unsigned long __asm_copy_from_user(void *, const void *, unsigned long) __attribute__((weak));
unsigned long __clear_user(void *, unsigned long) __attribute__((weak));
void *copygen_memcpy(void *, const void *, unsigned long) __asm__("__memcpy") __attribute__((weak));
void *copygen_memmove(void *, const void *, unsigned long) __asm__("__memmove") __attribute__((weak));
void *copygen_memset(void *, int, unsigned long) __asm__("__memset") __attribute__((weak));

static unsigned long sstatus;
static unsigned char *dst_arena, *src_arena;
static uint64_t *weights;	/* -w: per-byte weights of WSUM */

static void on_sigill(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	unsigned long *g = uc->uc_mcontext.__gregs;	/* [0] = pc, [i] = x_i */
	uint32_t insn = *(uint32_t *)g[0];
	unsigned int funct3 = (insn >> 12) & 7, rd = (insn >> 7) & 31;
	unsigned int rs1 = (insn >> 15) & 31, csr = insn >> 20;
	unsigned long old = sstatus, arg = (funct3 & 4) ? rs1 : (rs1 ? g[rs1] : 0);

	(void)sig; (void)si;
	if ((insn & 0x7f) != 0x73 || csr != CSR_SSTATUS || (funct3 & 3) == 0) {
		fprintf(stderr, "oops: illegal instruction %08x at %#lx\n", insn, g[0]);
		_exit(3);
	}
	switch (funct3 & 3) {
	case 1: sstatus = arg; break;			/* csrrw */
	case 2: if (rs1) sstatus |= arg; break;		/* csrrs */
	case 3: if (rs1) sstatus &= ~arg; break;	/* csrrc */
	}
	if (rd)
		g[rd] = old;
	g[0] += 4;
}

static void on_sigsegv(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	unsigned long pc = uc->uc_mcontext.__gregs[0];

	(void)sig;
	for (struct extable *e = __start___ex_table; e < __stop___ex_table; e++) {
		if ((unsigned long)&e->insn + e->insn == pc) {
			uc->uc_mcontext.__gregs[0] = (unsigned long)&e->fixup + e->fixup;
			return;
		}
	}
	fprintf(stderr, "oops: fault at %#lx, address %p, no __ex_table entry\n", pc,
		si->si_addr);
	_exit(4);
}

/* FNV-1a over the 64-bit words of an arena (its size a multiple of 8) */
static uint64_t fnv(const unsigned char *p, unsigned long n)
{
	const uint64_t *w = (const uint64_t *)p;
	uint64_t h = 1469598103934665603ULL;

	for (n /= 8; n--; )
		h = (h ^ *w++) * 1099511628211ULL;
	return h;
}

static uint64_t splitmix64(uint64_t i)
{
	uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ULL;

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static uint64_t wsum(const unsigned char *p, unsigned long n)
{
	uint64_t h = 0;

	for (unsigned long i = 0; i < n; i++)
		h += p[i] * weights[i];
	return h;
}

#define LCG_A		1103515245u
#define LCG_C		12345u
#define LCG_BITS	24	/* a byte, bits 16-23 of the state, needs no more */
#define LCG_MASK	((1u << LCG_BITS) - 1)
#define TABLE_AFTER	256	/* cases: by then filling costs more than the table */

/* every byte the LCG makes from state 0 on, once round its 2^24-step cycle
 * (modulo 2^24 it has full period: A = 1 mod 4, C odd) and one arena more:
 * any seed's fill is a run of it */
static unsigned char *lcg_bytes;

static void make_lcg_bytes(void)
{
	unsigned int x = 0;

	lcg_bytes = malloc((1ul << LCG_BITS) + ARENA);
	if (!lcg_bytes)
		return;
	for (unsigned long i = 0; i < (1ul << LCG_BITS) + ARENA; i++) {
		x = x * LCG_A + LCG_C;
		lcg_bytes[i] = x >> 16;
	}
}

/* the k with LCG^k(0) = seed modulo 2^24 (PCG's distance: bit by bit, each
 * step squares the generator's jump) */
static unsigned long lcg_steps_to(unsigned int seed)
{
	unsigned int x = 0, mult = LCG_A, plus = LCG_C, bit = 1;
	unsigned long k = 0;

	while ((x ^ seed) & LCG_MASK) {
		if ((x ^ seed) & bit) {
			x = x * mult + plus;
			k |= bit;
		}
		plus = (mult + 1) * plus;
		mult *= mult;
		bit <<= 1;
	}
	return k;
}

/* p[i] = bits 16-23 of the LCG's state after i + 1 steps from seed */
static void fill(unsigned char *p, unsigned long n, unsigned int seed)
{
	if (lcg_bytes) {
		const unsigned char *run = lcg_bytes + lcg_steps_to(seed);

		if (n && run[0] != (unsigned char)((seed * LCG_A + LCG_C) >> 16)) {
			fprintf(stderr, "harness: the LCG table disagrees for seed %u\n", seed);
			exit(5);
		}
		memcpy(p, run, n);
		return;
	}
	for (unsigned long i = 0; i < n; i++) {
		seed = seed * LCG_A + LCG_C;
		p[i] = seed >> 16;
	}
}

static int run_case(const char *fn, unsigned long doff, unsigned long soff, unsigned long n,
		    const char *side, unsigned long fault_at, unsigned int seed)
{
	unsigned char *d = dst_arena + doff, *s = src_arena + soff;
	static unsigned char before[ARENA], expect[ARENA];
	unsigned long ret = 0, i;
	int memmove_case = !strcmp(fn, "memmove");

	mprotect(dst_arena, ARENA, PROT_READ | PROT_WRITE);
	mprotect(src_arena, ARENA, PROT_READ | PROT_WRITE);
	fill(src_arena, ARENA, seed);
	fill(dst_arena, ARENA, seed ^ 0x5a5a5a5au);
	if (memmove_case)	/* overlap: both pointers in the source arena */
		d = src_arena + doff;
	memcpy(before, memmove_case ? src_arena : dst_arena, ARENA);
	/* expected destination contents if everything is copied: only
	 * [d, d + n) of it is ever read */
	unsigned char *ebase = memmove_case ? src_arena : dst_arena;
	if (!strcmp(fn, "clear") || !strcmp(fn, "memset"))
		memset(expect + (d - ebase), !strcmp(fn, "memset") ? 0xa5 : 0, n);
	else
		memmove(expect + (d - ebase), memmove_case ? before + soff : s, n);
	if (fault_at % PAGE || fault_at >= ARENA)
		return -1;
	if (!strcmp(side, "dst"))
		mprotect(dst_arena + fault_at, ARENA - fault_at, PROT_NONE);
	else if (!strcmp(side, "src"))
		mprotect(src_arena + fault_at, ARENA - fault_at, PROT_NONE);

	sstatus = 0;
	if (!strcmp(fn, "to"))
		ret = __asm_copy_to_user(d, s, n);
	else if (!strcmp(fn, "from"))
		ret = __asm_copy_from_user(d, s, n);
	else if (!strcmp(fn, "clear"))
		ret = __clear_user(d, n);
	else if (!strcmp(fn, "memcpy"))
		ret = copygen_memcpy(d, s, n) != d;
	else if (memmove_case)
		ret = copygen_memmove(d, s, n) != d;
	else if (!strcmp(fn, "memset"))
		ret = copygen_memset(d, 0xa5, n) != d;
	else
		return -1;

	mprotect(dst_arena, ARENA, PROT_READ | PROT_WRITE);
	mprotect(src_arena, ARENA, PROT_READ | PROT_WRITE);
	unsigned char *now = memmove_case ? src_arena : dst_arena;
	unsigned long off = d - now, done = ret <= n ? n - ret : 0;
	int prefix_ok = ret <= n, rest_ok = ret <= n;

	for (i = 0; prefix_ok && i < done; i++)
		prefix_ok = now[off + i] == expect[off + i];
	for (i = done; rest_ok && i < n; i++)
		rest_ok = now[off + i] == before[off + i];
	/* nothing outside [d, d + n) */
	if (rest_ok && off + n <= ARENA)
		rest_ok = !memcmp(now, before, off)
			  && !memcmp(now + off + n, before + off + n, ARENA - off - n);
	for (i = 0; rest_ok && off + n > ARENA && i < ARENA; i++)
		if (i < off || i >= off + n)
			rest_ok = now[i] == before[i];
	printf("%lu %d %d %d %016llx", ret, !!(sstatus & SR_SUM), prefix_ok, rest_ok,
	       (unsigned long long)fnv(now, ARENA));
	if (weights)
		printf(" %016llx", (unsigned long long)wsum(now, ARENA));
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_flags = SA_SIGINFO | SA_NODEFER };
	char fn[16], side[8];
	unsigned long doff, soff, n, fault_at;
	unsigned int seed;

	if (argc > 1 && !strcmp(argv[1], "-w")) {
		weights = malloc(ARENA * sizeof(*weights));
		for (unsigned long i = 0; i < ARENA; i++)
			weights[i] = splitmix64(i) | 1;
	}
	sa.sa_sigaction = on_sigill;
	sigaction(SIGILL, &sa, NULL);
	sa.sa_sigaction = on_sigsegv;
	sigaction(SIGSEGV, &sa, NULL);
	dst_arena = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	src_arena = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (unsigned long cases = 0; scanf("%15s %lu %lu %lu %7s %lu %u", fn, &doff, &soff, &n,
					      side, &fault_at, &seed) == 7; cases++) {
		if (cases == TABLE_AFTER)
			make_lcg_bytes();
		if (run_case(fn, doff, soff, n, side, fault_at, seed)) {
			printf("bad case\n");
			return 2;
		}
	}
	fflush(stdout);
	return 0;
}
