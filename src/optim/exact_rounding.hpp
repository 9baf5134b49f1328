// Internal: included first by the optimizer kernels' files. Every rounding happens where the
// source says, as in torch's separate kernels: the fmas are explicit (madd), and the compiler must
// not fuse anything else (GCC fuses a * b + c by default, e.g. AdamW's p * (1 - lr * wd) into the
// add that follows). The build passes -ffp-contract=off too; this keeps the kernels exact in any
// build. It must come before the other includes: it applies to the functions after it.
#pragma once

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__) && !defined(NORMNET_FP_CONTRACT_OFF)
// GCC has no pragma that only sets contraction: #pragma GCC optimize also stops functions from
// other headers being inlined into these (std::experimental::fma became a call per vector, the
// Adam pass 1.5x slower). The build passes -ffp-contract=off and defines NORMNET_FP_CONTRACT_OFF.
#error "normnet's optimizer kernels need -ffp-contract=off (and NORMNET_FP_CONTRACT_OFF defined)"
#endif
