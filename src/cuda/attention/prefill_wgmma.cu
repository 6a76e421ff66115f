// softmaxkit: attention_forward on the GPU, issue 7 stage 2: the FlashAttention recurrence on Hopper's warpgroup
// tensor-core product (wgmma, sm_90a) with TMA copies, f16/bf16 in, f32 accumulation, O in the input dtype and the
// f32 LSE. Same semantics as the mma.sync kernel (prefill.cu), which serves builds without sm_90a and other devices.
// The dispatcher's default on the H200 (attention_cuda.hpp, kPrefillKernelD64/D128); PrefillConfig selects variants.
//
// Work and traffic (as prefill.cu): per (batch, head) 4·S²·D flops (halved under a causal mask) against
// (2 + 2·S/Br)·S·D·2 bytes (Q read and O written once, K and V once per block of Br query rows, mostly from L2):
// about 1000 flops per DRAM byte at S = 4096, D = 128, far past the H200's ridge (≈ 790 TFLOP/s dense bf16 /
// 4.8 TB/s ≈ 165), so the floor is the tensor cores': 4·B·H·S²·D / 790e12 s, 1.39 ms at (4, 32, 4096, 128) full.
// Shared memory feeds wgmma: per key tile a warpgroup reads its Q rows and the K tile for Q·Kᵀ (A and B from shared
// memory) and the V tile for P·V (A from registers): at D = 128, 128-key tiles, 80 KB for 4.2 MFLOP, 52 flops per
// shared byte (44 with 64-key tiles), against about 24 that 128 bytes a clock need at the tensor peak.
//
// Structure (one CTA = Br = 64·kWG query rows of one (batch, head); warpgroup w owns rows 64w..64w+63):
//   Q, K and V tiles land in 128-byte-swizzled panels of 64 columns (ptx.cuh says the layout, which is both what
//   the TMA unit writes with CU_TENSOR_MAP_SWIZZLE_128B and what wgmma's descriptors read). K and V go through a
//   ring of 3 stages of kBlockN keys, tile j + 1 requested while tile j is used (3 stages because P·V of tile j − 1
//   still reads its V while Q·Kᵀ of tile j runs). Copies: TMA (kTma: one thread issues 4-D boxes, column × head ×
//   row × batch entry, on one mbarrier per stage; rows past Sk come back as zeros) or, for varlen, every thread's
//   cp.async (a box cannot stop at a packed sequence's end; cp.async zero-fills rows past it without reading them).
//   Per key tile j, each warpgroup:
//     issues S_j = Q·K_jᵀ (wgmma m64nBk16, B = kBlockN, D/16 steps) and O += P_{j−1}·V_{j−1} (wgmma m64nDk16, A = P
//     from registers, B = V MN-major: kBlockN/16 steps), two commit groups;
//     waits for S_j only, and runs the online softmax of tile j (mask, row max over the quad, ex2, row sums, P_j
//     rounded to 16 bits into the A layout) while P·V of tile j − 1 is still on the tensor cores (so the design;
//     in SASS only where kOverlap's step_ov runs, the D = 128 default's tiles before the causal diagonal and, under
//     a causal mask, the first tile that crosses it: sessions 14, 15 and 16 below);
//     waits for P·V, then rescales O by 2^(m_old − m_new) (skipped by warp vote when no row max of the warp moved).
//   One __syncthreads per tile frees the stage tile j + 1 overwrites (every warpgroup has waited for P·V of j − 2).
//   The final (m, l) becomes an OnlineSoftmaxState, which merges the sink (if any), gives the LSE and the factor
//   that normalises O: the same state algebra as every other op. O is stored from the accumulator fragments.
// Rounding: the same operations as prefill.cu per row (f32 scores, the fold, ex2.approx, P rounded to 16 bits, f32
// sums), but the tensor cores sum a row's products in another order, so the bits differ from prefill.cu's; the
// variants with the same key-tile size give the same bits, TMA or cp.async (the tests check it).
// NaN and padding: keys past the sequence are zeros (TMA's out-of-bounds fill, cp.async's zero-fill) and a masked
// score is −inf whatever K holds. In the key tile that crosses a warpgroup's causal diagonal (on the TMA path with
// its rows past the CTA's last visible key, which the box loads) a non-finite V row would reach a row that may not
// see it as P = 0 times NaN or inf: the warpgroup scans those V rows while its products run, and where it finds one
// it takes that tile's P·V by prefill_exact_pv.cuh's exact_pv, which skips the keys each row may not see.
//
// Measured on the H200 (tune_prefill and scripts/bench_sdpa.py in one call, runs of bf05fb3 and 930081a, bf16,
// 2026-11-30 06:05 and 06:13 UTC; docs/perf-notebook.md, "session 6 — pfx2", docs/bench/prefill-pfx2-s6-2026-11-30.md):
// the D = 128 default with TMA (the producer warpgroup, ping-pong, 128-key tiles) 589-629 TFLOP/s over seven timings
// at B=4, H=32, S=4096, D=128, full (0.75-0.80 of the 790 peak; 1.72x SDPA FLASH's 351-353, 0.90-0.93x cuDNN's
// 656-671); causal, with this file's consumer-side scan, 494.3 / 499.3 / 493.9 (0.91-0.92x cuDNN's 541-543);
// B=1, H=32, S=16384 causal 597.3 / 599.6 / 604.2 (0.92-0.95x cuDNN's 635-650). The 64-key producer variant (session
// 5's default) 519-531 full, 415-432 causal; two warpgroups × 128 keys 477-503 full. D = 64 (two warpgroups, 64-key
// tiles) 361-387 at B=16, H=16, S=2048 (0.85-0.89x cuDNN's 434). The non-finite-V check costs nothing measurable
// without a causal mask and about 5 % at S = 4096 causal (consumer-side scan against the check compiled out: 496
// against 522), within the spread at S = 16384. Registers (ptxas -v, CUDA 13.0): the producer variant enters with
// 168 a thread (the 384-thread launch bound) and its consumers use 218 (128-key tiles) or 154 (64-key) after
// setmaxnreg, no spill; two warpgroups × 128 keys 233 with TMA, 249 with cp.async; D = 64 two warpgroups 128
// (bounded, kMinCtas).
// Session 6 (pfx2): 128-key tiles under the producer warpgroup (session 5 measured them at 247.6 with ptxas holding
// the consumers to 168 registers: a trap in mbar_wait, reachable after setmaxnreg, was why). Tried and withdrawn
// after its second H200 run: the diagonal tiles' V scanned by the producer warpgroup's idle warps instead of the
// consumers (docs/perf-notebook.md, session 6, pfx2: 2.7 % on the causal row against 4.9 %, but its scanning warps
// waited on a stage's full barrier more than one phase ahead and read a tile before it landed, a NaN leak the test
// caught once in two runs).
// Session 8 (pfx8): the SASS of every build showed ptxas placing the P·V wait (WARPGROUP.DEPBAR.LE gsb0, 0) above
// the softmax's maxima and exponentials (the PTX had it after them; empty asm on registers orders nothing in SASS):
// the softmax of tile j never ran under P·V of tile j − 1. kPin pins it (ptx.cuh keep_ahead_of_wait: a shared store
// predicated on the row sums, which ptxas keeps ahead of the wait): in the pinned SASS all 66 (128-key tiles) or 34
// (64-key) MUFU.EX2 of a step sit between the two waits, registers unchanged (217 for the D = 128 default).
// Built beside the unpinned kernels for kPrefillWgmmaPinned's variants (PrefillConfig::pin_softmax). Measured (H200
// runs of 5b9391e and 14044dd, 2026-11-30 10:12 and 10:18 UTC, tune_prefill three passes each, bf16;
// docs/perf-notebook.md "session 8 — pfx8", docs/bench/pfx8-s8-2026-11-30.md): not faster. The D = 128 default
// 607.9 / 646.5 / 623.0 TFLOP/s unpinned against 599.7 / 637.5 / 614.4 pinned at B=4, H=32, S=4096 full, 1-7 % slower
// on the causal rows; at D = 64 even. So off by default; why ptxas's order costs nothing is not known.
// Also new: three consumer warpgroups under the producer at D = 64 (warps = 13, 192 query rows a CTA,
// FlashAttention-3's layout for that head dimension), 160 registers a consumer, P packed after the P·V wait
// (kLatePack): 158 registers with 128-key tiles (8 words of spill outside the hot loop, in the diagonal tiles' code;
// 64-key tiles, 130 registers, were built and dropped: 362.7-377.5). Measured: 430.7 / 430.1 / 431.2 at B=16, H=16,
// S=2048 full (run 1; 415.0 / 421.0 / 408.5 in run 2) against 380.6 / 401.0 / 376.3 for two warpgroups × 64 keys and
// cuDNN's 454.2 / 451.1 / 454.1 in the same call (0.95x); 498.0 against 398.3 at S = 8192 full, 468.5 against 399.3
// at S = 16384 causal; slower on short rows (246.7 against 280.1 at S = 512 full, 288.7 against 304.4 at S = 2048
// causal), which keep two warpgroups (attention_cuda.hpp, kPrefillWgmmaD64Three*). The D = 128 default against cuDNN
// in run 1: 0.94-1.03x full, 0.88-0.92x causal at S = 4096, 0.89-1.04x at S = 16384 causal (three timings each side).
// Session 9 (pfx9; H200 run of d3b2984, 2026-11-30 12:38 UTC, tune_prefill four passes, two in reverse column
// order, bf16; docs/perf-notebook.md "session 9 — pfx9", docs/bench/pfx9-s9-2026-11-30.md). Floor of the causal
// rows (4·B·H·S²·D / 2 at 790 TFLOP/s): 0.70 ms at (4, 32, 4096, 128), 1.39 ms at (1, 32, 16384, 128); with
// 128 × 128 tiles a CTA computes its whole diagonal tile, 3.1 % more products than the mask keeps at S = 4096.
// The trimmed diagonal (a.trim, on): a warpgroup none of whose rows sees a 128-key tile's last 64 keys (the first
// warpgroup's diagonal tile when Sq = Sk) runs P·V over the first 64 only and scans only those V rows: half the
// scan and 1/4 of that warpgroup's diagonal products (S stays whole: pv_half says why); 225 registers a consumer
// (was 217), no spill. (4, 32, 4096, 128) causal 477.0 against 465.9 TFLOP/s (+2.4 %, mean of four passes, ahead
// in each), (1, 32, 16384, 128) causal +1 %. The causal schedule (prefill_args.hpp, a.chunk_heads) was timed in
// the same run and is off (within the spread). cuDNN in the same call: 541-560 causal at S = 4096 (ours 472-485,
// 0.84-0.90x), 590-645 at S = 16384 (ours 575-626), 631-642 full at S = 4096 (ours 553-634: within a pass the
// clock falls about 12 % after two or three columns of the full row, so position decides more than the kernel).
// Not in this version: a ring deeper than one tile ahead, S over half a trimmed tile (m64n64k16 beside m64n128k16
// on the same registers made ptxas serialise every product, C7515).
// Session 10 (pfx10): S_{j+1} ahead (kAhead, PrefillConfig::s_ahead; built for the D = 128 default only, TMA),
// measured slower and removed after the review (F16): its design, SASS reading, profile and code stay in b1e44d1
// and docs/perf-notebook.md (pfx10).
// Read in the SASS of the default first: the loop body of a 128-key tile is 820 instructions a consumer warp (16
// HGMMA, 66 MUFU.EX2; about 525 run on a tile with no mask and no rescale), and the P·V wait sits above the row
// maxima (pfx8), so within a warpgroup the softmax ran under no product. kAhead issues S_{j+1} = Q·K_{j+1}ᵀ into a
// second accumulator before tile j's softmax, keeps the softmax ahead of that wait (keep_ahead_of_wait, as kPin),
// waits, rescales O and issues P_j·V_j, waits, and moves S_{j+1} into s (64 moves a tile). Built first with the
// two arrays swapping roles by a tile's parity (no moves): ptxas spilled 72-272 bytes and serialised every product
// (C7512 / C7515); P_j·V_j left in flight under the next softmax (FlashAttention-3's order) would need O, P and
// both S at once (224 registers of data against 240). In SASS (CUDA 13.0): the 66 MUFU.EX2 between S_{j+1}'s issue
// and its wait, up to R236, no spill. The same bits as the default (every O is ((O·α_j) + P_j·V_j) in order).
// Measured (H200 run of b1e44d1, 2026-11-30 14:59 UTC, scripts/sdpa_interleaved.py --ahead: the default, the
// variant, cuDNN and FLASH interleaved in one process, 16 rounds, bf16; docs/bench/pfx10-s10-2026-11-30.md):
// slower. Variant / default at (4, 32, 4096, 128) full 543.4 / 587.2 TFLOP/s (0.929 of it, 0.870-0.971 by round),
// causal 465.2 / 518.5 (0.902), (1, 32, 16384, 128) causal 599.7 / 594.8 (1.003, 0.888-1.078). Nsight Compute at
// the full row (one launch each): tensor pipe active 68.5 % of cycles for the default against 63.6 %; its gmma
// stall went (0.36 → 0.03 cycles an issued instruction) but the default's warps wait mostly on their own
// dependency chains ("wait" 1.50) and the ping-pong barrier (0.81), with 2.2 warps a scheduler and 39 % of issue
// slots used, so hiding the products' latency inside a warpgroup buys nothing and the 64 moves cost. Off,
// then removed (above). The default against cuDNN in the same run: 0.920 full, 0.881 causal at S = 4096, 1.040 at
// (1, 32, 16384, 128) causal, 0.949 at (16, 16, 2048, 64) full.
// Session 11 (pfx11): kChains (PrefillConfig::short_chains; the D = 128 and D = 64 defaults, TMA: 4 kernels more,
// 34 in the file then): the row max and the row sum as balanced trees (tree_reduce), dependent depth 19 → 7 FMNMX and
// 32 → 5 FADD a row, the softmax's longest fixed-latency chain 67 → 23 (SASS of the D = 128 bf16 build, CUDA 13.0). No
// spill at D = 128 (the D = 64 build spilled its default's 40 bytes), no C7512 / C7515; the 30 other kernels' SASS
// unchanged. Another summation order: other bits than the default's, deterministic and batch-invariant. Measured
// (H200 run of 087be37, 2026-11-30 16:51 UTC, scripts/sdpa_interleaved.py --chains, 12 rounds, bf16;
// docs/bench/pfx11-s11-2026-11-30.md): variant / default 0.994 (0.949-1.020 by round) at (4, 32, 4096, 128) full,
// 0.993 causal, 1.000 at (16, 16, 2048, 64) full, 1.041 (0.939-1.135) at (1, 32, 16384, 128) causal; Nsight Compute
// at the full row: 1.72 ms both, tensor pipe 68.4 / 68.5 %, "wait" stall 1.54 / 1.50. Off, then removed after the
// session's review (F16); 087be37 has its code. Why it did not help: the chains were not what bound the
// loop. The stall counts ptxas writes into the control words (read from the SASS) give the mask-free tile's issue
// schedule a warp: 525 instructions, 1162 cycles of fixed stalls (the variant 1202), of which the 64 FMNMX of the
// row maxima take about 130 (the ALU pipe's throughput, two cycles each, tree or chain), the 66 MUFU.EX2 521 (the
// MUFU pipe's throughput, about eight cycles each: every other instruction of that stretch fills its gaps), and the
// 17 HGMMA with their uniform descriptor arithmetic 266, before the ping-pong's arrive. The profile's "wait" stall
// is those counts, not dependency chains: the levers left are fewer MUFU (exponentials partly on the FMA pipe) and
// cheaper product issue (docs/perf-notebook.md, "session 11 — pfx11").
// Session 12 (pfx12): kPoly (PrefillConfig::poly_exp2; the two TMA defaults and their cp.async kernels: 8 kernels
// more, 38 then), a fixed quarter of the softmax's exponentials (the n-tiles t ≡ 3 mod 4: 16 of a thread's 64) as a
// polynomial on the FMA pipe (exp2_poly.hpp: clamp at −127 keeping NaN, floor by a round-down add against 1.5·2^23,
// minimax p with p(0) = 1, degree 3 for bf16 (8.57e-5 relative) and 4 for f16 (2.96e-6), 2^j through the exponent
// field; +0 below −126 as ex2.approx.ftz; checked against float64 on the CPU). Counted before the run (SASS of the
// D = 128 bf16 TMA build, CUDA 13.0, control-word stalls along the mask-free tile's path): 661 instructions and
// 1099 cycles a warp against the default's 532 and 1182, the first-to-last MUFU stretch 411 cycles against 521 (50
// MUFU.EX2, issue-bound now); no new spill, no C7512 / C7515, the 30 other kernels' SASS unchanged. Measured (H200 run
// of 47db8d0's binaries, 2026-11-30 19:15 UTC, scripts/sdpa_interleaved.py --poly, 12 rounds, bf16;
// docs/bench/pfx12-s12-2026-11-30.md): slower. Variant / default 0.948 (0.877-0.984 by round) at (4, 32, 4096, 128)
// full, 0.948 causal, 0.902 (0.894-0.910) at (16, 16, 2048, 64) full, 1.015 (0.907-1.067) at (1, 32, 16384, 128)
// causal. Nsight Compute at the full row: 1.74 → 1.83 ms, tensor pipe 68.5 → 65.0 %; the warps' "wait" stall 1.50 →
// 0.86 and the barrier's 0.81 → 0.56 (the MUFU's rate no longer paced a warp), but dispatch stalls 0.34 → 0.62 and
// not-selected 0.27 → 0.46, issue slots used 39.4 → 45.6 %. In all, 5.58 → 4.85 cycles between a warp's issues
// against 22 % more instructions issued (the loop's 532 → 661): a warp's tile is about 5.58 × 532 ≈ 2970 cycles, not
// the schedule's 1182, so removing MUFU-paced waits buys less than the 129 extra instructions cost, at about 4.9
// cycles each when the SMSP's warps (two consumer warps an SMSP, three at D = 64, which lost most) compete for the
// issue slot. The default's MUFU pipe is 35 % busy (pipe_xu), so its rate was never the kernel's limit. Tests
// (reference with the polynomial's error in the bound, varlen, bitwise / batch invariance, TMA against cp.async,
// non-finite V), memcheck and racecheck passed. Removed; 46ce98c has its code (docs/perf-notebook.md,
// "session 12 — pfx12").
// Session 14 (pfx14): kLean (built for the two TMA defaults, f16 and bf16: 4 kernels more, 34 then), the tile loop's
// product issue with fewer instructions and the same bits. Counted first (SASS of the D = 128 bf16 default, CUDA 13.0
// ptxas, cuobjdump 13.x): the mask-free tile's loop body is 826 instructions a consumer warp, 105 of them on the
// uniform datapath (UMOV 25, UIADD3.64 20, ULEA.HI 14, ULOP3 11, ...): each of the 16 products had its descriptors
// rebuilt from the shared-memory address, 3-5 uniform instructions (desc_add's 64-bit add of (stage · kStage +
// offset) >> 4 split into ULEA.HI, UMOV, UIADD3.64, and the high word's UMOV). kLean took each stage's K and V
// descriptor once a tile as an opaque 64-bit value (a non-volatile mov.b64 asm, so that the compiler could not fold
// the stage's offset back into every product) moved by one UIADD3.64 per product: the loop body 826 → 774
// instructions (uniform 105 → 53), the ping-pong turn's product issue (BAR.SYNC to BAR.ARV) 102 → 62 instructions and
// 295 → 243 cycles of control-word stalls; D = 64, three consumer warpgroups: 774 → 730, 89 → 45, 82 → 50, 235 → 173.
// Registers, spills and the 30 other kernels' SASS unchanged. Measured (H200 run of 09c0fde's binaries, 2026-12-01
// 00:15 UTC, tune_prefill SMK_TUNE_PFX14=1: the dispatcher's kernel before / kLean / before again interleaved, 20
// rounds, bf16; docs/bench/pfx14-s14-2026-11-30.md): kLean / before 1.002 (0.977-1.027 by round) at (4, 32, 4096,
// 128) full, 1.000 (0.975-1.009) causal, 1.007 (0.980-1.026) at (16, 16, 2048, 64) full, 1.000 (0.923-1.100) at
// (1, 32, 16384, 128) causal, against before-again / before 0.996-0.999: even, so removed (09c0fde has its code, its
// tests WgmmaLeanIssue* and tune_prefill's SMK_TUNE_PFX14). 50 uniform instructions fewer a tile bought nothing
// measurable: the uniform datapath's issue is not what the SMSP's warps wait for.
// Read on the way (the same SASS): P·V of tile j − 1 does not run under tile j's softmax within a warpgroup, in
// this kernel as it stands. The P·V branch (none on the first tile, or where exact_pv takes the tile) is followed by
// one commit, which ptxas closes with an empty HGMMA 64x8x16 group at the join on every tile; so wgmma_wait<1>
// ("S_j is in registers; P·V may still run") leaves only that empty group pending, and P·V is complete before the
// softmax starts (the overlap is the two warpgroups' turns only). kLean's first form committed inside each branch
// (the empty group only where no P·V): P·V then ran on under the softmax, and ptxas gave the softmax's temporaries
// R152-R155, P's registers that P·V was still reading. The H200 run of 0851d44 timed that form at 1.062
// (1.038-1.079) at (4, 32, 4096, 128) full, 1.037 causal, 1.018 at D = 64, 1.056 at 16384 causal (before-again /
// before 0.991-1.000), and its bitwise test against this kernel failed under compute-sanitizer memcheck (O's bits
// moved with the timing; it passed without): a race, not shipped (2856786 has it). A P·V with no branch around it
// (the first tile peeled) made ptxas serialise every product (C7513). So a P·V that truly overlaps the softmax looks
// worth a few per cent, but needs P in registers ptxas cannot hand out under it (docs/perf-notebook.md, pfx14).
// Session 15 (pfx15): kOverlap, the default for D = 128 (kPrefillWgmmaOverlapForm; the 128-key producer kernel, TMA):
// step_ov runs P·V of tile j − 1 under tile j's softmax on the tiles before a warpgroup's first causal crossing,
// tile 0 peeled, the loop unrolled by two with P and pn swapping roles. Counted first: a warpgroup's products of one
// 128-key tile at D = 128 are 2 · 2 · 64 · 128 · 128 = 4.2 MFLOP, about 1230 cycles of an SM's tensor cores at the
// 790 TFLOP/s peak (1.75 GHz), half of it P·V; the measured tile took about 3490 cycles a pair of warpgroups (557
// TFLOP/s), so the softmax and its waits, ~2260 cycles a warpgroup, ran after the whole product: hiding P·V's ~615
// cycles under it could shorten a warpgroup's turn by up to ~18 %, bounded by the two warpgroups' products sharing
// the tensor cores (2 · 1230 a pair); pfx14's racy form gave 1.02-1.06. Five things made ptxas serialise every
// product (C7515) or keep the overlap from happening, each read in the PTX or the SASS and removed: the softmax's
// in-place updates of S (in PTX, the registers the stage's products named: S now in registers of its own, the
// softmax on an opaque copy), s's zeroing sunk below the peeled tile's wgmma.fence (pinned by fence_regs), an empty
// second commit group with no branch before it (the peeled tile waits for Q·Kᵀ alone, kFirst), the compiler knowing
// j ≥ 1 after the peel (the checked loop's P·V branch reshaped: j = 1 opaque; the unchecked step loop left out), and
// the P·V wait placed above the exponentials (the row sums pinned ahead of it, keep_ahead_of_wait). SASS (CUDA 13.0,
// bf16 and f16): no C7515; in each of step_ov's three copies the 66 MUFU.EX2 run between P·V's issue and the DEPBAR
// that retires it (about 610-630 instructions) and nothing writes P·V's A or accumulator registers there (pfx14's
// race); 168 registers at entry, no spill; the loop body 797 instructions a tile (the default's 827 with its empty
// HGMMA group). Measured (H200 run of 2430dcc's binaries, 2026-12-01 02:47 UTC, tune_prefill --pfx15: the kernel
// before and kOverlap interleaved, 16 rounds, bf16; docs/bench/pfx15-s15-2026-12-01.md): 1.078 (0.992-1.217 by
// round) at (4, 32, 4096, 128) full, 1.059 (1.027-1.081) causal, 1.057 (1.022-1.088) at (8, 32, 4096, 128) causal,
// 1.068 (1.042-1.106) at (1, 32, 16384, 128) causal; the kernel before against itself 0.985-1.001. The same bits
// (the same operations on the same values; the bitwise test against the kernel before ran under memcheck and
// racecheck too). Measured and removed (2430dcc has them): P packed after the P·V wait into the registers P·V read
// (kLatePack's order, no second P), 0.981-0.999 at D = 128 and 0.959 / 0.940 at D = 64 (three warpgroups, where a
// second P does not fit in 160 registers): the 32 packs after the wait sit on the turn's critical path. D = 64 keeps
// the kernel before.
// Session 16 (pfx16): kOvDiag (form 4, the default under a causal mask: kPrefillWgmmaOverlapFormCausal), the first
// tile that crosses a warpgroup's causal diagonal by step_ov too. Counted first: with Sq = Sk, 128-row CTAs and
// 128-key tiles each warpgroup of CTA i (of S/128) has i + 1 tiles, its last the only crossing one, and form 2 ran
// P·V under the softmax for i − 1 of them (tiles 1 .. i − 1); kOvDiag adds tile i. At S = 4096 that is 465 → 496 of
// 528 P·V a warpgroup's head (5.9 % of them), at 16384 8001 → 8128 of 8256 (1.5 %), at 2048 105 → 120 of 136
// (11 %). pfx15's gain over form 1 (1.059 at (4, 32, 4096, 128) causal for 465 overlaps) is ~0.07 of a tile's time
// an overlap, so predicted +0.4 % at S = 4096, +0.1 % at 16384, +0.7 % at 2048. The P·V issued there is the previous
// (unchecked) tile's, never exact_pv nor trimmed, so no branch surrounds it; the crossing tile's trim vote and V scan
// run after its softmax, under P·V (as step's scan does). SASS (CUDA 13.0, bf16 and f16): 168 registers, no spill,
// no C7513 / C7515; 6 stretches (2 more than form 2: the crossing step_ov when the tiles before it are odd and even)
// with the 66 MUFU.EX2 between P·V's issue and its DEPBAR, and no instruction in them writing P·V's A or
// accumulator registers; the 32 other kernels unchanged. Measured (H200 runs of 2a5e68f's binaries, tune_prefill
// --pfx16, 60 rounds in all, bf16): form 4 / form 2 1.008 at (4, 32, 4096, 128) causal, 1.004 at (8, 32, 4096, 128)
// causal, 1.005 at (1, 32, 16384, 128) causal, 1.014 at (8, 32, 2048, 128) causal, 0.995 at (4, 32, 4096, 128) full
// (the same loop: full launches keep form 2); form 2 against itself 0.991-1.002 (kPrefillWgmmaOverlapFormCausal
// gives the intervals). The same bits (WgmmaPvOverlapGivesTheSameBits; memcheck and racecheck clean). Also built and
// measured: D = 64 with two consumer warpgroups and step_ov (warps 9, 128-key tiles): 0.81-0.88 of the
// three-warpgroup default (attention_cuda.hpp); removed (2a5e68f has it).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cuda/attention/prefill_args.hpp"
#include "cuda/attention/prefill_exact_pv.cuh"
#include "cuda/attention/ptx.cuh"
#include "cuda/attention/tma_map.hpp"
#include "softmaxkit/core/online_state.hpp"
#include "softmaxkit/cuda/runtime.hpp"

