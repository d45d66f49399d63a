//! ChaCha12 as a random number generator: the generator of a seeded test scope
//! (`testing::Overrides::seed`), word for word the stream of rand's `StdRng` from the same seed,
//! whose seeded schedules the tests and the simulator's recorded results fix.
//!
//! The block function is ChaCha's (RFC 8439, section 2.3): a 4x4 state of 32-bit words, the
//! four constant words, the 256-bit key (the seed, as little-endian words), and, as the original
//! ChaCha and `StdRng` lay out the last row, a 64-bit block counter (words 12 and 13, from 0)
//! and a 64-bit stream number (words 14 and 15), here always zero. Twelve rounds (six double
//! rounds), then the input is added to the output. The words are read out in stream order:
//! block after block, each block's words in order; a `u64` is two words, the first its low half
//! (across two blocks when one word of a block is left); bytes are words in little-endian order,
//! and a last partial word is used up by the bytes it gave. `StdRng` generates four blocks at a
//! time and this generator one, which the stream does not show.

use rand::{SeedableRng, TryRng};
use std::convert::Infallible;

/// "expand 32-byte k", the constant first row.
const CONSTANTS: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// The quarter round on words `a`, `b`, `c`, `d` of the state (RFC 8439, section 2.1).
#[inline(always)]
fn quarter_round(x: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(16);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(12);
    x[a] = x[a].wrapping_add(x[b]);
    x[d] = (x[d] ^ x[a]).rotate_left(8);
    x[c] = x[c].wrapping_add(x[d]);
    x[b] = (x[b] ^ x[c]).rotate_left(7);
}

/// The block of `input` (RFC 8439, section 2.3.1, with 12 rounds).
fn block(input: &[u32; 16]) -> [u32; 16] {
    let mut x = *input;
    for _ in 0..6 {
        // A column round, then a diagonal round.
        quarter_round(&mut x, 0, 4, 8, 12);
        quarter_round(&mut x, 1, 5, 9, 13);
        quarter_round(&mut x, 2, 6, 10, 14);
        quarter_round(&mut x, 3, 7, 11, 15);
        quarter_round(&mut x, 0, 5, 10, 15);
        quarter_round(&mut x, 1, 6, 11, 12);
        quarter_round(&mut x, 2, 7, 8, 13);
        quarter_round(&mut x, 3, 4, 9, 14);
    }
    for (out, word) in x.iter_mut().zip(input) {
        *out = out.wrapping_add(*word);
    }
    x
}

/// The ChaCha12 generator with a 256-bit seed, stream 0, from block 0.
pub(crate) struct ChaCha12 {
    /// The state of the next block: constants, key, block counter, stream.
    state: [u32; 16],
    /// The current block's words.
    buffer: [u32; 16],
    /// The next word of `buffer` to read; 16 when it is used up.
    index: usize,
}

impl ChaCha12 {
    /// Generates the next block into the buffer.
    fn refill(&mut self) {
        self.buffer = block(&self.state);
        let counter =
            ((u64::from(self.state[13]) << 32) | u64::from(self.state[12])).wrapping_add(1);
        self.state[12] = counter as u32;
        self.state[13] = (counter >> 32) as u32;
        self.index = 0;
    }

    #[inline]
    fn next_word(&mut self) -> u32 {
        if self.index >= 16 {
            self.refill();
        }
        let word = self.buffer[self.index];
        self.index += 1;
        word
    }
}

impl SeedableRng for ChaCha12 {
    type Seed = [u8; 32];

    fn from_seed(seed: [u8; 32]) -> ChaCha12 {
        let mut state = [0; 16];
        state[..4].copy_from_slice(&CONSTANTS);
        for (word, bytes) in state[4..12].iter_mut().zip(seed.chunks_exact(4)) {
            *word = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        // The counter (12, 13) and the stream (14, 15) start at zero.
        ChaCha12 {
            state,
            buffer: [0; 16],
            // Nothing generated until the first draw.
            index: 16,
        }
    }
}

impl TryRng for ChaCha12 {
    type Error = Infallible;

