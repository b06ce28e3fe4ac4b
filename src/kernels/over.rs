//! The *over* operator on premultiplied RGBA `f32` pixels.
//!
//! For premultiplied colours (Porter & Duff, *Compositing digital images*,
//! SIGGRAPH 1984), `front over back` is, per channel c ∈ {R, G, B, A},
//!
//! ```text
//! out_c = front_c + (1 − front_A) · back_c
//! ```
//!
//! a component-wise linear combination that is associative but not
//! commutative (Peterka et al., *Radix-k image compositing*, SC 2009, §1.2
//! postulate 2; `../shared/seeds/radix-k-compositing.txt`). Every result is
//! computed as `t = 1 − front_A; out = front + t · back` with two separately
//! rounded operations (no fused multiply-add), exactly as the NumPy reference
//! `topocoll.imaging.over_numpy` does, so the two agree bit for bit.
//!
//! The kernels stream three arrays (two reads, one write), so they are bound
//! by memory bandwidth. The loops run over fixed-size blocks of floats with
//! no bounds checks, written so that the compiler vectorises them (see
//! `transmittance`); large out-of-place outputs use non-temporal stores
//! (`over_streaming`). The radix-k paper's future work (§5.2) asks for the
//! over operator to be parallelised across pixels: the `par_*` variants split
//! the pixels into one contiguous, cache-line-aligned piece per thread.

use super::{check_pixels, check_same, CHANNELS};
use crate::error::CoreError;

/// Pixels per block in the inner loops (4 pixels = 64 bytes = one cache line;
/// small enough that LLVM unrolls the block fully and vectorises it).
const BLOCK_PIXELS: usize = 4;
const BLOCK: usize = BLOCK_PIXELS * CHANNELS;
/// Fewest pixels worth handing to a thread of their own (1 MiB of pixels).
pub const MIN_PIXELS_PER_THREAD: usize = 1 << 16;

/// `1 − alpha` of each pixel, repeated on its four floats.
///
/// Written over the flat floats, alpha of pixel `i / 4` read as `f[i | 3]`,
/// into a block-sized temporary and then used by a second, separate loop:
/// LLVM turns this pair into packed shuffles and arithmetic, one channel per
/// lane. A per-pixel `[f32; 4]` formulation, or a single loop, ends up scalar
/// or vectorised across pixels with gathers, 2.5× slower in cache.
#[inline(always)]
fn transmittance(f: &[f32; BLOCK]) -> [f32; BLOCK] {
    let mut t = [0.0f32; BLOCK];
    for i in 0..BLOCK {
        t[i] = 1.0 - f[i | 3];
    }
    t
}

#[inline(always)]
fn over_block(f: &[f32; BLOCK], b: &[f32; BLOCK], o: &mut [f32; BLOCK]) {
    let t = transmittance(f);
    for i in 0..BLOCK {
        o[i] = f[i] + t[i] * b[i];
    }
}

#[inline(always)]
fn over_block_into_back(f: &[f32; BLOCK], b: &mut [f32; BLOCK]) {
    let t = transmittance(f);
    for i in 0..BLOCK {
        b[i] = f[i] + t[i] * b[i];
    }
}

#[inline(always)]
fn over_block_into_front(f: &mut [f32; BLOCK], b: &[f32; BLOCK]) {
    let t = transmittance(f);
    for i in 0..BLOCK {
        f[i] += t[i] * b[i];
    }
}

/// The same operation pixel by pixel, for the tail shorter than a block.
#[inline(always)]
fn over_tail(f: &[f32], b: &[f32], o: &mut [f32]) {
    for ((o, f), b) in o
        .chunks_exact_mut(CHANNELS)
        .zip(f.chunks_exact(CHANNELS))
        .zip(b.chunks_exact(CHANNELS))
    {
        let t = 1.0 - f[3];
        for c in 0..CHANNELS {
            o[c] = f[c] + t * b[c];
        }
    }
}

/// Outputs at least this large (bytes) bypass the caches (x86-64 only).
pub const STREAM_MIN_BYTES: usize = 16 << 20;

