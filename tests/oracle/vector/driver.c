/* Differential oracle driver for the emulator's vector subset, run under
 * qemu-riscv64 -cpu rv64,v=true,vlen=N.  Compiled without V (-march=rv64gc)
 * so that no C code touches vector state; all vector work is in tramp.S and
 * the generated cases.S.
 *
 * stdin: one case per line, "K a0 a1 a2 a3 a4 seed" (K indexes case_table).
 * For each case: the data arena (DATA, two pages, then one PROT_NONE page)
 * and v0-v31 are filled from the seed, vl/vtype start as vsetvl(a2, e8 m1)
 * would set them, case K runs through run_case() with a0-a4 as given, and
 * one line is printed:
 *   K fault pc_offset si_addr vstart vl vtype t0 a0 a1 a2 crc(v0-v31) crc(arena)
 * A SIGSEGV inside the case is caught: pc and registers come from the signal
 * context, the vector state is saved by save_vstate() in the handler. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#define DATA 0x10000000UL
#define PAGE 4096UL
#define ARENA (2 * PAGE)

struct ctx {			/* layout shared with tramp.S */
	unsigned long xin[8];	/* a0..a7 at entry */
	unsigned long xout[32];	/* x0..x31 at exit or fault */
	unsigned long vl, vtype, vstart;
	unsigned long avl0;	/* AVL of the initial vsetvl (e8, m1) */
	unsigned char v[32 * 128];	/* v0..v31, VLENB bytes each (VLEN <= 1024) */
};

extern void run_case(struct ctx *c, void (*fn)(void));
extern void save_vstate(struct ctx *c);
extern void (*case_table[])(void);

static struct ctx ctx;
static sigjmp_buf back;
static volatile unsigned long fault_pc, fault_addr;

static void on_segv(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	(void)sig;
	save_vstate(&ctx);
	for (int i = 1; i < 32; i++)
		ctx.xout[i] = uc->uc_mcontext.__gregs[i];
	fault_pc = uc->uc_mcontext.__gregs[0];
	fault_addr = (unsigned long)si->si_addr;
	siglongjmp(back, 1);
}

/* The LCG of mutate/harness.c: seed = seed * 1103515245 + 12345; byte = seed >> 16. */
static void fill(unsigned char *p, unsigned long n, unsigned int seed)
{
	for (unsigned long i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = seed >> 16;
	}
}

static unsigned int crc32(const unsigned char *p, unsigned long n)
{
	unsigned int c = 0xffffffffu;
	for (unsigned long i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1));
	}
	return ~c;
}

int main(int argc, char **argv)
{
	unsigned long vlenb = strtoul(argc > 1 ? argv[1] : "16", NULL, 0);
	unsigned char *arena = mmap((void *)DATA, ARENA + PAGE, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (arena != (void *)DATA || mprotect(arena + ARENA, PAGE, PROT_NONE))
		return 2;
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER };
	sigaction(SIGSEGV, &sa, NULL);
	unsigned long k, a[5];
	unsigned int seed;
	while (scanf("%lu %lx %lx %lx %lx %lx %u", &k, &a[0], &a[1], &a[2], &a[3], &a[4], &seed) == 7) {
		memset(&ctx, 0, sizeof ctx);
		memcpy(ctx.xin, a, sizeof a);
		ctx.avl0 = a[2];
		fill(arena, ARENA, seed);
		fill(ctx.v, 32 * vlenb, seed ^ 0x5a5a5a5au);
		int faulted = sigsetjmp(back, 1);
		if (!faulted) {
			fault_pc = fault_addr = 0;
			run_case(&ctx, case_table[k]);
		}
		printf("%lu %d %lx %lx %lx %lx %lx %lx %lx %lx %lx %x %x\n", k, faulted,
		       faulted ? fault_pc - (unsigned long)case_table[k] : 0, fault_addr,
		       ctx.vstart, ctx.vl, ctx.vtype, ctx.xout[5], ctx.xout[10], ctx.xout[11],
		       ctx.xout[12], crc32(ctx.v, 32 * vlenb), crc32(arena, ARENA));
	}
	return 0;
}