namespace smk::cuda {

namespace {

constexpr float kLn2 = 0.6931471805599453f;  // base-2 units back to natural ones
constexpr int kStages = 3;                   // see the opening comment

// Which form of the tile loop later launches take (prefill_args.hpp's prefill_wgmma_set_pv_form): 0 the default
// (kPrefillWgmmaOverlapForm, kPrefillWgmmaOverlapFormCausal under a causal mask), 1 P·V done before the softmax (the
// kernel before session 15), 2 P·V under the softmax (kOverlap; built for the D = 128 TMA default, warps 9, 128-key
// tiles), 4 form 2 with each warpgroup's first causal crossing tile by step_ov too (kOvDiag; the same build only).
// Another variant asked for form 2 or 4 runs its usual build: every form gives the same bits.
std::atomic<int> g_pv_form{0};
std::atomic<std::int64_t> g_overlap_launches{0};  // kOverlap kernels launched (prefill_wgmma_overlap_launches)
std::atomic<std::int64_t> g_ov_diag_launches{0};  // of them kOvDiag (prefill_wgmma_ov_diag_launches)
// The default form: 2, P·V under the softmax. Measured (H200 run of 2430dcc's binaries, 2026-12-01 02:47 UTC,
// tune_prefill --pfx15, 16 interleaved rounds, bf16; docs/bench/pfx15-s15-2026-12-01.md): form 2 / form 1 1.078
// (0.992-1.217 by round) at (4, 32, 4096, 128) full, 1.059 (1.027-1.081) causal, 1.057 (1.022-1.088) at (8, 32,
// 4096, 128) causal, 1.068 (1.042-1.106) at (1, 32, 16384, 128) causal; form 1 against itself 0.985-1.001.
constexpr int kPrefillWgmmaOverlapForm = 2;
// The default form under a causal mask: 4, the crossing tile under the overlap too (without a mask no tile crosses,
// and form 4 runs form 2's loop in another build). Measured (H200 runs of 2a5e68f's binaries, 2026-12-01 05:04 and
// 05:06 UTC, tune_prefill --pfx16: forms 2, 4 and 2 again interleaved, 24 + 36 rounds, bf16;
// docs/bench/pfx16-s16-2026-12-01.md): form 4 / form 2, median of the per-round ratios of the 60 rounds (90 %
// bootstrap interval of that median): 1.008 (1.006-1.011) at (4, 32, 4096, 128) causal, 1.004 (0.999-1.009) at (8,
// 32, 4096, 128) causal, 1.005 (1.003-1.007) at (1, 32, 16384, 128) causal, 1.014 (1.014-1.016) at (8, 32, 2048, 128)
// causal; form 2 against itself 0.991-1.002. On the full row (4, 32, 4096, 128), where both run the same loop, 0.995
// (0.991-0.999): so full launches keep form 2.
constexpr int kPrefillWgmmaOverlapFormCausal = 4;
int pv_form(bool causal) {
  const int f = g_pv_form.load(std::memory_order_relaxed);
  return f != 0 ? f : causal ? kPrefillWgmmaOverlapFormCausal : kPrefillWgmmaOverlapForm;
}

// Byte offset of the 16-byte chunk `ch` (of D/8) of row `row` in a [kRows][D] tile stored as 128-byte-swizzled
// panels of 64 columns (kRows·128 bytes each).
template <int kRows>
__device__ __forceinline__ std::uint32_t sw128_offset(int row, int ch) {
  return static_cast<std::uint32_t>((ch >> 3) * (kRows * 128) + row * 128 + (((ch & 7) ^ (row & 7)) << 4));
}

// Copies `valid` rows (≤ kRows) of a [kRows][D] tile from global (row stride `stride` elements) into the swizzled
// shared tile at byte address `s`, zero-filling the rest without reading them. Thread t copies chunk t % (D/8) of
// rows t / (D/8) + i·kRowStep; kRowStep is a multiple of 8, so the swizzle is the same in every pass.
template <typename T, int D, int kRows, int kThreads>
__device__ __forceinline__ void copy_tile(std::uint32_t s, const T* g, std::int64_t stride, int valid) {
  constexpr int kChunks = D / 8;
  constexpr int kRowStep = kThreads / kChunks;
  static_assert(kThreads % kChunks == 0 && kRowStep % 8 == 0 && kRows % kRowStep == 0, "tile copy geometry");
  const int row = static_cast<int>(threadIdx.x) / kChunks, ch = static_cast<int>(threadIdx.x) % kChunks;
  const std::uint32_t dst = s + sw128_offset<kRows>(row, ch);
  const T* p = g + row * stride + ch * 8;
  const std::int64_t step = kRowStep * stride;
#pragma unroll
  for (int i = 0; i < kRows / kRowStep; ++i, p += step) {
    const bool ok = row + i * kRowStep < valid;
    ptx::cp_async_16(dst + i * kRowStep * 128, ok ? p : g, ok ? 16 : 0);
  }
}

// The TMA path's tensor maps (host-encoded per call, passed by value): Q with boxes of the CTA's rows, K and V with
// boxes of one key tile, each box 64 columns × 1 head × rows × 1 batch entry, 128-byte swizzle.
struct PrefillMaps {
  CUtensorMap q, k, v;
};

// kBlockN keys per tile, 64 or 128: S of one warpgroup is kBlockN / 2 f32 registers a thread. kTma: Q, K and V
// arrive by TMA on mbarriers (one thread issues them), else by every thread's cp.async (varlen always: a box would
// read the next sequence's rows past this one's end, where cp.async zero-fills).
// kWS (with kTma, two warpgroups): warp specialisation. A third warpgroup is the producer (one lane issues every TMA
// copy, waiting on per-stage "empty" mbarriers that the consumer warps arrive on once their products have read a
// stage), and the two consumer warpgroups no longer meet at a per-tile __syncthreads: they take turns issuing their
// tensor-core products (named barriers 1 and 2, FlashAttention-3's ping-pong), so that one's softmax runs under the
// other's products. Registers: 384 threads at one CTA an SM enter with 168 a thread (the launch bound); setmaxnreg
// moves them, the producer down to kProducerRegs and the consumers up to kConsumerRegs (128·24 + 256·240 ≤ 64512),
// and ptxas allocates the consumers' code within the raised count only if no trap is reachable there (ptx.cuh's
// mbar_wait): 218 registers a consumer thread with 128-key tiles, 154 with 64, no spill (CUDA 13.0, session 6).
// Three consumer warpgroups (kWG = 3, 512 threads, 128 registers a thread at entry; session 8, pfx8, the
// FlashAttention-3 layout for D = 64): the producer down to 24, the consumers up to 160 (128·24 + 384·160 = 64512).
// There S_j stays in f32 across the P·V wait and is packed into P's registers after it (kLatePack), so a consumer
// holds O + S + one P, not two.
constexpr int kProducerRegs = 24;
template <int kWG>
constexpr int kConsumerRegs = kWG == 3 ? 160 : 240;
// CTAs an SM the registers must allow: two at D = 64 with two warpgroups (64 KB of shared memory each; at 131
// registers a thread, as the build of 19a3913 gave, only one fits, and the H200 run of 19a3913 measured 268 against
// 382 TFLOP/s at B=16, H=16, S=2048), else one (shared memory allows no more at D = 128, two warpgroups).
// (With 128-key tiles two such CTAs exceed an SM's shared memory: the cp.async kernel that the producer variant
// with 128-key tiles falls back to, session 8, takes one, and its registers.)
template <int D, int kWG, int kBlockN, bool kWS>
constexpr int kMinCtas = (D == 64 && kWG == 2 && kBlockN == 64 && !kWS) ? 2 : 1;
// kOverlap (session 15, pfx15; with kWS, two consumer warpgroups): the tiles before the warpgroup's first causal
// crossing, from the second on, take step_ov below, where P·V of tile j − 1 truly runs under tile j's softmax, the two
// P arrays swapping roles in the loop unrolled by two.
// kOvDiag (session 16, pfx16; with kOverlap): the first crossing tile takes step_ov too (P·V of the tile before it,
// an unchecked tile, has no branch around it), with the crossing tile's scan after its softmax.
template <typename T, int D, int kWG, int kBlockN, bool kTma, bool kWS = false, bool kPin = false,
          bool kOverlap = false, bool kOvDiag = false>
__global__ void __launch_bounds__(kWG * 128 + (kWS ? 128 : 0), (kMinCtas<D, kWG, kBlockN, kWS>))
    prefill_wgmma_kernel(const PrefillArgs a, const __grid_constant__ PrefillMaps maps) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(!kWS || (kTma && (kWG == 2 || kWG == 3)), "the producer warpgroup feeds 2 or 3 warpgroups by TMA");
  static_assert(!kOverlap || (kWS && !kPin), "step_ov: the producer variants only");
  static_assert(!kOvDiag || kOverlap, "kOvDiag extends kOverlap's step_ov");
  // P packed from S after the P·V wait (three consumer warpgroups: registers), else during the softmax into a
  // second P (kConsumerRegs says why; both give the same bits).
  constexpr bool kLatePack = kWG == 3;
  static_assert(!(kWG == 3 && kOverlap), "three consumer warpgroups have no registers for a second P");
  constexpr int kThreads = kWG * 128;  // the consumers (and, without kWS, the copiers)
  constexpr int kBlockM = 64 * kWG;
  constexpr int kNT = kBlockN / 8;  // 8-column n-tiles of S
  constexpr int kDT = D / 8;        // n-tiles of O
  constexpr std::uint32_t kQBytes = kBlockM * D * sizeof(T);
  constexpr std::uint32_t kKVPanel = kBlockN * 128;            // one 64-column panel of a K or V tile
  constexpr std::uint32_t kTile = kBlockN * D * sizeof(T);     // a K (or V) tile; a stage is K then V
  constexpr std::uint32_t kStage = 2 * kTile;
  static_assert(D == 64 || D == 128, "head dims 64 and 128");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // Swizzle atoms must start on 1024-byte boundaries: the host adds 1 KB, the tiles start at the first boundary
  // past the (kStages + 1) 8-byte mbarriers of the TMA path (one per stage: its tile's K and V landed; then Q's).
  // Not one byte more: at D = 128 two CTAs of one warpgroup fill an SM's 228 KB exactly.
  const std::uint32_t bar_addr = ptx::smem_addr(smem_raw);
  const std::uint32_t q_addr = (bar_addr + 8u * (2 * kStages + 1) + 1023u) & ~1023u;
  const std::uint32_t kv_addr = q_addr + kQBytes;
  if (q_addr - bar_addr > 1024u) __trap();  // a base 8-31 bytes short of a boundary: never seen (it is 1024-aligned)
  const auto full_bar = [&](int stage) { return bar_addr + 8u * static_cast<std::uint32_t>(stage); };
  const std::uint32_t q_bar = full_bar(kStages);
  const std::uint32_t pin_addr = bar_addr + 8u * (2 * kStages + 1);  // kPin's word, past the barriers
  // kWS: stage st is free again once every consumer warp arrived (after its P·V of the stage's tile completed).
  const auto empty_bar = [&](int stage) { return bar_addr + 8u * static_cast<std::uint32_t>(kStages + 1 + stage); };