pub(crate) fn over_unchecked(front: &[f32], back: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if out.len() * 4 >= STREAM_MIN_BYTES && (out.as_ptr() as usize).is_multiple_of(16) {
        over_streaming(front, back, out);
        return;
    }
    let mut o_blocks = out.chunks_exact_mut(BLOCK);
    let mut f_blocks = front.chunks_exact(BLOCK);
    let mut b_blocks = back.chunks_exact(BLOCK);
    for ((o, f), b) in (&mut o_blocks).zip(&mut f_blocks).zip(&mut b_blocks) {
        over_block(
            f.try_into().unwrap(),
            b.try_into().unwrap(),
            o.try_into().unwrap(),
        );
    }
    over_tail(
        f_blocks.remainder(),
        b_blocks.remainder(),
        o_blocks.into_remainder(),
    );
}

/// [`over_unchecked`] with non-temporal stores of `out`.
///
/// A fresh output that does not fit in cache costs a read for ownership of
/// every line before it is written (four streams instead of three); streaming
/// stores skip it, worth ~25% at 128 MiB. In-place variants need no such care.
#[cfg(target_arch = "x86_64")]
fn over_streaming(front: &[f32], back: &[f32], out: &mut [f32]) {
    use std::arch::x86_64::{_mm_loadu_ps, _mm_sfence, _mm_stream_ps};
    let mut o_blocks = out.chunks_exact_mut(BLOCK);
    let mut f_blocks = front.chunks_exact(BLOCK);
    let mut b_blocks = back.chunks_exact(BLOCK);
    let mut block = [0.0f32; BLOCK];
    for ((o, f), b) in (&mut o_blocks).zip(&mut f_blocks).zip(&mut b_blocks) {
        over_block(f.try_into().unwrap(), b.try_into().unwrap(), &mut block);
        for lane in (0..BLOCK).step_by(4) {
            // SAFETY: SSE is part of the x86-64 baseline; `o` holds BLOCK
            // floats and starts 16-byte aligned (checked by the caller for
            // `out`, and BLOCK floats are 64 bytes), so each 4-float store is
            // in bounds and aligned.
            unsafe {
                _mm_stream_ps(
                    o.as_mut_ptr().add(lane),
                    _mm_loadu_ps(block.as_ptr().add(lane)),
                )
            };
        }
    }
    // SAFETY: a store fence has no preconditions; it orders the streaming
    // stores before anything this thread does next (and before the join).
    unsafe { _mm_sfence() };
    over_tail(
        f_blocks.remainder(),
        b_blocks.remainder(),
        o_blocks.into_remainder(),
    );
}

/// `b = f over b` pixel by pixel, for tails and short runs.
#[inline(always)]
fn over_tail_into_back(f: &[f32], b: &mut [f32]) {
    for (f, b) in f.chunks_exact(CHANNELS).zip(b.chunks_exact_mut(CHANNELS)) {
        let t = 1.0 - f[3];
        for c in 0..CHANNELS {
            b[c] = f[c] + t * b[c];
        }
    }
}

/// `f = f over b` pixel by pixel; alpha is read before the pixel changes.
#[inline(always)]
fn over_tail_into_front(f: &mut [f32], b: &[f32]) {
    for (f, b) in f.chunks_exact_mut(CHANNELS).zip(b.chunks_exact(CHANNELS)) {
        let t = 1.0 - f[3];
        for c in 0..CHANNELS {
            f[c] += t * b[c];
        }
    }
}

pub(crate) fn over_into_back_unchecked(front: &[f32], back: &mut [f32]) {
    let mut f_blocks = front.chunks_exact(BLOCK);
    let mut b_blocks = back.chunks_exact_mut(BLOCK);
    for (f, b) in (&mut f_blocks).zip(&mut b_blocks) {
        over_block_into_back(f.try_into().unwrap(), b.try_into().unwrap());
    }
    over_tail_into_back(f_blocks.remainder(), b_blocks.into_remainder());
}

pub(crate) fn over_into_front_unchecked(front: &mut [f32], back: &[f32]) {
    let mut f_blocks = front.chunks_exact_mut(BLOCK);
    let mut b_blocks = back.chunks_exact(BLOCK);
    for (f, b) in (&mut f_blocks).zip(&mut b_blocks) {
        over_block_into_front(f.try_into().unwrap(), b.try_into().unwrap());
    }
    over_tail_into_front(f_blocks.into_remainder(), b_blocks.remainder());
}

