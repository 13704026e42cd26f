#include "textflag.h"

// Byte offsets of tables 0..7 within a group of eight (256 int16 each).
DATA tableOffsets<>+0(SB)/4, $0
DATA tableOffsets<>+4(SB)/4, $512
DATA tableOffsets<>+8(SB)/4, $1024
DATA tableOffsets<>+12(SB)/4, $1536
DATA tableOffsets<>+16(SB)/4, $2048
DATA tableOffsets<>+20(SB)/4, $2560
DATA tableOffsets<>+24(SB)/4, $3072
DATA tableOffsets<>+28(SB)/4, $3584
GLOBL tableOffsets<>(SB), RODATA|NOPTR, $32

// GROUP sums the eight table entries picked by code bytes off..off+7
// (tables off..off+7, which start at byte 512*off) into Y0. Each byte is
// widened to a lane, doubled and offset to its table's entry, the entries
// gathered as 32-bit words and their low halves sign-extended.
#define GROUP(off) \
	VPMOVZXBD    off(SI), Y1        \
	VPSLLD       $1, Y1, Y1         \
	VPADDD       Y8, Y1, Y1         \
	VPCMPEQD     Y7, Y7, Y7         \
	VPXOR        Y2, Y2, Y2         \
	VPGATHERDD   Y7, (off*512)(DI)(Y1*1), Y2 \
	VPSLLD       $16, Y2, Y2        \
	VPSRAD       $16, Y2, Y2        \
	VPADDD       Y2, Y0, Y0

// func codeSumsAVX2(t *[codeBytes][256]int16, code *uint64, n int, out *int32)
TEXT ·codeSumsAVX2(SB), NOSPLIT, $0-32
	MOVQ    t+0(FP), DI
	MOVQ    code+8(FP), SI
	MOVQ    n+16(FP), CX
	MOVQ    out+24(FP), DX
	VMOVDQU tableOffsets<>(SB), Y8

item:
	TESTQ  CX, CX
	JZ     done
	VPXOR  Y0, Y0, Y0
	GROUP(0)
	GROUP(8)
	GROUP(16)
	GROUP(24)
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, (DX)
	ADDQ         $32, SI
	ADDQ         $4, DX
	DECQ         CX
	JMP          item

done:
	VZEROUPPER
	RET