  // The warpgroup, broadcast from lane 0 so that ptxas knows it is warp-uniform (else every wgmma after a branch
  // on it counts as divergent and is serialised, C7520).
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 128, 0);
  const int warp = (static_cast<int>(threadIdx.x) % 128) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32, g = lane / 4, c = lane % 4;
  PrefillBlock<T> blk;  // prefill_args.hpp: the CTA's rows, lengths, visible keys and base pointers
  if (!prefill_block<T>(a, kBlockM, blk)) return;
  const int b = blk.b, h = blk.h;
  const std::int64_t m0 = blk.m0, q0 = blk.q0, sq = blk.sq, sk = blk.sk;
  const int hk = blk.hk;
  const int n_tiles = static_cast<int>((blk.kend + kBlockN - 1) / kBlockN);  // tiles past kend: never loaded
  const auto load_kv = [&](int tile, int stage) {
    if constexpr (!kTma) {  // (copy_tile's geometry holds for the cp.async kernels' 128 and 256 threads only)
      const std::int64_t n1 = static_cast<std::int64_t>(tile) * kBlockN;
      const int valid = static_cast<int>(blk.kend - n1 < kBlockN ? blk.kend - n1 : kBlockN);
      copy_tile<T, D, kBlockN, kThreads>(kv_addr + stage * kStage, blk.kg + n1 * a.k_s, a.k_s, valid);
      copy_tile<T, D, kBlockN, kThreads>(kv_addr + stage * kStage + kTile, blk.vg + n1 * a.v_s, a.v_s, valid);
    }
  };

