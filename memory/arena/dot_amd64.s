#include "textflag.h"

// func dot8AVX2(a, b *int8, n int) int32
//
// Sixteen components a step: each side sign-extended to int16
// (VPMOVSXBW), multiplied and summed in adjacent pairs into int32 lanes
// (VPMADDWD, exact: |product| <= 2^14), two accumulators; the lanes are
// summed, then the last n mod 16 components one by one. Integer addition
// wraps the same way in any order, so this equals dotGo bit for bit.
TEXT ·dot8AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	VPXOR Y0, Y0, Y0
	VPXOR Y4, Y4, Y4

loop32:
	CMPQ CX, $32
	JL   step16
	VPMOVSXBW (SI), Y1
	VPMOVSXBW (DI), Y2
	VPMADDWD  Y1, Y2, Y3
	VPADDD    Y3, Y0, Y0
	VPMOVSXBW 16(SI), Y5
	VPMOVSXBW 16(DI), Y6
	VPMADDWD  Y5, Y6, Y7
	VPADDD    Y7, Y4, Y4
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $32, CX
	JMP       loop32

step16:
	CMPQ CX, $16
	JL   reduce
	VPMOVSXBW (SI), Y1
	VPMOVSXBW (DI), Y2
	VPMADDWD  Y1, Y2, Y3
	VPADDD    Y3, Y0, Y0
	ADDQ      $16, SI
	ADDQ      $16, DI
	SUBQ      $16, CX

reduce:
	VPADDD       Y4, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	VZEROUPPER

tail:
	TESTQ   CX, CX
	JZ      done
	MOVBQSX (SI), DX
	MOVBQSX (DI), BX
	IMULL   BX, DX
	ADDL    DX, AX
	INCQ    SI
	INCQ    DI
	DECQ    CX
	JMP     tail

done:
	MOVL AX, ret+24(FP)
	RET
