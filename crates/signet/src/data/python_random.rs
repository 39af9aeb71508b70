//! Python's `random.Random(seed)`: the Mersenne Twister seeded the way CPython seeds it from an
//! integer, with `random`, `randint`, `shuffle` and `sample` drawing exactly as CPython 3.11 does.
//! DSPy's optimizers and most DSPy scripts shuffle and sample with it, so the same seed picks the
//! same examples and demos in Signet as in Python.

const N: usize = 624;
const M: usize = 397;

/// CPython's `random.Random`, seeded with an integer.
#[derive(Clone)]
pub(crate) struct PyRandom {
    state: Box<[u32; N]>,
    index: usize,
}

impl PyRandom {
    /// `random.Random(seed)` (the sign of the seed is ignored, as in CPython).
    pub(crate) fn new(seed: i64) -> PyRandom {
        let mut magnitude = seed.unsigned_abs();
        let mut key = Vec::new();
        while magnitude > 0 {
            key.push(magnitude as u32);
            magnitude >>= 32;
        }
        if key.is_empty() {
            key.push(0);
        }
        let mut random = PyRandom {
            state: Box::new([0; N]),
            index: N,
        };
        random.init_by_array(&key);
        random
    }

    /// numpy's legacy `RandomState(seed)`: the same generator seeded with `init_genrand` (optuna's
    /// samplers draw from it); `random()` is then numpy's `random_sample()`.
    pub(crate) fn numpy(seed: u32) -> PyRandom {
        let mut random = PyRandom {
            state: Box::new([0; N]),
            index: N,
        };
        random.init_genrand(seed);
        random
    }

    fn init_genrand(&mut self, seed: u32) {
        self.state[0] = seed;
        for i in 1..N {
            let previous = self.state[i - 1];
            self.state[i] = 1_812_433_253u32
                .wrapping_mul(previous ^ (previous >> 30))
                .wrapping_add(i as u32);
        }
        self.index = N;
    }

