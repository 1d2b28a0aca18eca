#pragma once
// --precision. fp32 and fp64 store and compute in that type; bf16 and fp16 (mixed precision, on the
// host) keep 16-bit values where a 16-bit run stores them and compute in fp32 (docs/transformer.md
// "16-bit training state"): TransformerWorkloadConfig's fp64 and half (set_precision) say which.
// Half also names the 16-bit type of the products of kernels/gemm16.hpp. Free of Kokkos headers.
namespace pipebench::kernels {

enum class Precision { fp32, fp64, bf16, fp16 };
enum class Half { none, bf16, fp16 };

}  // namespace pipebench::kernels
