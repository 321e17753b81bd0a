; Houdini's batch query on the path from c910tuned's four-word loop (0x802000d0) back
; to its two-word loop (0x8020002a), __asm_copy_to_user: are the loop's 41 register
; candidates implied?  (unsat).  Written by budget.Query's solver.to_smt2().
(set-info :status unknown)
(declare-fun N () (_ BitVec 64))
(declare-fun D () (_ BitVec 64))
(declare-fun W () (_ BitVec 64))
(declare-fun SS0 () (_ BitVec 64))
(declare-fun R0_x2 () (_ BitVec 64))
(declare-fun R0_x1 () (_ BitVec 64))
(declare-fun S () (_ BitVec 64))
(declare-fun R0_x3 () (_ BitVec 64))
(declare-fun R0_x4 () (_ BitVec 64))
(declare-fun R0_x8 () (_ BitVec 64))
(declare-fun R0_x9 () (_ BitVec 64))
(declare-fun R0_x18 () (_ BitVec 64))
(declare-fun R0_x19 () (_ BitVec 64))
(declare-fun R0_x20 () (_ BitVec 64))
(declare-fun R0_x21 () (_ BitVec 64))
(declare-fun R0_x22 () (_ BitVec 64))
(declare-fun R0_x23 () (_ BitVec 64))
(declare-fun R0_x24 () (_ BitVec 64))
(declare-fun R0_x25 () (_ BitVec 64))
(declare-fun R0_x26 () (_ BitVec 64))
(declare-fun R0_x27 () (_ BitVec 64))
(declare-fun Ld0_x11 () (_ BitVec 64))
(declare-fun Ld0_x10 () (_ BitVec 64))
(declare-fun Ld0_x13 () (_ BitVec 64))
(declare-fun Ld0_x12 () (_ BitVec 64))
(declare-fun Ld0_written () Bool)
(declare-fun Ld0_sstatus () (_ BitVec 64))
(assert
 (bvult N (_ bv1099511627776 64)))
(assert
 (bvuge D (_ bv1048576 64)))
(assert
 (let ((?x12 (bvsub (_ bv18446744073708503040 64) N)))
 (bvule D ?x12)))
(assert
 (let (($x15 (= N (_ bv0 64))))
 (or $x15 (bvult W N))))
(assert
 (= (_ bv0 64) (bvand SS0 (_ bv262144 64))))
(assert
 (bvuge R0_x2 (_ bv1048576 64)))
(assert
 (bvule R0_x2 (_ bv18446744073708503040 64)))
(assert
 (= (bvand R0_x1 (_ bv1 64)) (_ bv0 64)))
(assert
 (bvuge S (_ bv1048576 64)))
(assert
 (let ((?x12 (bvsub (_ bv18446744073708503040 64) N)))
 (bvule S ?x12)))
(assert
 (or (bvule (bvadd (bvadd D N) (_ bv65536 64)) S) (bvule (bvadd (bvadd S N) (_ bv65536 64)) D)))
(assert
 (or (bvule (bvadd R0_x2 (_ bv4096 64)) (bvsub D (_ bv8 64))) (bvule (bvadd (bvadd D N) (_ bv8 64)) (bvsub R0_x2 (_ bv8192 64)))))
(assert
 (or (bvule (bvadd R0_x2 (_ bv4096 64)) (bvsub S (_ bv8 64))) (bvule (bvadd (bvadd S N) (_ bv8 64)) (bvsub R0_x2 (_ bv8192 64)))))
(assert
 (= R0_x1 R0_x1))
(assert
 (= R0_x2 R0_x2))
(assert
 (= R0_x3 R0_x3))
(assert
 (= R0_x4 R0_x4))
(assert
 (= R0_x8 R0_x8))
(assert
 (= R0_x9 R0_x9))
(assert
 (= R0_x18 R0_x18))
(assert
 (= R0_x19 R0_x19))
(assert
 (= R0_x20 R0_x20))
(assert
 (= R0_x21 R0_x21))
(assert
 (= R0_x22 R0_x22))
