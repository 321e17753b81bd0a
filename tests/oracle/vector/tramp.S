/* run_case(ctx, fn) and save_vstate(ctx) for driver.c; offsets follow
 * struct ctx (xin 0, xout 64, vl 320, vtype 328, vstart 336, avl0 344, v 352). */
	.text
	.globl run_case
run_case:
	addi	sp, sp, -32
	sd	ra, 0(sp)
	sd	s0, 8(sp)
	sd	s1, 16(sp)
	mv	s0, a0
	mv	s1, a1
	csrw	vstart, zero
	csrr	t1, vlenb
	slli	t1, t1, 3
	addi	t0, s0, 352
	vl8re8.v	v0, (t0)
	add	t0, t0, t1
	vl8re8.v	v8, (t0)
	add	t0, t0, t1
	vl8re8.v	v16, (t0)
	add	t0, t0, t1
	vl8re8.v	v24, (t0)
	ld	t2, 344(s0)
	vsetvli	zero, t2, e8, m1, tu, mu
	ld	a0, 0(s0)
	ld	a1, 8(s0)
	ld	a2, 16(s0)
	ld	a3, 24(s0)
	ld	a4, 32(s0)
	ld	a5, 40(s0)
	ld	a6, 48(s0)
	ld	a7, 56(s0)
	li	t0, 0
	li	t1, 0
	li	t2, 0
	jalr	s1
	sd	t0, 64+5*8(s0)
	sd	a0, 64+10*8(s0)
	sd	a1, 64+11*8(s0)
	sd	a2, 64+12*8(s0)
	mv	a0, s0
	call	save_vstate
	ld	ra, 0(sp)
	ld	s0, 8(sp)
	ld	s1, 16(sp)
	addi	sp, sp, 32
	ret

	.globl save_vstate
save_vstate:
	csrr	t0, vstart
	sd	t0, 336(a0)
	csrr	t0, vl
	sd	t0, 320(a0)
	csrr	t0, vtype
	sd	t0, 328(a0)
	csrw	vstart, zero
	csrr	t1, vlenb
	slli	t1, t1, 3
	addi	t0, a0, 352
	vs8r.v	v0, (t0)
	add	t0, t0, t1
	vs8r.v	v8, (t0)
	add	t0, t0, t1
	vs8r.v	v16, (t0)
	add	t0, t0, t1
	vs8r.v	v24, (t0)
	ret