  // TMA: thread 0 issues a tile's K and V boxes (D / 64 panels each) on its stage's barrier. Coordinates are
  // (column, head, row, batch entry); rows past the sequence's end come back as zeros.
  const auto tma_kv = [&](int tile, int stage) {
    const std::uint32_t dst = kv_addr + stage * kStage, bar = full_bar(stage);
    ptx::mbar_arrive_expect_tx(bar, 2 * kTile);
    const int n1 = tile * kBlockN;
#pragma unroll
    for (int pnl = 0; pnl < D / 64; ++pnl) {
      ptx::tma_load_4d(dst + pnl * kKVPanel, &maps.k, 64 * pnl, hk, n1, b, bar);
      ptx::tma_load_4d(dst + kTile + pnl * kKVPanel, &maps.v, 64 * pnl, hk, n1, b, bar);
    }
  };

  // Descriptors (ptx.cuh): Q of this warpgroup (its 64 rows start 64·128 bytes into each Q panel), K and V of
  // stage 0; the k-steps and stages are constant offsets on them.
  const std::uint64_t q_desc = ptx::sw128_desc(q_addr + wg * 64 * 128, 16, 1024);
  const std::uint64_t k_desc = ptx::sw128_desc(kv_addr, 16, 1024);
  const std::uint64_t v_desc = ptx::sw128_desc(kv_addr + kTile, kKVPanel, 1024);
  const auto qk = [&](float(&s)[kBlockN / 2], int stage) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const std::uint32_t in_panel = (kk & 3) * 32;  // k16 steps are 32 bytes apart inside a 128-byte row
      ptx::wgmma_ss<T, kBlockN>(s, ptx::desc_add(q_desc, (kk >> 2) * (kBlockM * 128) + in_panel),
                                ptx::desc_add(k_desc, stage * kStage + (kk >> 2) * kKVPanel + in_panel), kk > 0);
    }
  };
  const auto pv = [&](float(&o)[D / 2], const std::uint32_t(&p)[kBlockN / 16][4], int stage) {
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk)
      ptx::wgmma_rs<T, D>(o, p[kk], ptx::desc_add(v_desc, stage * kStage + kk * 16 * 128), 1);
  };
  // The trimmed diagonal tile (a.trim, 128-key tiles; see `dead_hi` below): P·V over the tile's first 64 keys (P's
  // first 4 key steps). S stays m64n128k16 over the whole tile: S over the first 64 keys alone (m64n64k16 into s's
  // first 32 registers, the other 32 left as they were) was built and made ptxas serialise every product of the
  // kernel (C7515: non-wgmma definitions of accumulator registers inside a pipeline stage, the merge of the two
  // branches), also with the other 32 set to −inf before the fence.
  const auto pv_half = [&](float(&o)[D / 2], const std::uint32_t(&p)[kBlockN / 16][4], int stage) {
#pragma unroll
    for (int kk = 0; kk < kBlockN / 32; ++kk)
      ptx::wgmma_rs<T, D>(o, p[kk], ptx::desc_add(v_desc, stage * kStage + kk * 16 * 128), 1);
  };

  // This thread's rows (within the CTA): 64·wg + 16·warp + g + 8r, r = 0, 1.
  const int wrow = wg * 64 + warp * 16;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};  // l_run: this thread's partial sums
  float o[D / 2], s[kBlockN / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < kBlockN / 2; ++i) s[i] = 0.0f;
  if constexpr (kOverlap) {
    // Zeros put in place here: with tile 0 peeled the compiler sank s's zeroing below the peeled step's wgmma.fence,
    // definitions of its accumulator registers inside the stage, and ptxas serialised every product (C7515).
    ptx::fence_regs(s);
    ptx::fence_regs(o);
  }
  std::uint32_t p[kBlockN / 16][4];
  const float c2 = a.scale_log2;

  // Non-finite V on the causal diagonal (prefill_exact_pv.cuh): a tile some row of this warpgroup may not wholly
  // see (warpgroup-uniform) has the V rows its first row may not see scanned by the warpgroup; when a thread finds a
  // non-finite value there, the warpgroup's P·V of that tile runs exact_pv (keys a row may not see skipped) instead
  // of the tensor cores.
  const std::int64_t wg_diag = m0 + 64 * wg + sk - sq;  // the last key the warpgroup's first row sees
  // The first tile whose keys a row with last key `diag` does not all see (n_tiles: none, as without a mask).
  const auto first_crossing = [&](std::int64_t diag) {
    const std::int64_t n_seen = a.causal ? (diag + 1 < 0 ? 0 : (diag + 1) / kBlockN) : n_tiles;
    return n_seen < n_tiles ? static_cast<int>(n_seen) : n_tiles;
  };
  const auto crosses = [&](int tile) {
    return a.causal && static_cast<std::int64_t>(tile) * kBlockN + kBlockN - 1 > wg_diag;
  };
  // Trim (session 9, pfx9; a.trim, 128-key tiles, causal): keys 64..127 of `tile` are seen by no row of this
  // warpgroup (its last row, m0 + 64·wg + 63, sees keys up to wg_last). Sq = Sk, 128-row CTAs: the first
  // warpgroup's diagonal tile, where half its products were masked away. Such a tile's P·V takes pv_half (its S
  // stays whole: pv_half says why), and its scan stops at key 63: the skipped keys have p = 0 in every row of the
  // warpgroup, so with finite V the bits are those of the whole tile (the tensor cores add exact zeros), and a
  // non-finite V among them reaches no row.
  const std::int64_t wg_last = m0 + 64 * wg + 63 + sk - sq;
  const auto dead_hi = [&](int tile) {
    return kBlockN == 128 && a.trim && a.causal && wg_last < static_cast<std::int64_t>(tile) * kBlockN + 64;
  };
  // Thread tid of scan_threads scans the V rows of tile `tile` (in `stage`) past the key `diag` sees last, up to
  // row x_hi − 1.
  const auto scan = [&](auto scan_threads, int tile, int stage, std::int64_t diag, int tid, int x_hi) {
    const std::uint32_t vb = kv_addr + stage * kStage + kTile;
    const std::int64_t lo = diag - static_cast<std::int64_t>(tile) * kBlockN + 1;
    const int x_lo = lo < 0 ? 0 : (lo > kBlockN ? kBlockN : static_cast<int>(lo));
    return prefill_exact::rows_nonfinite<T, D, kBlockN, decltype(scan_threads)::value>(
        [&](int x, int ch) { return vb + (ch >> 3) * kKVPanel + x * 128 + ((ch & 7) << 4); }, x_lo, tid, x_hi);
  };
  // The last key of tile `tile` (tile-relative, clamped into [−1, kBlockN]) that this thread's row r sees.
  const auto vis = [&](int tile, int r) {
    const std::int64_t n0 = static_cast<std::int64_t>(tile) * kBlockN, last = sk - 1 - n0;
    std::int64_t x = a.causal ? m0 + wrow + g + 8 * r + sk - sq - n0 : last;
    x = x < last ? x : last;
    return static_cast<int>(x < -1 ? -1 : (x > kBlockN ? kBlockN : x));
  };
  const auto exact_pv = [&](int tile, int stage) {
    const std::uint32_t vb = kv_addr + stage * kStage + kTile;
    prefill_exact::exact_pv<T, kBlockN, kDT>(
        [&](int kk, int e) { return p[kk][e]; },
        [&](int x, int col) {
          return vb + (col >> 6) * kKVPanel + x * 128 + ((((col & 63) >> 3) ^ (x & 7)) << 4) + (col & 7) * 2;
        },
        [&](int t, int i) -> float& { return o[4 * t + i]; }, vis(tile, 0), vis(tile, 1));
  };
  bool nf = false;  // the warpgroup's scan of the last tile found a non-finite V that a row may not see
  bool trimmed = false;  // the last tile was trimmed (dead_hi): its P·V takes pv_half
  const bool fold = a.fold != 0;  // the host sets it only for a positive scale

  // P (16-bit, A layout) from the probabilities in s.
  const auto pack = [&](float(&s)[kBlockN / 2], std::uint32_t(&pn)[kBlockN / 16][4]) {
#pragma unroll
    for (int kk = 0; kk < kBlockN / 16; ++kk) {
      pn[kk][0] = ptx::pack2<T>(s[8 * kk + 0], s[8 * kk + 1]);
      pn[kk][1] = ptx::pack2<T>(s[8 * kk + 2], s[8 * kk + 3]);
      pn[kk][2] = ptx::pack2<T>(s[8 * kk + 4], s[8 * kk + 5]);
      pn[kk][3] = ptx::pack2<T>(s[8 * kk + 6], s[8 * kk + 7]);
    }
  };
  // The online softmax of tile j on s: mask, new maxima, the probabilities (in s), P into pn (unless kLatePack:
  // then the caller packs s after the P·V wait), and the sums; returns the rescale factors of the two rows through
  // alpha.
  const auto softmax = [&](float(&s)[kBlockN / 2], int j, float(&alpha)[2], auto& pn) {
    if (!fold) {
#pragma unroll
      for (int i = 0; i < kBlockN / 2; ++i) s[i] *= c2;
    }
    const std::int64_t n0 = static_cast<std::int64_t>(j) * kBlockN;
    const bool edge = n0 + kBlockN > sk || (a.causal && n0 + kBlockN - 1 > m0 + sk - sq);
    if (edge) {
      // Key n0 + x is visible to a row when x ≤ its limit, relative to this thread's first column 2c, clamped
      // into [−1, kBlockN] (prefill.cu's mask).
      const std::int64_t row0 = m0 + wrow + g, last = sk - 1 - n0 - 2 * c;
      const auto rel = [&](std::int64_t row) {
        std::int64_t x = a.causal ? row + sk - sq - n0 - 2 * c : last;
        x = x < last ? x : last;
        return static_cast<int>(x < -1 ? -1 : (x > kBlockN ? kBlockN : x));
      };
      const int lim0 = rel(row0), lim1 = rel(row0 + 8);
#pragma unroll
      for (int t = 0; t < kNT; ++t)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          if (t * 8 + e > lim0) s[4 * t + e] = -INFINITY;
          if (t * 8 + e > lim1) s[4 * t + 2 + e] = -INFINITY;
        }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float mx = -INFINITY;
#pragma unroll
      for (int t = 0; t < kNT; ++t) mx = fmaxf(mx, fmaxf(s[4 * t + 2 * r], s[4 * t + 2 * r + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      if (fold) mx *= c2;  // the max of the scaled scores: rounding is monotone
      mx = fmaxf(mx, m_run[r]);
      // A row that has seen only −inf keeps max −inf; shift by 0 then, so that 2^(−inf − 0) = 0, never NaN.
      const float shift = mx == -INFINITY ? 0.0f : mx;
      alpha[r] = ptx::exp2_approx(m_run[r] - shift);  // m_run = −inf: 0
      m_run[r] = mx;
      float sum = 0.0f;
#pragma unroll
      for (int t = 0; t < kNT; ++t) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& x = s[4 * t + 2 * r + e];
          x = ptx::exp2_approx(fold ? fmaf(x, c2, -shift) : x - shift);
          sum += x;
        }
      }
      l_run[r] = l_run[r] * alpha[r] + sum;
    }
    if constexpr (!kLatePack) pack(s, pn);
  };

  // Prologue: Q and tile 0 (one cp.async group, or two TMA barriers). A CTA with no visible key loads nothing.
  if constexpr (kWS) {
    if (threadIdx.x == 0) {
      for (int st = 0; st <= kStages; ++st) ptx::mbar_init(full_bar(st), 1);
      for (int st = 0; st < kStages; ++st) ptx::mbar_init(empty_bar(st), 4 * kWG);
      ptx::fence_mbar_init();
    }
    __syncthreads();  // the last CTA-wide barrier: from here the producer and the two consumers run apart
    if (wg == kWG) {  // the producer warpgroup: one lane issues Q, then every tile as its stage frees
      ptx::setmaxnreg_dec<kProducerRegs>();
      if (threadIdx.x == kThreads && n_tiles > 0) {
        ptx::mbar_arrive_expect_tx(q_bar, kQBytes);
#pragma unroll
        for (int pnl = 0; pnl < D / 64; ++pnl)
          ptx::tma_load_4d(q_addr + pnl * (kBlockM * 128), &maps.q, 64 * pnl, h, static_cast<int>(m0), b, q_bar);
        for (int t = 0; t < n_tiles; ++t) {
          if (t >= kStages)
            ptx::mbar_wait<false>(empty_bar(t % kStages), static_cast<std::uint32_t>(t / kStages - 1) & 1u);
          tma_kv(t, t % kStages);
        }
      }
      return;
    }
    ptx::setmaxnreg_inc<kConsumerRegs<kWG>>();
    // Ping-pong (a ring of kWG turns: warpgroup w waits on barrier 1 + w, then lets w + 1 go): warpgroup 0 issues
    // first (the last warpgroup's arrival stands for a previous turn).
    if (wg == kWG - 1 && n_tiles > 0) ptx::bar_arrive(1, 2 * 128);
  } else if constexpr (kTma) {
    if (threadIdx.x == 0) {
      for (int st = 0; st <= kStages; ++st) ptx::mbar_init(full_bar(st), 1);
      ptx::fence_mbar_init();
    }
    __syncthreads();  // every thread waits on the barriers only once they are initialised
    if (threadIdx.x == 0) {
      if (n_tiles > 0) {
        ptx::mbar_arrive_expect_tx(q_bar, kQBytes);
#pragma unroll
        for (int pnl = 0; pnl < D / 64; ++pnl)
          ptx::tma_load_4d(q_addr + pnl * (kBlockM * 128), &maps.q, 64 * pnl, h, static_cast<int>(m0), b, q_bar);
        tma_kv(0, 0);
      }
    }
  } else {
    copy_tile<T, D, kBlockM, kThreads>(q_addr, blk.qg, a.q_s, blk.q_rows);
    if (n_tiles > 0) load_kv(0, 0);
    ptx::cp_async_commit();
  }

  // One key tile. Checked (std::true_type): the tiles from the first that crosses the warpgroup's causal diagonal
  // on, which scan V and may take exact_pv; the tiles before it (every key seen by every row of the warpgroup: all
  // of them without a causal mask) run without that code, so the hot loop is the same as before the check.
  // kFirst (kOverlap's peeled tile 0 only): no P·V group at all, and the wait is for Q·Kᵀ alone. (An empty second
  // commit group with no branch before it made ptxas treat Q·Kᵀ as pending under the softmax and serialise every
  // product, C7515; the loop's empty group follows the P·V branch, where ptxas closes it with an empty HGMMA.)
  // O rescaled by the tile's alpha (step and step_ov). alpha = 2^0 = 1 exactly where the max did not move: skipping the
  // multiply then changes no bit.
  const auto rescale_o = [&](const float(&alpha)[2]) {
    if (!a.skip_rescale || __any_sync(0xffffffffu, alpha[0] != 1.0f || alpha[1] != 1.0f)) {
#pragma unroll
      for (int t = 0; t < kDT; ++t) {
        o[4 * t + 0] *= alpha[0];
        o[4 * t + 1] *= alpha[0];
        o[4 * t + 2] *= alpha[1];
        o[4 * t + 3] *= alpha[1];
      }
    }
  };
  // A crossing tile's scan (step and step_ov, after the softmax): the warpgroup's findings gathered by a named barrier
  // (kWG + 1 + wg: those after the ping-pong's) into nf; trimmed records whether its P·V takes pv_half.
  const auto scan_tile = [&](int j, int cur, bool half) {
    nf = crosses(j) && ptx::bar_or(kWG + 1 + wg, 128,
                                   scan(std::integral_constant<int, 128>{}, j, cur, wg_diag,
                                        static_cast<int>(threadIdx.x) % 128, half ? kBlockN / 2 : kBlockN));
    trimmed = half;
  };
  const auto step = [&](int j, auto checked, auto first) {
    constexpr bool kChecked = decltype(checked)::value;
    constexpr bool kFirst = decltype(first)::value;
    // Tile j (and Q) landed for this thread (and, cp.async, made visible to the async proxy), then the barrier: it
    // proves every warpgroup waited for its P·V of tile j − 2, whose stage tile j + 1 now overwrites.
    if constexpr (kTma) {
      // No trap on a timeout under setmaxnreg (kWS): ptx.cuh's mbar_wait says why.
      if (j == 0) ptx::mbar_wait<!kWS>(q_bar, 0);
      ptx::mbar_wait<!kWS>(full_bar(j % kStages), static_cast<std::uint32_t>(j / kStages) & 1u);
    } else {
      ptx::cp_async_wait<0>();
      ptx::fence_proxy_async_shared();
    }
    if constexpr (kWS) {
      ptx::bar_sync(1 + wg, 2 * 128);  // this warpgroup's turn to issue
    } else {
      __syncthreads();
      if constexpr (kTma) {
        if (j + 1 < n_tiles && threadIdx.x == 0) tma_kv(j + 1, (j + 1) % kStages);
      } else {
        if (j + 1 < n_tiles) load_kv(j + 1, (j + 1) % kStages);
        ptx::cp_async_commit();
      }
    }
    // Tile j − 1's P·V takes exact_pv. (nf is the same in every thread of the warpgroup; the vote says so to ptxas,
    // which otherwise serialises the products around a branch it takes for divergent, C7520.)
    bool exact_prev = false;
    if constexpr (kChecked) exact_prev = __any_sync(0xffffffffu, nf);
    // Trimmed tiles are checked ones (a tile before the first crossing is seen whole by every row); the votes say
    // to ptxas that the branches around the products are warp-uniform.
    const bool half_prev = kChecked && trimmed;
    bool half = false;
    if constexpr (kChecked) half = __any_sync(0xffffffffu, dead_hi(j));
    const int cur = j % kStages, prev = (j + kStages - 1) % kStages;
    ptx::wgmma_fence();
    qk(s, cur);
    ptx::wgmma_commit();
    if constexpr (!kFirst) {
      if (j > 0 && !exact_prev) {  // P of tile j − 1 (registers), V of tile j − 1
        if (half_prev)
          pv_half(o, p, prev);
        else
          pv(o, p, prev);
      }
      ptx::wgmma_commit();
    }
    if constexpr (kWS) {
      // The next warpgroup's turn (none left after the last warpgroup's last tile).
      if (wg != kWG - 1 || j + 1 < n_tiles) ptx::bar_arrive(1 + (wg + 1) % kWG, 2 * 128);
    }
    ptx::wgmma_wait<kFirst ? 0 : 1>();  // S_j is in registers; P·V may still run
    ptx::fence_regs(s);
    float alpha[2];
    // P of tile j − 1 is still being read by the tensor cores: the new probabilities go to other registers, and
    // the old ones are kept live (an empty asm reading them) until the wait, so no register is reused under it.
    std::uint32_t pn[kLatePack ? 1 : kBlockN / 16][4];
    softmax(s, j, alpha, pn);
    // kPin: the softmax (its row sums, so every exponential) stays ahead of the P·V wait in SASS (ptx.cuh's
    // keep_ahead_of_wait says why it would not).
    if constexpr (kPin) ptx::keep_ahead_of_wait(l_run[0], l_run[1], pin_addr);
    // After the softmax (its scores no longer hold registers), while P·V may still run.
    if constexpr (kChecked) scan_tile(j, cur, half);
    ptx::wgmma_wait<0>();
    ptx::fence_regs(o);
    ptx::fence_regs(p);
    if constexpr (kChecked) {
      if (exact_prev) exact_pv(j - 1, prev);
    }
    if constexpr (kWS) {
      if (j > 0 && lane == 0) ptx::mbar_arrive(empty_bar(prev));  // this warp is done with tile j − 1's stage
    }
    if constexpr (kLatePack) {
      pack(s, p);
    } else {
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) p[kk][e] = pn[kk][e];
    }
    rescale_o(alpha);
  };
  // kOverlap (session 15, pfx15): tile j ≥ 1 of those before the first crossing (every key seen by every row of the
  // warpgroup: no exact_pv, no trim, so P·V of j − 1 is issued with no branch around it). In the step above ptxas
  // closes the P·V branch's group inside the branch and ends the tile's second commit with an empty HGMMA group at
  // the join, so wgmma_wait<1> leaves only that empty group pending and P·V is done before the softmax starts
  // (session 14, pfx14). Here P·V of tile j − 1 (A = pr) is the second group, pending while the softmax of tile j
  // runs; P of tile j goes to other registers (pw; the loop below unrolled by two swaps pr and pw, so nothing is
  // copied into registers P·V reads), so no register that P·V reads is written under it (ptxas would otherwise
  // serialise every product, C7513, or, as in pfx14's first form, hand them to the softmax's temporaries). The same
  // operations on the same values as step: the same bits. (A form with P packed after the P·V wait into the
  // registers P·V read, kLatePack's order, was built beside it and measured slower: 2430dcc has it.)
  // Checked (kOvDiag, session 16, pfx16): the warpgroup's first crossing tile. P·V of the tile before it (unchecked:
  // never exact_pv, never trimmed) is issued as above; the crossing tile's scan (its trim decided by the same vote)
  // runs where step's does, after the softmax, while P·V may still run: it reads V of tile j from shared memory and
  // writes no register P·V reads. The same values as step's: the same bits.
  const auto step_ov = [&](int j, std::uint32_t(&pr)[kBlockN / 16][4], std::uint32_t(&pw)[kBlockN / 16][4],
                           auto checked) {
    constexpr bool kChecked = decltype(checked)::value;
    ptx::mbar_wait<false>(full_bar(j % kStages), static_cast<std::uint32_t>(j / kStages) & 1u);
    ptx::bar_sync(1 + wg, 2 * 128);  // this warpgroup's turn to issue
    const int cur = j % kStages, prev = (j + kStages - 1) % kStages;
    // S_j in registers of its own (the first product overwrites S, scale-d 0: nothing flows in), and the softmax on
    // a copy x made by one opaque move a register right after the wait: the softmax's in-place updates (the scale,
    // the mask's selects, joined by the compiler into the same PTX registers) wrote the registers the products of
    // this stage named while P·V was pending, and ptxas serialised every product of the kernel (C7515). ptxas
    // folds the moves away (the same physical registers, once the wait has retired Q·Kᵀ).
    float sj[kBlockN / 2], x[kBlockN / 2];
    ptx::wgmma_fence();
    qk(sj, cur);
    ptx::wgmma_commit();
    pv(o, pr, prev);  // P of tile j − 1, V of tile j − 1
    ptx::wgmma_commit();
    if (wg != kWG - 1 || j + 1 < n_tiles) ptx::bar_arrive(1 + (wg + 1) % kWG, 2 * 128);
    ptx::wgmma_wait<1>();  // S_j is in registers; P·V runs on
#pragma unroll
    for (int i = 0; i < kBlockN / 2; ++i) asm volatile("mov.b32 %0, %1;" : "=f"(x[i]) : "f"(sj[i]));
    float alpha[2];
    softmax(x, j, alpha, pw);
    // Without this ptxas placed the P·V wait above the softmax's exponentials (as pfx8 read in the default), and
    // nothing ran under P·V: the row sums, so every exponential, pinned ahead of it (ptx.cuh's keep_ahead_of_wait).
    ptx::keep_ahead_of_wait(l_run[0], l_run[1], pin_addr);
    if constexpr (kChecked) scan_tile(j, cur, __any_sync(0xffffffffu, dead_hi(j)));
    ptx::wgmma_wait<0>();
    ptx::fence_regs(o);
    ptx::fence_regs(pr);
    if (lane == 0) ptx::mbar_arrive(empty_bar(prev));  // this warp is done with tile j − 1's stage
    rescale_o(alpha);
  };
  const int j_cross = first_crossing(wg_diag);  // the warpgroup's first crossing tile
  int j = 0;
  if constexpr (kOverlap) {
    if (n_tiles > 0) {  // tile 0 peeled: no P·V before it
      if (j_cross > 0)
        step(0, std::false_type{}, std::true_type{});
      else
        step(0, std::true_type{}, std::true_type{});
      // j = 1, opaque: with j > 0 known, the compiler reshaped the checked tiles' P·V branch and ptxas serialised
      // every product (C7515); as an unknown the checked loop compiles as in the kernel without kOverlap.
      asm volatile("mov.b32 %0, 1;" : "=r"(j));
    }
    std::uint32_t pn[kBlockN / 16][4];
    const auto pn_to_p = [&] {
#pragma unroll
      for (int kk = 0; kk < kBlockN / 16; ++kk)
#pragma unroll
        for (int e = 0; e < 4; ++e) p[kk][e] = pn[kk][e];  // (no product in flight: step_ov waited)
    };
    for (; j + 1 < j_cross; j += 2) {
      step_ov(j, p, pn, std::false_type{});
      step_ov(j + 1, pn, p, std::false_type{});
    }
    if constexpr (kOvDiag) {
      // The first crossing tile (if any) by step_ov too, P ending in p as before.
      if (j < j_cross) {
        step_ov(j, p, pn, std::false_type{});
        if (++j < n_tiles) {
          step_ov(j, pn, p, std::true_type{});
          ++j;
        } else {
          pn_to_p();
        }
      } else if (j == j_cross && j < n_tiles) {
        step_ov(j, p, pn, std::true_type{});
        pn_to_p();
        ++j;
      }
    } else if (j < j_cross) {
      step_ov(j, p, pn, std::false_type{});
      pn_to_p();
      ++j;
    }
  }
  // (kOverlap: step_ov took every tile before the crossing. The loop is left out, not merely never run: with j ≥ 1
  // known to the compiler it would issue P·V with no branch around it and run the softmax in place under it, C7515.)
  if constexpr (!kOverlap)
    for (; j < j_cross; ++j) step(j, std::false_type{}, std::false_type{});
  for (; j < n_tiles; ++j) step(j, std::true_type{}, std::false_type{});
  if (n_tiles > 0) {
    if (__any_sync(0xffffffffu, nf)) {
      exact_pv(n_tiles - 1, (n_tiles - 1) % kStages);
    } else {
      ptx::wgmma_fence();
      if (__any_sync(0xffffffffu, trimmed))
        pv_half(o, p, (n_tiles - 1) % kStages);
      else
        pv(o, p, (n_tiles - 1) % kStages);
      ptx::wgmma_commit();
      ptx::wgmma_wait<0>();
      ptx::fence_regs(o);
    }
  } else if constexpr (!kTma) {
    ptx::cp_async_wait<0>();  // no tile: Q's copies may still be landing; let none outlive the CTA
  }

  // Finish: quad sums, the state (with the sink), O normalised once, the LSE.
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = l_run[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    auto st = OnlineSoftmaxState<float>::from_max_and_sum(m_run[r] * kLn2, l);
    const bool no_key = st.is_empty();  // O = 0 then, whatever the sink (a NaN or +inf one too): the CPU's rule
    float w = 1.0f;
    if (a.sinks) {
      const auto sink = OnlineSoftmaxState<float>::from_lse(a.sinks[h * a.sinks_stride]);
      w = st.merge_weights(sink).self;
      st.merge(sink);
    }
    const float factor = no_key ? 0.0f : w * st.normalizer(EmptyRowPolicy::zeros).inv_sum;
    const std::int64_t row = m0 + wrow + g + 8 * r;
    if (row >= sq) continue;
    T* og = static_cast<T*>(a.o) + b * a.o_b + (q0 + row) * a.o_s + h * a.o_h;
#pragma unroll
    for (int t = 0; t < kDT; ++t)
      *reinterpret_cast<std::uint32_t*>(og + t * 8 + 2 * c) =
          ptx::pack2<T>(o[4 * t + 2 * r] * factor, o[4 * t + 2 * r + 1] * factor);
    if (a.lse && c == 0) a.lse[b * a.lse_b + h * a.lse_h + (q0 + row) * a.lse_s] = st.lse();
  }