    fn init_by_array(&mut self, key: &[u32]) {
        self.init_genrand(19_650_218);
        let mt = &mut self.state;
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let previous = mt[i - 1];
            mt[i] = (mt[i] ^ (previous ^ (previous >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let previous = mt[i - 1];
            mt[i] = (mt[i] ^ (previous ^ (previous >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
    }

    fn next_u32(&mut self) -> u32 {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        const MATRIX_A: u32 = 0x9908_b0df;
        if self.index >= N {
            let mt = &mut self.state;
            for k in 0..N {
                let y = (mt[k] & UPPER) | (mt[(k + 1) % N] & LOWER);
                let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
                mt[k] = mt[(k + M) % N] ^ (y >> 1) ^ mag;
            }
            self.index = 0;
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// The generator's state (Python's `getstate()`): 624 words and the position in them.
    pub(crate) fn state(&self) -> (Vec<u32>, usize) {
        (self.state.to_vec(), self.index)
    }

    /// A generator continuing from a [`state`](Self::state); `None` when the state is not one.
    pub(crate) fn from_state(words: &[u32], index: usize) -> Option<PyRandom> {
        let state: Box<[u32; N]> = words.to_vec().into_boxed_slice().try_into().ok()?;
        (index <= N).then_some(PyRandom { state, index })
    }

    /// `random()`: a float in `[0, 1)` with 53 random bits.
    pub(crate) fn random(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `getrandbits(k)` for `k <= 64`: 32-bit words, least significant first, the last one cut
    /// to the bits still wanted.
    fn bits(&mut self, k: u32) -> u64 {
        if k <= 32 {
            return if k == 0 {
                0
            } else {
                u64::from(self.next_u32() >> (32 - k))
            };
        }
        let low = u64::from(self.next_u32());
        let high = u64::from(self.next_u32() >> (64 - k));
        (high << 32) | low
    }

    /// `_randbelow(n)`: uniform in `[0, n)`, by rejection on `n.bit_length()` bits (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        let n = n as u64;
        let k = u64::BITS - n.leading_zeros();
        loop {
            let r = self.bits(k);
            if r < n {
                return r as usize;
            }
        }
    }

    /// `randint(low, high)`: uniform in `[low, high]`.
    pub(crate) fn randint(&mut self, low: usize, high: usize) -> usize {
        low + self.below(high - low + 1)
    }

    /// `shuffle(items)` in place.
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }

    /// The positions `sample(range(n), k)` picks, in the order it picks them (`k <= n`).
    pub(crate) fn sample_indices(&mut self, n: usize, k: usize) -> Vec<usize> {
        let k = k.min(n);
        let mut set_size = 21usize;
        if k > 5 {
            let exponent = ((k * 3) as f64).ln() / 4f64.ln();
            set_size += 4usize.pow(exponent.ceil() as u32);
        }
        if n <= set_size {
            let mut pool: Vec<usize> = (0..n).collect();
            (0..k)
                .map(|i| {
                    let j = self.below(n - i);
                    let picked = pool[j];
                    pool[j] = pool[n - i - 1];
                    picked
                })
                .collect()
        } else {
            let mut selected = std::collections::HashSet::new();
            (0..k)
                .map(|_| {
                    loop {
                        let j = self.below(n);
                        if selected.insert(j) {
                            break j;
                        }
                    }
                })
                .collect()
        }
    }

    /// `sample(items, k)`: `k` distinct items (copies), in the order Python picks them.
    pub(crate) fn sample<T: Clone>(&mut self, items: &[T], k: usize) -> Vec<T> {
        self.sample_indices(items.len(), k)
            .into_iter()
            .map(|i| items[i].clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::PyRandom;

    // Expected values printed by CPython 3.11's `random` module.

    #[test]
    fn numpy_random_state_matches() {
        // numpy: RandomState(0).random_sample(3)
        let mut random = PyRandom::numpy(0);
        let got: Vec<f64> = (0..3).map(|_| random.random()).collect();
        assert_eq!(
            got,
            [0.5488135039273248, 0.7151893663724195, 0.6027633760716439]
        );
    }

    #[test]
    fn a_saved_state_continues_the_same_stream() {
        let mut a = PyRandom::new(7);
        a.random();
        let (words, index) = a.state();
        let mut b = PyRandom::from_state(&words, index).unwrap();
        assert_eq!(a.below(1000), b.below(1000));
        assert!(PyRandom::from_state(&words[1..], index).is_none());
    }

    #[test]
    fn floats_match_cpython() {
        let mut random = PyRandom::new(0);
        let drawn: Vec<f64> = (0..3).map(|_| random.random()).collect();
        assert_eq!(
            drawn,
            [0.8444218515250481, 0.7579544029403025, 0.420571580830845]
        );
        let mut random = PyRandom::new(0);
        assert_eq!(
            (random.bits(5), random.bits(32), random.bits(1)),
            (27, 1654615998, 1)
        );
    }

    #[test]
    fn samples_match_cpython_for_small_and_large_populations() {
        let mut random = PyRandom::new(0);
        assert_eq!(random.sample_indices(10, 4), [6, 9, 0, 2]);
        assert_eq!(random.sample_indices(100, 7), [65, 62, 51, 38, 61, 45, 74]);
        assert_eq!(random.sample_indices(30, 8), [28, 6, 16, 4, 9, 26, 3, 19]);
    }

    #[test]
    fn shuffles_and_randints_match_cpython() {
        let mut items: Vec<u32> = (0..20).collect();
        PyRandom::new(3).shuffle(&mut items);
        assert_eq!(
            items,
            [
                8, 3, 6, 5, 15, 16, 2, 12, 0, 1, 13, 10, 19, 9, 14, 11, 4, 17, 18, 7
            ]
        );
        let mut items: Vec<u32> = (0..10).collect();
        PyRandom::new((1 << 40) + 5).shuffle(&mut items);
        assert_eq!(items, [1, 2, 3, 6, 7, 0, 5, 4, 9, 8]);
        let picks: Vec<usize> = (0..8).map(|s| PyRandom::new(s).randint(1, 4)).collect();
        assert_eq!(picks, [4, 2, 1, 2, 2, 3, 1, 3]);
    }
}