(assert
 (= R0_x23 R0_x23))
(assert
 (= R0_x24 R0_x24))
(assert
 (= R0_x25 R0_x25))
(assert
 (= R0_x26 R0_x26))
(assert
 (= R0_x27 R0_x27))
(assert
 (let ((?x91 (bvadd Ld0_x11 S)))
 (let ((?x92 (bvsub ?x91 S)))
 (let ((?x88 (bvadd D Ld0_x10)))
 (let ((?x89 (bvsub ?x88 D)))
 (= (_ bv18446744073709551584 64) (bvsub ?x89 ?x92)))))))
(assert
 (let ((?x100 (bvadd D Ld0_x13 N)))
 (let ((?x101 (bvsub ?x100 (_ bv0 64))))
 (= (_ bv18446744073709551552 64) (bvsub (bvsub (bvadd D Ld0_x12 N) (_ bv0 64)) ?x101)))))
(assert
 (= (_ bv18446744073709551552 64) (bvsub (bvsub (bvadd D Ld0_x12 N) (bvadd D N)) (_ bv0 64))))
(assert
 (= (_ bv0 64) (bvsub (bvsub (bvadd D Ld0_x13 N) (bvadd D N)) (_ bv0 64))))
(assert
 (let ((?x100 (bvadd D Ld0_x13 N)))
 (let ((?x118 (bvsub ?x100 (bvsub (_ bv64 64) (bvmul (bvand (bvsub S D) (_ bv7 64)) (_ bv8 64))))))
 (let ((?x113 (bvmul (bvand (bvsub S D) (_ bv7 64)) (_ bv8 64))))
 (let ((?x114 (bvneg ?x113)))
 (let ((?x97 (bvadd D Ld0_x12 N)))
 (= (_ bv0 64) (bvsub (bvsub ?x97 ?x114) ?x118))))))))
(assert
 (let ((?x33 (bvadd D N)))
 (let ((?x123 (bvsub (bvadd (bvadd D Ld0_x12 N) (bvand (bvadd D Ld0_x10) (_ bv7 64))) ?x33)))
 (= (_ bv18446744073709551552 64) ?x123))))
(assert
 (let ((?x33 (bvadd D N)))
 (let ((?x126 (bvsub (bvadd (bvadd D Ld0_x13 N) (bvand (bvadd D Ld0_x10) (_ bv7 64))) ?x33)))
 (= (_ bv0 64) ?x126))))
(assert
 (= (bvand (bvsub (bvadd D Ld0_x10) (_ bv0 64)) (_ bv7 64)) (_ bv0 64)))
(assert
 (and (= Ld0_written (bvult W Ld0_x10)) (bvule Ld0_x10 N)))
(assert
 (= Ld0_sstatus (bvor SS0 (_ bv262144 64))))
(assert
 (let ((?x88 (bvadd D Ld0_x10)))
 (let ((?x89 (bvsub ?x88 D)))
 (bvsle (_ bv0 64) ?x89))))
(assert
 (bvsge (_ bv18446744073709551552 64) (bvsub (bvadd D Ld0_x10) (bvadd D N))))
(assert
 (bvsle (_ bv0 64) (bvsub (bvadd D Ld0_x10) (bvand (bvadd D (_ bv7 64)) (_ bv18446744073709551608 64)))))
(assert
 (let ((?x91 (bvadd Ld0_x11 S)))
 (let ((?x92 (bvsub ?x91 S)))
 (bvsle (_ bv32 64) ?x92))))
(assert
 (bvsge (_ bv18446744073709551584 64) (bvsub (bvadd Ld0_x11 S) (bvadd S N))))
(assert
 (bvsle (_ bv0 64) (bvsub (bvadd D Ld0_x12 N) D)))
(assert
 (bvsle (_ bv0 64) (bvsub (bvadd D Ld0_x12 N) (bvand (bvadd D (_ bv7 64)) (_ bv18446744073709551608 64)))))
(assert
 (let ((?x100 (bvadd D Ld0_x13 N)))
 (let ((?x155 (bvsub ?x100 D)))
 (bvsle (_ bv64 64) ?x155))))