    #[inline]
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(self.next_word())
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let lo = self.next_word();
        let hi = self.next_word();
        Ok(u64::from(lo) | (u64::from(hi) << 32))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        let mut chunks = dst.chunks_exact_mut(4);
        for chunk in &mut chunks {
            chunk.copy_from_slice(&self.next_word().to_le_bytes());
        }
        let rest = chunks.into_remainder();
        if !rest.is_empty() {
            let n = rest.len();
            rest.copy_from_slice(&self.next_word().to_le_bytes()[..n]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::ChaCha12;
    use rand::rngs::StdRng;
    use rand::{Rng, RngExt, SeedableRng};

    /// The first two blocks of ChaCha12 with an all-zero nonce, as little-endian `u128`s:
    /// draft-strombergson-chacha-test-vectors-01, TC1 (all-zero key) and TC2 (the key's first
    /// bit set).
    #[test]
    fn gives_the_published_test_vectors() {
        let tc1: [u128; 8] = [
            0xd583265f12ce1f8153f955076a9af49b,
            0x5f15ae2ea589007e1474e049bbc32904,
            0x798cfaac3428e82cc0e37ad279f86405,
            0xbe2613412fe80b611969dea02c9f623a,
            0x3d17e08c3371fc86fe743e204188d50b,
            0xb489c04c21851515cccbbd19b7eb28c6,
            0x43c88c1b97b802c611f14ca1cd8d2542,
            0x1693e617b0a64427c0515190ca461ee9,
        ];
        let tc2: [u128; 8] = [
            0x09a225cdf090f0eef6b0565d596e0512,
            0x10dd4d0bff1802930f5d5290278c2449,
            0xfefdfe067d7a109ee254a4d9392200a6,
            0xc029dc60c972179bf2f944a0eb0f21f0,
            0x2a37692ab05e660e2404c6cbc566730c,
            0xc8a72980b8c4c72a0978bb6fb279f97a,
            0xaf15ba8e302e43907dfcbb17c23b5154,
            0xa9177125baafe601560d10ef48eb5ac6,
        ];
        let mut key2 = [0; 32];
        key2[0] = 1;
        for (seed, expected) in [([0; 32], tc1), (key2, tc2)] {
            let mut bytes = [0; 128];
            ChaCha12::from_seed(seed).fill_bytes(&mut bytes);
            let got: Vec<u128> = bytes
                .chunks_exact(16)
                .map(|c| u128::from_le_bytes(c.try_into().unwrap()))
                .collect();
            assert_eq!(got, expected);
        }
    }

    /// The block counter is 64 bits wide: block 2^32 - 1 is followed by block 2^32, not by
    /// block 0 (as `StdRng` has it: the values of rand's own value-stability test at that
    /// counter, all-zero key).
    #[test]
    fn the_counter_carries_into_its_high_word() {
        let expected: [u128; 8] = [
            0xf106e2fcbb524248292ac9f150afa6d7,
            0x12032ef6c183b50a83a3309513dd017d,
            0x2c93ff300438eaed6c958a9aa1619382,
            0x74fc0624270ab858508377945edb52d0,
            0xe5f4f4a8b8810524264d8911dc537bcc,
            0x18a6a6cbdc1f823fb1231280056740af,
            0xabdae0a44b1f45edbccc83dcd3f8638a,
            0xad6b649f12f70de567cc39740dbb8a22,
        ];
        let mut rng = ChaCha12::from_seed([0; 32]);
        rng.state[12] = u32::MAX;
        let mut bytes = [0; 128];
        rng.fill_bytes(&mut bytes);
        let got: Vec<u128> = bytes
            .chunks_exact(16)
            .map(|c| u128::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, expected);
        assert_eq!((rng.state[12], rng.state[13]), (1, 1));
    }

    /// One draw, as the engine and its tests make them (the engine through `&mut dyn Rng`).
    fn draw(rng: &mut dyn Rng, op: u32, arg: u64) -> Vec<u8> {
        match op {
            0 => rng.next_u32().to_le_bytes().to_vec(),
            1 => rng.next_u64().to_le_bytes().to_vec(),
            2 => rng.random::<f64>().to_le_bytes().to_vec(),
            3 => rng.random::<u128>().to_le_bytes().to_vec(),
            4 => rng.random::<u64>().to_le_bytes().to_vec(),
            5 => rng.random::<u32>().to_le_bytes().to_vec(),
            6 => rng.random_range(0..=arg).to_le_bytes().to_vec(),
            7 => rng.random_range(arg / 2..=arg).to_le_bytes().to_vec(),
            8 => rng
                .random_range(0..(arg % 100 + 1) as usize)
                .to_le_bytes()
                .to_vec(),
            9 => vec![u8::from(rng.random_bool(0.9))],
            10 => rng.random_range(0.0..1.0_f64).to_le_bytes().to_vec(),
            _ => {
                // Bytes of any length, odd ones included, up to a few refills at once.
                let mut bytes = vec![0; (arg % 600) as usize];
                rng.fill_bytes(&mut bytes);
                bytes
            }
        }
    }

    /// Every draw the same as `StdRng`'s from the same seed, whatever the mix of draws and
    /// wherever in the buffer it falls.
    #[test]
    fn draws_as_std_rng_does() {
        let mut script = StdRng::seed_from_u64(0x5745_4947);
        for seed in 0..300u64 {
            let (mut ours, mut theirs) = if seed % 3 == 0 {
                let bytes: [u8; 32] = script.random();
                (ChaCha12::from_seed(bytes), StdRng::from_seed(bytes))
            } else {
                (ChaCha12::seed_from_u64(seed), StdRng::seed_from_u64(seed))
            };
            // Some seeds draw one kind only, the others a mix of kinds.
            let only = (seed % 5 == 0).then(|| script.random_range(0..12));
            for step in 0..400 {
                let op = only.unwrap_or_else(|| script.random_range(0..12));
                // Small and large bounds: ranges near 2^64 take the widening path's second draw.
                let arg = match script.random_range(0..3) {
                    0 => script.random_range(0..1000),
                    1 => script.random::<u64>(),
                    _ => u64::MAX - script.random_range(0..3),
                };
                assert_eq!(
                    draw(&mut ours, op, arg),
                    draw(&mut theirs, op, arg),
                    "seed {seed}, step {step}, draw {op}({arg})"
                );
            }
        }
    }

    /// A `u64` across a refill: its low half is the last word of one buffer, its high half the
    /// first of the next; and one drawn when the buffer is used up takes two fresh words.
    #[test]
    fn a_u64_across_a_refill() {
        // StdRng's buffer is four blocks (64 words), this one's one block (16 words).
        for skip in [13, 14, 15, 16, 17, 61, 62, 63, 64, 65, 127, 128] {
            let mut ours = ChaCha12::seed_from_u64(9);
            let mut theirs = StdRng::seed_from_u64(9);
            for _ in 0..skip {
                assert_eq!(ours.next_u32(), theirs.next_u32());
            }
            for _ in 0..3 {
                assert_eq!(ours.next_u64(), theirs.next_u64(), "after {skip} words");
            }
            let mut words = ChaCha12::seed_from_u64(9);
            let words: Vec<u32> = (0..skip + 6).map(|_| words.next_u32()).collect();
            let mut again = ChaCha12::seed_from_u64(9);
            for _ in 0..skip {
                again.next_u32();
            }
            let low_first = u64::from(words[skip]) | (u64::from(words[skip + 1]) << 32);
            assert_eq!(again.next_u64(), low_first);
        }
    }
}