#else
  // Built without sm_90a: never launched (prefill_wgmma_available says so to the host).
  (void)a;
  __trap();
#endif
}

template <typename T, int D, int kWG, int kBlockN, bool kTma, bool kWS = false, bool kPin = false,
          bool kOverlap = false, bool kOvDiag = false>
void launch(const PrefillArgs& a, std::int64_t batch, std::int64_t hq, std::int64_t max_sq, cudaStream_t stream) {
  constexpr int kBlockM = 64 * kWG;
  constexpr int smem = (kBlockM + 2 * kStages * kBlockN) * D * static_cast<int>(sizeof(T)) + 1024;
  static_assert(smem <= 227 * 1024, "shared memory of one CTA");
  PrefillMaps maps{};
  if constexpr (kTma) {
    const std::int64_t hkv = hq / a.group;
    // (tma_map.hpp: false where the driver refuses a view, a stride of 0, say, which attention_forward's checks let
    // through; the cp.async path reads any such view.)
    constexpr bool bf16 = std::is_same_v<T, __nv_bfloat16>;
    if (!encode_bshd(&maps.q, a.q, bf16, batch, a.sq, hq, D, a.q_b, a.q_s, a.q_h, kBlockM) ||
        !encode_bshd(&maps.k, a.k, bf16, batch, a.sk, hkv, D, a.k_b, a.k_s, a.k_h, kBlockN) ||
        !encode_bshd(&maps.v, a.v, bf16, batch, a.sk, hkv, D, a.v_b, a.v_s, a.v_h, kBlockN))
      // (A pinned build falls back to the unpinned cp.async kernel: the same bits.)
      // (The producer variants' cp.async kernel is the two-warpgroup one: the same rows, the same bits.)
      return launch<T, D, kWS ? 2 : kWG, kBlockN, false>(a, batch, hq, max_sq, stream);
  }
  auto* kernel = prefill_wgmma_kernel<T, D, kWG, kBlockN, kTma, kWS, kPin, kOverlap, kOvDiag>;
  SMK_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const std::int64_t q_tiles = (max_sq + kBlockM - 1) / kBlockM;
  dim3 grid(static_cast<unsigned>(q_tiles), static_cast<unsigned>(hq), static_cast<unsigned>(batch));
  PrefillArgs la = a;
  const std::int64_t ctas = q_tiles * hq * batch;
  if (a.chunk_heads > 0 && ctas <= 0x7fffffff) {
    // The causal schedule (prefill_args.hpp's prefill_block): chunks of about two waves of CTAs (one CTA an SM at
    // these shared-memory sizes), as many whole chunks as the (batch, head) pairs allow, sizes within one of each
    // other (a small last chunk would start its heavy blocks beside the previous chunk's light ones and end late).
    // Chosen by a list-scheduling model of 132 SMs, CTA cost (visible key tiles + 1): at (4, 32, 4096, 128) the
    // (x, y, z) grid ends 3.3 % past the ideal, chunks of 8 pairs 0.2 %; (1, 32, 16384, 128) 0.3 % against 0.1 %.
    // Measured (H200 run of d3b2984, session 9, pfx9): within the spread at S = 4096 causal (467.0 against 465.9
    // TFLOP/s), 0.5 % slower at 16384; so off by default (attention_cuda.hpp, kPrefillWgmmaCausalSchedule).
    int device = 0, sms = 0;
    SMK_CUDA_CHECK(cudaGetDevice(&device));
    SMK_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const std::int64_t pairs = hq * batch;
    std::int64_t target = (2 * static_cast<std::int64_t>(sms) + q_tiles / 2) / q_tiles;  // pairs in two waves
    target = target < 1 ? 1 : target;
    const std::int64_t chunks = pairs / target < 1 ? 1 : pairs / target;
    la.chunk_heads = static_cast<int>(pairs / chunks);
    la.chunk_big = static_cast<int>(pairs % chunks);
    la.grid_heads = static_cast<int>(hq);
    la.grid_tiles = q_tiles;
    grid = dim3(static_cast<unsigned>(ctas), 1, 1);
  } else {
    la.chunk_heads = 0;
  }
  kernel<<<grid, kWG * 128 + (kWS ? 128 : 0), smem, stream>>>(la, maps);
  SMK_CUDA_CHECK_LAUNCH("prefill_wgmma_kernel");
  if constexpr (kOverlap) g_overlap_launches.fetch_add(1, std::memory_order_relaxed);
  if constexpr (kOvDiag) g_ov_diag_launches.fetch_add(1, std::memory_order_relaxed);
}