(assert
 (let ((?x144 (bvand (bvadd D (_ bv7 64)) (_ bv18446744073709551608 64))))
 (let ((?x100 (bvadd D Ld0_x13 N)))
 (let ((?x157 (bvsub ?x100 ?x144)))
 (bvsle (_ bv64 64) ?x157)))))
(assert
 (bvsge (_ bv0 64) (bvsub (bvadd D Ld0_x10) (bvadd D Ld0_x12 N))))
(assert
 (bvsge (_ bv18446744073709551552 64) (bvsub (bvadd D Ld0_x10) (bvadd D Ld0_x13 N))))
(assert
 (bvuge N (_ bv64 64)))
(assert
 (let ((?x97 (bvadd D Ld0_x12 N)))
 (let (($x165 (bvule (bvadd (_ bv32 64) D Ld0_x10) ?x97)))
 (not $x165))))
(assert
 (not (= Ld0_x10 (bvadd (_ bv18446744073709551552 64) Ld0_x13 N))))
(assert
 (let ((?x172 (bvadd (_ bv18446744073709551600 64) D Ld0_x13 N)))
 (let ((?x170 (bvadd (_ bv64 64) D Ld0_x10)))
 (bvule ?x170 ?x172))))
(assert
 (let ((?x97 (bvadd D Ld0_x12 N)))
 (let (($x165 (bvule (bvadd (_ bv32 64) D Ld0_x10) ?x97)))
 (let (($x183 (and (bvsge (bvadd Ld0_x12 N) (bvneg (_ bv1048576 64))) (bvslt (bvadd Ld0_x12 N) (bvadd (_ bv1048576 64) N)))))
 (let (($x179 (and (bvsge (bvadd (_ bv32 64) Ld0_x10) (bvneg (_ bv1048576 64))) (bvslt (bvadd (_ bv32 64) Ld0_x10) (bvadd (_ bv1048576 64) N)))))
 (=> (and $x179 $x183) (= $x165 (bvsle (bvadd (_ bv32 64) Ld0_x10) (bvadd Ld0_x12 N)))))))))
(assert
 (let ((?x172 (bvadd (_ bv18446744073709551600 64) D Ld0_x13 N)))
 (let ((?x170 (bvadd (_ bv64 64) D Ld0_x10)))
 (let (($x173 (bvule ?x170 ?x172)))
 (let (($x195 (and (bvsge (bvadd (_ bv18446744073709551600 64) Ld0_x13 N) (bvneg (_ bv1048576 64))) (bvslt (bvadd (_ bv18446744073709551600 64) Ld0_x13 N) (bvadd (_ bv1048576 64) N)))))
 (let (($x191 (and (bvsge (bvadd (_ bv64 64) Ld0_x10) (bvneg (_ bv1048576 64))) (bvslt (bvadd (_ bv64 64) Ld0_x10) (bvadd (_ bv1048576 64) N)))))
 (=> (and $x191 $x195) (= $x173 (bvsle (bvadd (_ bv64 64) Ld0_x10) (bvadd (_ bv18446744073709551600 64) Ld0_x13 N))))))))))
