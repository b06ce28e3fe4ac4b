//! Active pixels: run-length encoding that skips fully transparent runs, and
//! the over operator computed directly on the encoded form.
//!
//! This is the active-pixel optimisation the radix-k paper leaves to future
//! work (Peterka et al., *Radix-k image compositing*, SC 2009, §1.2 and §5.2;
//! `../shared/seeds/radix-k-compositing.txt`), in the form IceT uses: an image
//! is a sequence of `(inactive, active)` run-length pairs, each followed by
//! its active pixels. Here the pairs and the active pixels are kept in two
//! flat arrays (`runs`: `u32` pairs, `pixels`: `f32` RGBA), so the bytes on
//! the wire are `8 · pairs + 16 · active pixels`.
//!
//! A pixel is *inactive* when all four premultiplied channels are zero: it is
//! the identity of over (`0 over x = x` and `x over 0 = x` exactly), so
//! skipping it changes no result. A pixel with alpha 0 but a non-zero colour
//! (emissive) is active.
//!
//! Canonical form (what [`encode`] and [`over`] produce): every pair has
//! `active > 0` except possibly the last, which is `(inactive > 0, 0)`; only
//! the first pair may have `inactive = 0`. Decoders accept any pairs whose
//! lengths add up.

use super::over::{over_into_back_unchecked, over_into_front_unchecked, over_pixels_into};
use super::{check_pixels, CHANNELS};
use crate::error::CoreError;

/// An encoded image: `(inactive, active)` pairs and the active pixels.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Encoded {
    /// Flat `(inactive, active)` pixel counts, two entries per run.
    pub runs: Vec<u32>,
    /// The active pixels in order, four floats each.
    pub pixels: Vec<f32>,
}

impl Encoded {
    /// Bytes of the encoded form: 4 per run count, 4 per active float.
    pub fn nbytes(&self) -> usize {
        4 * self.runs.len() + 4 * self.pixels.len()
    }
}

#[inline(always)]
fn inactive(p: &[f32]) -> bool {
    p[0] == 0.0 && p[1] == 0.0 && p[2] == 0.0 && p[3] == 0.0
}

/// Run-length encode `pixels`, skipping runs of fully transparent pixels.
///
/// # Errors
/// If the length is not a multiple of 4 or the image has 2³² pixels or more.
pub fn encode(pixels: &[f32]) -> Result<Encoded, CoreError> {
    check_pixels("pixels", pixels)?;
    let n = pixels.len() / CHANNELS;
    if n > u32::MAX as usize {
        return Err(CoreError::BadRuns(format!(
            "image has {n} pixels, expected at most {} for u32 run lengths",
            u32::MAX
        )));
    }
    let mut out = Encoded::default();
    let px = |i: usize| &pixels[i * CHANNELS..(i + 1) * CHANNELS];
    let mut i = 0;
    while i < n {
        let skip_start = i;
        while i < n && inactive(px(i)) {
            i += 1;
        }
        let active_start = i;
        while i < n && !inactive(px(i)) {
            i += 1;
        }
        out.runs.push((active_start - skip_start) as u32);
        out.runs.push((i - active_start) as u32);
        out.pixels
            .extend_from_slice(&pixels[active_start * CHANNELS..i * CHANNELS]);
    }
    Ok(out)
}

/// Check that `runs` and `active` describe an image of `n_pixels` pixels.
pub fn check(runs: &[u32], active: &[f32], n_pixels: usize) -> Result<(), CoreError> {
    check_pixels("active pixels", active)?;
    if !runs.len().is_multiple_of(2) {
        return Err(CoreError::BadRuns(format!(
            "runs has {} counts, expected (inactive, active) pairs",
            runs.len()
        )));
    }
    let (mut total, mut n_active) = (0u64, 0u64);
    for pair in runs.chunks_exact(2) {
        total += pair[0] as u64 + pair[1] as u64;
        n_active += pair[1] as u64;
    }
    if total != n_pixels as u64 {
        return Err(CoreError::BadRuns(format!(
            "runs cover {total} pixels, expected {n_pixels}"
        )));
    }
    if n_active * CHANNELS as u64 != active.len() as u64 {
        return Err(CoreError::BadRuns(format!(
            "runs count {n_active} active pixels, expected {} (the pixels given)",
            active.len() / CHANNELS
        )));
    }
    Ok(())
}