/// Floats per thread piece: whole blocks, at least [`MIN_PIXELS_PER_THREAD`].
fn piece_len(len: usize, threads: usize) -> (usize, usize) {
    let pixels = len / CHANNELS;
    let useful = pixels.div_ceil(MIN_PIXELS_PER_THREAD).max(1);
    let threads = threads.clamp(1, useful);
    let per_thread = pixels.div_ceil(threads).div_ceil(BLOCK_PIXELS) * BLOCK_PIXELS;
    (threads, per_thread.max(BLOCK_PIXELS) * CHANNELS)
}

/// `out = front over back`, serial.
///
/// # Errors
/// [`CoreError`] if a length is not a multiple of 4 or the three differ.
pub fn over(front: &[f32], back: &[f32], out: &mut [f32]) -> Result<(), CoreError> {
    par_over(front, back, out, 1)
}

/// `back = front over back` in place (the accumulated image is behind).
pub fn over_into_back(front: &[f32], back: &mut [f32]) -> Result<(), CoreError> {
    par_over_into_back(front, back, 1)
}

/// `front = front over back` in place (the accumulated image is in front).
pub fn over_into_front(front: &mut [f32], back: &[f32]) -> Result<(), CoreError> {
    par_over_into_front(front, back, 1)
}

/// [`over`] on up to `threads` scoped threads, one contiguous piece each.
///
/// Fewer threads are used when a piece would hold fewer than
/// [`MIN_PIXELS_PER_THREAD`] pixels; `threads = 0` is taken as 1.
pub fn par_over(
    front: &[f32],
    back: &[f32],
    out: &mut [f32],
    threads: usize,
) -> Result<(), CoreError> {
    check_pixels("front", front)?;
    check_same("back", back, front.len())?;
    check_same("out", out, front.len())?;
    let (threads, piece) = piece_len(front.len(), threads);
    if threads == 1 {
        over_unchecked(front, back, out);
        return Ok(());
    }
    std::thread::scope(|scope| {
        for ((o, f), b) in out
            .chunks_mut(piece)
            .zip(front.chunks(piece))
            .zip(back.chunks(piece))
        {
            scope.spawn(move || over_unchecked(f, b, o));
        }
    });
    Ok(())
}

/// [`over_into_back`] on up to `threads` scoped threads.
pub fn par_over_into_back(
    front: &[f32],
    back: &mut [f32],
    threads: usize,
) -> Result<(), CoreError> {
    check_pixels("front", front)?;
    check_same("back", back, front.len())?;
    let (threads, piece) = piece_len(front.len(), threads);
    if threads == 1 {
        over_into_back_unchecked(front, back);
        return Ok(());
    }
    std::thread::scope(|scope| {
        for (f, b) in front.chunks(piece).zip(back.chunks_mut(piece)) {
            scope.spawn(move || over_into_back_unchecked(f, b));
        }
    });
    Ok(())
}

/// [`over_into_front`] on up to `threads` scoped threads.
pub fn par_over_into_front(
    front: &mut [f32],
    back: &[f32],
    threads: usize,
) -> Result<(), CoreError> {
    check_pixels("front", front)?;
    check_same("back", back, front.len())?;
    let (threads, piece) = piece_len(front.len(), threads);
    if threads == 1 {
        over_into_front_unchecked(front, back);
        return Ok(());
    }
    std::thread::scope(|scope| {
        for (f, b) in front.chunks_mut(piece).zip(back.chunks(piece)) {
            scope.spawn(move || over_into_front_unchecked(f, b));
        }
    });
    Ok(())
}

/// Append `front over back` to `out` (used by the sparse kernels).
pub(crate) fn over_pixels_into(front: &[f32], back: &[f32], out: &mut Vec<f32>) {
    let start = out.len();
    out.resize(start + front.len(), 0.0);
    over_unchecked(front, back, &mut out[start..]);
}

