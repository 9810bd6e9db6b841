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
//!
//! Nor may a row move the generation at all unless the store announced it: a row the
//! collector or the launcher wrote (`via: http`, `via: launcher`: they stamp their own
//! generation, whatever the body says) announces its generation, and so does a reader
//! that saw it in the store's records ([`DeliveryFilter::announce`]: `collector.json`,
//! `channel.json`). An emitter's fallback row takes its generation from the environment
//! a tool of the agent inherits, so on its own it can only stay in the current one.

use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use crate::envelope::Via;
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
    /// A newer generation that no collector's or launcher's row or record announced.
    Unannounced {
        current: u64,
    },
}

#[derive(Debug)]
pub struct DeliveryFilter {
    generation: Option<u64>,
    /// The newest generation the store announced.
    announced: Option<u64>,
    max_seq: Option<u64>,
    seen: HashSet<(u64, u64), BuildHasherDefault<KeyHasher>>,
    order: VecDeque<(u64, u64)>,
}

impl DeliveryFilter {
    pub fn new() -> Self {
        // Sized once for the whole window, so the set never grows mid-stream.
        Self {
            generation: None,
            announced: None,
            max_seq: None,
            seen: HashSet::with_capacity_and_hasher(DEDUP_WINDOW + 1, Default::default()),
            order: VecDeque::with_capacity(DEDUP_WINDOW + 1),
        }
    }

    /// The store announced `generation` (its collector's or launcher's record says so).
    pub fn announce(&mut self, generation: u64) {
        self.announced = self.announced.max(Some(generation));
    }

    /// The newest generation announced so far.
    pub fn announced(&self) -> Option<u64> {
        self.announced
    }

    pub fn admit(&mut self, meta: &RowMeta) -> Admission {
        let Some(generation) = meta.generation else {
            // A bare or capture line: nothing to de-duplicate on.
            return Admission::Fresh;
        };
        let by_store = matches!(meta.via, Some(Via::Http | Via::Launcher));
        match self.generation {
            Some(current) if generation < current => {
                return Admission::StaleGeneration { current };
            }
            Some(current) if generation == current => {}
            Some(current) if generation - current > MAX_GENERATION_JUMP => {
                return Admission::GenerationJump { current };
            }
            Some(current) if !by_store && self.announced.is_none_or(|a| a < generation) => {
                return Admission::Unannounced { current };
            }
            _ => {
                if by_store {
                    self.announce(generation);
                }
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

    fn fallback(generation: u64, seq: u64) -> RowMeta {
        RowMeta {
            via: Some(Via::CommandFallback),
            ..meta(generation, seq)
        }
    }

    #[test]
    fn only_an_announced_generation_may_be_entered_by_a_fallback_row() {
        let mut f = DeliveryFilter::new();
        assert_eq!(
            f.admit(&fallback(1, 1)),
            Admission::Fresh,
            "the first row sets it"
        );
        assert_eq!(f.admit(&fallback(1, 2)), Admission::Fresh);
        assert_eq!(
            f.admit(&fallback(2, 3)),
            Admission::Unannounced { current: 1 }
        );
        assert_eq!(f.admit(&meta(1, 4)), Admission::Fresh, "still generation 1");
        f.announce(2);
        assert_eq!(f.admit(&fallback(2, 1)), Admission::Fresh);
        // A collector's row announces its own generation.
        assert_eq!(f.admit(&meta(3, 1)), Admission::Fresh);
        assert_eq!(f.admit(&fallback(3, 2)), Admission::Fresh);
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