/// Decode into the dense `out`, writing zeros for inactive pixels.
pub fn decode(runs: &[u32], active: &[f32], out: &mut [f32]) -> Result<(), CoreError> {
    check_pixels("out", out)?;
    check(runs, active, out.len() / CHANNELS)?;
    let (mut pos, mut src) = (0usize, 0usize);
    for pair in runs.chunks_exact(2) {
        let skip = pair[0] as usize * CHANNELS;
        let take = pair[1] as usize * CHANNELS;
        out[pos..pos + skip].fill(0.0);
        pos += skip;
        out[pos..pos + take].copy_from_slice(&active[src..src + take]);
        pos += take;
        src += take;
    }
    Ok(())
}

/// Builds a canonical encoding from segments in pixel order.
struct Builder {
    out: Encoded,
}

impl Builder {
    fn skip(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        match self.out.runs.len() {
            len if len >= 2 && self.out.runs[len - 1] == 0 => self.out.runs[len - 2] += n as u32,
            _ => self.out.runs.extend_from_slice(&[n as u32, 0]),
        }
    }

    fn activate(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        match self.out.runs.last_mut() {
            Some(last) => *last += n as u32,
            None => self.out.runs.extend_from_slice(&[0, n as u32]),
        }
    }
}

/// Walks the segments of one encoding.
struct Cursor<'a> {
    runs: &'a [u32],
    active: &'a [f32],
    /// Index into `runs` of the current count (even: inactive, odd: active).
    at: usize,
    left: usize,
    src: usize,
}

impl<'a> Cursor<'a> {
    fn new(runs: &'a [u32], active: &'a [f32]) -> Self {
        let mut c = Cursor {
            runs,
            active,
            at: 0,
            left: 0,
            src: 0,
        };
        c.left = runs.first().copied().unwrap_or(0) as usize;
        c.settle();
        c
    }

    /// Move past empty segments.
    fn settle(&mut self) {
        while self.left == 0 && self.at + 1 < self.runs.len() {
            self.at += 1;
            self.left = self.runs[self.at] as usize;
        }
    }

    fn is_active(&self) -> bool {
        self.at % 2 == 1
    }

    /// Consume `m` pixels of the current segment; the active pixels if any.
    fn take(&mut self, m: usize) -> Option<&'a [f32]> {
        debug_assert!(m <= self.left);
        self.left -= m;
        let taken = if self.is_active() {
            let s = &self.active[self.src..self.src + m * CHANNELS];
            self.src += m * CHANNELS;
            Some(s)
        } else {
            None
        };
        self.settle();
        taken
    }
}

/// `front over back` with both encoded; the result is encoded (canonical).
///
/// Runs where only one side is active are copied (over with a transparent
/// pixel is the identity); only overlapping active runs are blended.
pub fn over(
    front_runs: &[u32],
    front_active: &[f32],
    back_runs: &[u32],
    back_active: &[f32],
    n_pixels: usize,
) -> Result<Encoded, CoreError> {
    check(front_runs, front_active, n_pixels)?;
    check(back_runs, back_active, n_pixels)?;
    let mut built = Builder {
        out: Encoded {
            runs: Vec::with_capacity(front_runs.len() + back_runs.len()),
            pixels: Vec::with_capacity(front_active.len().max(back_active.len())),
        },
    };
    let mut f = Cursor::new(front_runs, front_active);
    let mut b = Cursor::new(back_runs, back_active);
    let mut pos = 0;
    while pos < n_pixels {
        let m = f.left.min(b.left);
        match (f.take(m), b.take(m)) {
            (None, None) => built.skip(m),
            (Some(fp), None) => {
                built.activate(m);
                built.out.pixels.extend_from_slice(fp);
            }
            (None, Some(bp)) => {
                built.activate(m);
                built.out.pixels.extend_from_slice(bp);
            }
            (Some(fp), Some(bp)) => {
                built.activate(m);
                over_pixels_into(fp, bp, &mut built.out.pixels);
            }
        }
        pos += m;
    }
    Ok(built.out)
}

/// `back = front over back` with `front` encoded and `back` dense.
pub fn over_into_dense_back(
    front_runs: &[u32],
    front_active: &[f32],
    back: &mut [f32],
) -> Result<(), CoreError> {
    check_pixels("back", back)?;
    check(front_runs, front_active, back.len() / CHANNELS)?;
    let (mut pos, mut src) = (0usize, 0usize);
    for pair in front_runs.chunks_exact(2) {
        pos += pair[0] as usize * CHANNELS;
        let take = pair[1] as usize * CHANNELS;
        over_into_back_unchecked(&front_active[src..src + take], &mut back[pos..pos + take]);
        pos += take;
        src += take;
    }
    Ok(())
}