// The instantiated variants: kPrefillWgmmaVariants in attention_cuda.hpp (warps = 4 · warpgroups), each with the
// cp.async and the TMA path; warps = 9: two consumer warpgroups and the producer (kWS), TMA only (asked for
// cp.async, or falling back to it, it runs the 8-warp kernel: the same rows, the same bits). Measured in the H200
// run of b14890f and dropped: kWS at D = 128 with 128-key tiles (247.6 TFLOP/s at B=4, H=32, S=4096 full against
// 488.8 without: ptxas compiles the 384-thread kernel to 168 registers a thread whatever setmaxnreg asks, spills
// 272 bytes and serialises the products, C7512) and at D = 64 (278.2 against 390.3 at B=16, H=16, S=2048).
template <typename T, bool kTma>
bool launch_t(int d, int warps, int block_n, const PrefillArgs& a, std::int64_t batch, std::int64_t hq,
              std::int64_t max_sq, cudaStream_t s) {
  const auto is = [&](int dd, int w, int bn) { return d == dd && warps == w && block_n == bn; };
  // The pinned builds (kPin, attention_cuda.hpp's kPrefillWgmmaPinned), TMA only: prefill.cu asks for them there.
  if constexpr (kTma) {
    if (a.pin) {
      if (is(128, 9, 128)) return launch<T, 128, 2, 128, true, true, true>(a, batch, hq, max_sq, s), true;
      if (is(64, 13, 128)) return launch<T, 64, 3, 128, true, true, true>(a, batch, hq, max_sq, s), true;
      return false;
    }
    // P·V under the softmax (kOverlap, session 15): the D = 128 TMA default's build, the default form without a
    // mask; form 4 (session 16, kOvDiag: the first crossing tile by step_ov too) the default under a causal mask.
    const int form = pv_form(a.causal != 0);
    if (form == 2 && is(128, 9, 128))
      return launch<T, 128, 2, 128, true, true, false, true>(a, batch, hq, max_sq, s), true;
    if (form == 4 && is(128, 9, 128))
      return launch<T, 128, 2, 128, true, true, false, true, true>(a, batch, hq, max_sq, s), true;
  }
  if (is(128, 4, 64)) return launch<T, 128, 1, 64, kTma>(a, batch, hq, max_sq, s), true;
  if (is(128, 8, 128)) return launch<T, 128, 2, 128, kTma>(a, batch, hq, max_sq, s), true;
  if (is(128, 9, 64)) return launch<T, 128, 2, 64, kTma, kTma>(a, batch, hq, max_sq, s), true;
  if (is(128, 9, 128)) return launch<T, 128, 2, 128, kTma, kTma>(a, batch, hq, max_sq, s), true;
  if (is(64, 4, 64)) return launch<T, 64, 1, 64, kTma>(a, batch, hq, max_sq, s), true;
  if (is(64, 8, 64)) return launch<T, 64, 2, 64, kTma>(a, batch, hq, max_sq, s), true;
  // warps = 13: three consumer warpgroups and the producer (session 8, pfx8), TMA; asked for cp.async (or falling
  // back to it), the 8-warp kernel with the same key tiles. Built and dropped after the H200 run of 5b9391e: 64-key
  // tiles (362.7-377.5 TFLOP/s at B=16, H=16, S=2048 full against 430.1-431.2 with 128-key tiles).
  if (is(64, 13, 128)) return launch<T, 64, kTma ? 3 : 2, 128, kTma, kTma>(a, batch, hq, max_sq, s), true;
  return false;
}

}  // namespace

