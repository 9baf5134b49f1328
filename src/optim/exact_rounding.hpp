// Internal: included first by the optimizer kernels' files. Every rounding happens where the
// source says, as in torch's separate kernels: the fmas are explicit (madd), and the compiler must
// not fuse anything else (GCC fuses a * b + c by default, e.g. AdamW's p * (1 - lr * wd) into the
// add that follows). The build passes -ffp-contract=off too; this keeps the kernels exact in any
// build. It must come before the other includes: it applies to the functions after it.
#pragma once

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
