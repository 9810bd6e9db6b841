//! De-duplication of deliveries and the generation gate, before normalization.
//!
//! `(generation, emitter_seq)` identifies one hook invocation: a row seen twice (HTTP timed
//! out after the collector appended, then the fallback appended too) is dropped the second
//! time. Rows of a generation older than the newest seen are stale and dropped.
//!
//! A generation moves forward by one per launch. A row that jumps further than
//! [`MAX_GENERATION_JUMP`] past the current one is refused, not adopted: otherwise one
//! forged or corrupt row (a tool subprocess holding the token, a hand edit) would make
//! every later row of the real session stale.

use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use crate::row::RowMeta;

/// How many recent delivery keys are remembered. Duplicates arrive close together (a
/// timed-out HTTP post and its fallback append, a few deliveries apart); a bounded window
/// keeps memory flat on endless streams, and a small one stays in cache.
pub const DEDUP_WINDOW: usize = 4_096;

/// How far past the current generation a row may move it.
pub const MAX_GENERATION_JUMP: u64 = 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    Fresh,
    /// Fresh, but its emitter_seq is below one already seen in its generation.
    FreshOutOfOrder,
    Duplicate,
    StaleGeneration {
        current: u64,
    },
    GenerationJump {
        current: u64,
    },
}

#[derive(Debug)]
pub struct DeliveryFilter {
    generation: Option<u64>,
    max_seq: Option<u64>,
    seen: HashSet<(u64, u64), BuildHasherDefault<KeyHasher>>,
    order: VecDeque<(u64, u64)>,
}

impl DeliveryFilter {
    pub fn new() -> Self {
        // Sized once for the whole window, so the set never grows mid-stream.
        Self {
            generation: None,
            max_seq: None,
            seen: HashSet::with_capacity_and_hasher(DEDUP_WINDOW + 1, Default::default()),
            order: VecDeque::with_capacity(DEDUP_WINDOW + 1),
        }
    }

    pub fn admit(&mut self, meta: &RowMeta) -> Admission {
        let Some(generation) = meta.generation else {
            // A bare or capture line: nothing to de-duplicate on.
            return Admission::Fresh;
        };
        match self.generation {
            Some(current) if generation < current => {
                return Admission::StaleGeneration { current };
            }
            Some(current) if generation == current => {}
            Some(current) if generation - current > MAX_GENERATION_JUMP => {
                return Admission::GenerationJump { current };
            }
            _ => {
                self.generation = Some(generation);
                self.max_seq = None;
            }
        }
        let Some(seq) = meta.emitter_seq else {
            return Admission::Fresh;
        };
        let key = (generation, seq);
        if !self.seen.insert(key) {
            return Admission::Duplicate;
        }
        self.order.push_back(key);
        if self.order.len() > DEDUP_WINDOW
            && let Some(old) = self.order.pop_front()
        {
            self.seen.remove(&old);
        }
        match self.max_seq {
            Some(max) if seq < max => Admission::FreshOutOfOrder,
            _ => {
                self.max_seq = Some(seq);
                Admission::Fresh
            }
        }
    }
}

/// A multiply-rotate hasher for the window's `(generation, emitter_seq)` keys. The keys come
/// from our own emitter's counters, so there is no adversary to resist and SipHash's cost
/// (7% of a replay) buys nothing; the window is bounded either way.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        // FxHash's step: rotate, mix in, multiply by a large odd constant.
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for DeliveryFilter {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::row::Via;

    fn meta(generation: u64, seq: u64) -> RowMeta {
        RowMeta {
            generation: Some(generation),
            emitter_seq: Some(seq),
            sequence: None,
            via: Some(Via::Http),
            at: None,
        }
    }

    #[test]
    fn drops_duplicates_and_stale_generations() {
        let mut f = DeliveryFilter::new();
        assert_eq!(f.admit(&meta(1, 1)), Admission::Fresh);
        assert_eq!(f.admit(&meta(1, 3)), Admission::Fresh);
        assert_eq!(f.admit(&meta(1, 2)), Admission::FreshOutOfOrder);
        assert_eq!(f.admit(&meta(1, 3)), Admission::Duplicate);
        assert_eq!(f.admit(&meta(2, 1)), Admission::Fresh);
        assert_eq!(
            f.admit(&meta(1, 9)),
            Admission::StaleGeneration { current: 2 }
        );
        assert_eq!(f.admit(&meta(2, 1)), Admission::Duplicate);
    }
}