(assert
 (let ((?x100 (bvadd D Ld0_x13 N)))
(let ((?x170 (bvadd (_ bv64 64) D Ld0_x10)))
(let ((?x247 (bvsub ?x170 ?x100)))
(let (($x239 (bvsle (_ bv0 64) (bvsub (bvadd (_ bv18446744073709551600 64) D Ld0_x13 N) (bvand (bvadd D (_ bv7 64)) (_ bv18446744073709551608 64))))))
(let (($x138 (= Ld0_sstatus (bvor SS0 (_ bv262144 64)))))
(let ((?x33 (bvadd D N)))
(let (($x218 (= (_ bv18446744073709551600 64) (bvsub (bvadd (bvadd (_ bv18446744073709551600 64) D Ld0_x13 N) (bvand ?x170 (_ bv7 64))) ?x33))))
(let ((?x118 (bvsub ?x100 (bvsub (_ bv64 64) (bvmul (bvand (bvsub S D) (_ bv7 64)) (_ bv8 64))))))
(let ((?x113 (bvmul (bvand (bvsub S D) (_ bv7 64)) (_ bv8 64))))
(let ((?x114 (bvneg ?x113)))
(let ((?x172 (bvadd (_ bv18446744073709551600 64) D Ld0_x13 N)))
(let (($x109 (= (_ bv0 64) (bvsub (bvsub ?x100 ?x33) (_ bv0 64)))))
(let (($x204 (= (_ bv0 64) (bvsub (bvsub ?x170 D) (bvsub (bvadd (_ bv32 64) Ld0_x11 S) S)))))
(let (($x85 (= R0_x27 R0_x27)))
(let (($x83 (= R0_x26 R0_x26)))
(let (($x81 (= R0_x25 R0_x25)))
(let (($x79 (= R0_x24 R0_x24)))
(let (($x77 (= R0_x23 R0_x23)))
(let (($x75 (= R0_x22 R0_x22)))
(let (($x73 (= R0_x21 R0_x21)))
(let (($x71 (= R0_x20 R0_x20)))
(let (($x69 (= R0_x19 R0_x19)))
(let (($x67 (= R0_x18 R0_x18)))
(let (($x65 (= R0_x9 R0_x9)))
(let (($x63 (= R0_x8 R0_x8)))
(let (($x61 (= R0_x4 R0_x4)))
(let (($x59 (= R0_x3 R0_x3)))
(let (($x57 (= R0_x2 R0_x2)))
(let (($x56 (= R0_x1 R0_x1)))
(let (($x251 (and $x56 $x57 $x59 $x61 $x63 $x65 $x67 $x69 $x71 $x73 $x75 $x77 $x79 $x81 $x83 $x85 $x204 (= (_ bv18446744073709551600 64) (bvsub (bvsub ?x172 (_ bv0 64)) (bvsub ?x100 (_ bv0 64)))) (= (_ bv18446744073709551600 64) (bvsub (bvsub ?x172 ?x33) (_ bv0 64))) $x109 (= (_ bv48 64) (bvsub (bvsub ?x172 ?x114) ?x118)) $x218 (= (_ bv0 64) (bvsub (bvadd ?x100 (bvand ?x170 (_ bv7 64))) ?x33)) (= (bvand (bvsub ?x170 (_ bv0 64)) (_ bv7 64)) (_ bv0 64)) $x138 (bvsle (_ bv0 64) (bvsub ?x170 D)) (bvsle (_ bv18446744073709551585 64) (bvsub ?x170 ?x33)) (bvsge (_ bv18446744073709551600 64) (bvsub ?x170 ?x33)) (bvsle (_ bv0 64) (bvsub ?x170 (bvand (bvadd D (_ bv7 64)) (_ bv18446744073709551608 64)))) (bvsle (_ bv0 64) (bvsub (bvadd (_ bv32 64) Ld0_x11 S) S)) (bvsle (_ bv18446744073709551585 64) (bvsub (bvadd (_ bv32 64) Ld0_x11 S) (bvadd S N))) (bvsge (_ bv18446744073709551600 64) (bvsub (bvadd (_ bv32 64) Ld0_x11 S) (bvadd S N))) (bvsle (_ bv0 64) (bvsub ?x172 D)) $x239 (bvsle (_ bv16 64) (bvsub ?x100 D)) (bvsle (_ bv16 64) (bvsub ?x100 (bvand (bvadd D (_ bv7 64)) (_ bv18446744073709551608 64)))) (bvsle (_ bv18446744073709551601 64) (bvsub ?x170 ?x172)) (bvsge (_ bv0 64) (bvsub ?x170 ?x172)) (bvsle (_ bv18446744073709551585 64) ?x247) (bvsge (_ bv18446744073709551600 64) ?x247) (bvuge N (_ bv16 64)))))
(not $x251))))))))))))))))))))))))))))))))
(check-sat)