#[cfg(test)]
pub(crate) use tests::pixels as test_pixels;

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random premultiplied pixels (xorshift), alpha in [0, 1].
    pub(crate) fn pixels(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        let mut v = Vec::with_capacity(n * CHANNELS);
        for _ in 0..n {
            let a = next();
            v.extend_from_slice(&[next() * a, next() * a, next() * a, a]);
        }
        v
    }

    fn reference(front: &[f32], back: &[f32]) -> Vec<f32> {
        front
            .chunks(4)
            .zip(back.chunks(4))
            .flat_map(|(f, b)| (0..4).map(move |c| f[c] + (1.0 - f[3]) * b[c]))
            .collect()
    }

    #[test]
    fn worked_example() {
        // Half-transparent red over opaque blue: (0.5, 0, 0.5, 1).
        let front = [0.5, 0.0, 0.0, 0.5];
        let back = [0.0, 0.0, 1.0, 1.0];
        let mut out = [0.0; 4];
        over(&front, &back, &mut out).unwrap();
        assert_eq!(out, [0.5, 0.0, 0.5, 1.0]);
        // ...and blue over red hides red entirely: not commutative.
        over(&back, &front, &mut out).unwrap();
        assert_eq!(out, [0.0, 0.0, 1.0, 1.0]);
    }

    #[test]
    fn all_variants_match_reference_for_odd_lengths_and_threads() {
        for n in [0usize, 1, 15, 16, 17, 1000, 3 * MIN_PIXELS_PER_THREAD + 5] {
            let front = pixels(n, 1 + n as u64);
            let back = pixels(n, 2 + n as u64);
            let expected = reference(&front, &back);
            for threads in [0usize, 1, 2, 3, 8] {
                let mut out = vec![f32::NAN; n * 4];
                par_over(&front, &back, &mut out, threads).unwrap();
                assert_eq!(out, expected, "par_over n={n} threads={threads}");
                let mut b = back.clone();
                par_over_into_back(&front, &mut b, threads).unwrap();
                assert_eq!(b, expected, "into_back n={n} threads={threads}");
                let mut f = front.clone();
                par_over_into_front(&mut f, &back, threads).unwrap();
                assert_eq!(f, expected, "into_front n={n} threads={threads}");
            }
        }
    }

    #[test]
    fn streaming_path_matches_reference() {
        // Large enough for non-temporal stores (if `out` is 16-byte aligned,
        // as the system allocator gives), with a tail shorter than a block.
        let n = STREAM_MIN_BYTES / 16 + 3;
        let (front, back) = (pixels(n, 21), pixels(n, 22));
        let expected = reference(&front, &back);
        for threads in [1, 2] {
            let mut out = vec![f32::NAN; n * 4];
            par_over(&front, &back, &mut out, threads).unwrap();
            assert!(out == expected, "threads={threads}");
        }
    }

    #[test]
    fn associative_to_rounding() {
        let (a, b, c) = (pixels(500, 7), pixels(500, 8), pixels(500, 9));
        let mut ab = vec![0.0; a.len()];
        let mut ab_c = vec![0.0; a.len()];
        let mut bc = vec![0.0; a.len()];
        let mut a_bc = vec![0.0; a.len()];
        over(&a, &b, &mut ab).unwrap();
        over(&ab, &c, &mut ab_c).unwrap();
        over(&b, &c, &mut bc).unwrap();
        over(&a, &bc, &mut a_bc).unwrap();
        for (x, y) in ab_c.iter().zip(&a_bc) {
            assert!((x - y).abs() <= 1e-6, "{x} vs {y}");
        }
    }

    #[test]
    fn rejects_bad_lengths() {
        let mut out = [0.0; 8];
        assert_eq!(
            over(&[0.0; 7], &[0.0; 7], &mut out[..7]),
            Err(CoreError::NotPixels {
                name: "front",
                len: 7
            })
        );
        let err = over(&[0.0; 8], &[0.0; 4], &mut out).unwrap_err();
        assert_eq!(err.to_string(), "back has 4 floats, expected 8");
        assert!(over_into_back(&[0.0; 8], &mut [0.0; 12]).is_err());
    }

    #[test]
    fn pieces_are_whole_blocks_and_cover_everything() {
        for (len, threads) in [(4, 8), (4 * 1_000_003, 2), (4 * 1_000_003, 7)] {
            let (t, piece) = piece_len(len, threads);
            assert!(t >= 1 && t <= threads);
            assert_eq!(piece % BLOCK, 0);
            assert!(piece * t >= len);
        }
    }
}