/// `front = front over back` with `front` dense and `back` encoded.
pub fn over_into_dense_front(
    front: &mut [f32],
    back_runs: &[u32],
    back_active: &[f32],
) -> Result<(), CoreError> {
    check_pixels("front", front)?;
    check(back_runs, back_active, front.len() / CHANNELS)?;
    let (mut pos, mut src) = (0usize, 0usize);
    for pair in back_runs.chunks_exact(2) {
        pos += pair[0] as usize * CHANNELS;
        let take = pair[1] as usize * CHANNELS;
        over_into_front_unchecked(&mut front[pos..pos + take], &back_active[src..src + take]);
        pos += take;
        src += take;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::over::{over as dense_over, test_pixels};
    use super::*;

    /// Random pixels with roughly `active_percent`% active, in runs.
    fn sparse_pixels(n: usize, active_percent: u64, seed: u64) -> Vec<f32> {
        let mut v = test_pixels(n, seed);
        let mut state = seed | 1;
        let mut i = 0;
        while i < n {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let len = 1 + (state >> 59) as usize; // runs of 1..32 pixels
            let keep = (state >> 32) % 100 < active_percent;
            for p in i..(i + len).min(n) {
                if !keep {
                    v[p * 4..p * 4 + 4].fill(0.0);
                }
            }
            i += len;
        }
        v
    }

    fn decoded(e: &Encoded, n: usize) -> Vec<f32> {
        let mut out = vec![f32::NAN; n * 4];
        decode(&e.runs, &e.pixels, &mut out).unwrap();
        out
    }

    #[test]
    fn small_example_is_canonical() {
        let z = [0.0f32; 4];
        let a = [0.1f32, 0.2, 0.3, 0.5];
        let img: Vec<f32> = [a, z, z, a, a, z].concat();
        let e = encode(&img).unwrap();
        assert_eq!(e.runs, vec![0, 1, 2, 2, 1, 0]);
        assert_eq!(e.pixels.len(), 12);
        assert_eq!(e.nbytes(), 6 * 4 + 12 * 4);
        assert_eq!(decoded(&e, 6), img);
        assert_eq!(encode(&[]).unwrap(), Encoded::default());
        assert_eq!(encode(&[0.0; 8]).unwrap().runs, vec![2, 0]);
    }

    #[test]
    fn sparse_over_equals_dense_over() {
        for (n, pf, pb) in [
            (0, 10, 10),
            (1, 100, 0),
            (999, 10, 30),
            (5000, 50, 50),
            (300, 0, 100),
        ] {
            let front = sparse_pixels(n, pf, 3 + n as u64);
            let back = sparse_pixels(n, pb, 5 + n as u64);
            let mut expected = vec![0.0; n * 4];
            dense_over(&front, &back, &mut expected).unwrap();
            let (ef, eb) = (encode(&front).unwrap(), encode(&back).unwrap());
            assert_eq!(decoded(&ef, n), front);
            let both = over(&ef.runs, &ef.pixels, &eb.runs, &eb.pixels, n).unwrap();
            assert_eq!(decoded(&both, n), expected, "n={n}");
            // The result is canonical: re-encoding its decoding reproduces it.
            assert_eq!(encode(&expected).unwrap(), both);
            let mut into_back = back.clone();
            over_into_dense_back(&ef.runs, &ef.pixels, &mut into_back).unwrap();
            assert_eq!(into_back, expected);
            let mut into_front = front.clone();
            over_into_dense_front(&mut into_front, &eb.runs, &eb.pixels).unwrap();
            assert_eq!(into_front, expected);
        }
    }

    #[test]
    fn rejects_inconsistent_runs() {
        let mut out = [0.0f32; 8];
        let err = decode(&[1, 2], &[0.0; 8], &mut out[..4]).unwrap_err();
        assert_eq!(err.to_string(), "runs cover 3 pixels, expected 1");
        let err = decode(&[0, 2], &[0.0; 4], &mut out).unwrap_err();
        assert_eq!(
            err.to_string(),
            "runs count 2 active pixels, expected 1 (the pixels given)"
        );
        assert!(check(&[1], &[], 1).is_err());
        assert!(over(&[2, 0], &[], &[1, 0], &[], 2).is_err());
    }
}