bool prefill_wgmma_launch(bool bf16, int d, int warps, int block_n, bool tma, const PrefillArgs& a,
                          std::int64_t batch, std::int64_t hq, std::int64_t max_sq, cudaStream_t stream) {
  if (tma && a.cu_q) return false;  // varlen: cp.async only (the kernel's comment says why)
  if (tma)
    return bf16 ? launch_t<__nv_bfloat16, true>(d, warps, block_n, a, batch, hq, max_sq, stream)
                : launch_t<__half, true>(d, warps, block_n, a, batch, hq, max_sq, stream);
  return bf16 ? launch_t<__nv_bfloat16, false>(d, warps, block_n, a, batch, hq, max_sq, stream)
              : launch_t<__half, false>(d, warps, block_n, a, batch, hq, max_sq, stream);
}

void prefill_wgmma_set_pv_form(int form) { g_pv_form.store(form, std::memory_order_relaxed); }
std::int64_t prefill_wgmma_overlap_launches() { return g_overlap_launches.load(std::memory_order_relaxed); }
std::int64_t prefill_wgmma_ov_diag_launches() { return g_ov_diag_launches.load(std::memory_order_relaxed); }

bool prefill_wgmma_available(int device) {
#if defined(SMK_CUDA_BUILT_SM90A)
  int major = 0, minor = 0;
  SMK_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  SMK_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major == 9 && minor == 0;
#else
  (void)device;
  return false;
#endif
}

}  // namespace smk::cuda
