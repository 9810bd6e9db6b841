//! Replay on two threads: reading, splitting and parsing lines are shared with a helper
//! thread, while the calling thread feeds the parsed rows, in line order, to the one
//! pipeline and writes the output.
//!
//! Parsing a line depends on no other line; everything after it (the delivery filter,
//! detection, the correlator, the output) depends on every line before. So the input is
//! taken in batches of whole lines. While the calling thread works through batch *k*, the
//! helper reads batch *k + 1* and then parses chunks of *k*. Both threads claim the chunks
//! of a batch from one counter, and the read of the next batch too, so neither waits while
//! there is work left: on a machine whose other core is busy, the calling thread parses
//! and reads by itself rather than wait for the helper to be scheduled. It feeds chunk
//! after chunk in order, whichever thread parsed it. The output
//! is the same, byte for byte, as a replay on one thread: the same rows reach the same
//! pipeline in the same order.
//!
//! Waiting is blocking (a channel receive, a thread join): nothing spins. Memory is two
//! batches and their parsed rows, whatever the length of the input, and the buffers are
//! reused from batch to batch.

use std::io::{self, BufRead};
use std::mem;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::Duration;

use hooktrack_core::read::{LineReader, ReadLine};
use hooktrack_core::row::{LineError, Row, parse_line};

/// Lines in a batch: enough to pay for starting the helper (~20 µs) and for waiting for
/// it at the batch's end many times over, few enough that two batches stay ~10 MiB.
const BATCH_LINES: usize = 8_192;
/// Lines in a chunk, the unit the two threads share.
const CHUNK_LINES: usize = 128;
/// How long the calling thread waits for a chunk the helper is parsing before it parses
/// the chunk itself: a chunk takes ~100 µs to parse, a descheduled helper milliseconds.
const STEAL_AFTER: Duration = Duration::from_micros(500);
/// A batch also ends after this many bytes, so long lines do not make it large.
const BATCH_BYTES: usize = 4 << 20;

/// A line of a batch: its bytes are `bytes[start..end]` of the batch.
enum Slot {
    Line {
        number: u64,
        start: usize,
        end: usize,
    },
    Oversized {
        number: u64,
        len: u64,
    },
    Truncated {
        number: u64,
    },
}

/// Whole lines read ahead, copied out of the reader's buffer.
#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    slots: Vec<Slot>,
    /// The input ended after these lines.
    ended: bool,
    /// Reading failed after these lines.
    error: Option<io::Error>,
}

type Parsed<'b> = (u64, Result<Row<'b>, LineError>);

/// Runs every line of `reader` through `feed`, in order, parsing on two threads. `feed`
/// gets each row to take from; the row itself is dropped by the thread that parsed it.
/// Returns the read error that ended the input, if one did, after every line before it
/// was fed; stops at the first error of `feed`.
pub(super) fn run<R, E, F>(mut reader: LineReader<R>, mut feed: F) -> Result<Option<io::Error>, E>
where
    R: BufRead + Send,
    F: for<'b> FnMut(u64, Result<&mut Row<'b>, LineError>) -> Result<(), E>,
{
    let mut current = Batch::default();
    let mut next = Batch::default();
    fill(&mut reader, &mut current);
    // Row buffers, kept empty between batches.
    let mut pool: Vec<Vec<Parsed<'static>>> = Vec::new();
    loop {
        let last = current.ended || current.error.is_some();
        // The read of the next batch, taken by whichever thread is free first.
        let read_next = Mutex::new((!last).then_some((&mut reader, &mut next)));
        let read_ahead = || {
            let taken = read_next
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            if let Some((reader, batch)) = taken {
                fill(reader, batch);
            }
        };
        let batch = &current;
        let chunks = batch.slots.len().div_ceil(CHUNK_LINES);
        let claimed = AtomicUsize::new(0);
        let claim = || {
            let c = claimed.fetch_add(1, Ordering::Relaxed);
            (c < chunks).then_some(c)
        };
        let mut helper_pool: Vec<Vec<Parsed<'_>>> =
            pool.drain(..pool.len() / 2).map(recycle).collect();
        let mut own_pool: Vec<Vec<Parsed<'_>>> = pool.drain(..).map(recycle).collect();
        let mut spent: Vec<Vec<Parsed<'_>>> = Vec::with_capacity(chunks);
        let (fed, emptied) = thread::scope(|scope| {
            // Capacity for every chunk: the helper never blocks on sending.
            let (done, parsed) = mpsc::sync_channel::<(usize, Vec<Parsed<'_>>)>(chunks.max(1));
            // Rows the helper parsed come back to it once fed: it allocated their payloads,
            // so it frees them (a free on the other thread contends for the allocator's
            // lock on every row).
            let (give_back, given_back) = mpsc::channel::<Vec<Parsed<'_>>>();
            let helper = scope.spawn(|| {
                // The next batch first: the calling thread cannot go on without it, and
                // read last it was the calling thread's wait at every batch's end.
                read_ahead();
                while let Some(c) = claim() {
                    let mut rows = helper_pool.pop().unwrap_or_default();
                    parse_chunk(batch, c, &mut rows);
                    if done.send((c, rows)).is_err() {
                        break;
                    }
                }
                drop(done);
                let mut emptied = Vec::new();
                for mut rows in given_back {
                    rows.clear();
                    emptied.push(rows);
                }
                emptied
            });
            let mut ready: Vec<Option<Chunk<'_>>> = (0..chunks).map(|_| None).collect();
            let mut result = Ok(());
            'chunks: for want in 0..chunks {
                while ready[want].is_none() {
                    match parsed.try_recv() {
                        Ok((c, rows)) => keep(&mut ready, &give_back, want, c, rows),
                        // Nothing parsed yet: parse a chunk here rather than wait.
                        Err(TryRecvError::Empty) => match claim() {
                            Some(c) => {
                                let mut rows = own_pool.pop().unwrap_or_default();
                                parse_chunk(batch, c, &mut rows);
                                ready[c] = Some(Chunk {
                                    rows,
                                    by_helper: false,
                                });
                            }
                            // The helper holds this chunk: wait a little for it, then
                            // parse it here too (a helper the scheduler put aside must
                            // not stall the replay; the first result is used).
                            None => match parsed.recv_timeout(STEAL_AFTER) {
                                Ok((c, rows)) => keep(&mut ready, &give_back, want, c, rows),
                                Err(RecvTimeoutError::Timeout) => {
                                    let mut rows = own_pool.pop().unwrap_or_default();
                                    parse_chunk(batch, want, &mut rows);
                                    ready[want] = Some(Chunk {
                                        rows,
                                        by_helper: false,
                                    });
                                }
                                // The helper is gone (it panicked): the join says why.
                                Err(RecvTimeoutError::Disconnected) => break 'chunks,
                            },
                        },
                        Err(TryRecvError::Disconnected) => break 'chunks,
                    }
                }
                let Some(Chunk {
                    mut rows,
                    by_helper,
                }) = ready[want].take()
                else {
                    break;
                };
                for (number, row) in &mut rows {
                    let row = match row {
                        Ok(row) => Ok(row),
                        Err(e) => Err(e.clone()),
                    };
                    if let Err(e) = feed(*number, row) {
                        result = Err(e);
                        break;
                    }
                }
                if by_helper {
                    // A helper gone (panicked) cannot take them: drop them here.
                    if let Err(mpsc::SendError(rows)) = give_back.send(rows) {
                        spent.push(rows);
                    }
                } else {
                    rows.clear();
                    spent.push(rows);
                }
                if result.is_err() {
                    break;
                }
            }
            // Tell a helper still parsing to stop; read ahead unless it already does.
            drop(parsed);
            if result.is_ok() {
                read_ahead();
            }
            drop(give_back);
            match helper.join() {
                Ok(emptied) => (result, emptied),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        });
        for rows in [spent, own_pool, helper_pool, emptied]
            .into_iter()
            .flatten()
        {
            pool.push(recycle(rows));
        }
        fed?;
        if last {
            return Ok(current.error.take());
        }
        mem::swap(&mut current, &mut next);
    }
}

/// Parsed rows of one chunk, and which thread parsed them.
struct Chunk<'b> {
    rows: Vec<Parsed<'b>>,
    by_helper: bool,
}

/// Keeps chunk `c` from the helper, unless the calling thread already parsed (and maybe
/// fed) it: then the helper's rows go straight back to it.
fn keep<'b>(
    ready: &mut [Option<Chunk<'b>>],
    give_back: &mpsc::Sender<Vec<Parsed<'b>>>,
    want: usize,
    c: usize,
    rows: Vec<Parsed<'b>>,
) {
    if c < want || ready[c].is_some() {
        // Only if the helper is gone; then its rows are dropped here.
        let _ = give_back.send(rows);
    } else {
        ready[c] = Some(Chunk {
            rows,
            by_helper: true,
        });
    }
}

/// An empty row buffer for rows of another batch. In-place collection keeps the
/// allocation: the types differ only in the lifetime. (`filter` cannot change the type,
/// which is the point here.)
#[allow(clippy::unnecessary_filter_map)]
fn recycle<'to>(rows: Vec<Parsed<'_>>) -> Vec<Parsed<'to>> {
    rows.into_iter().filter_map(|_| None).collect()
}

fn parse_chunk<'b>(batch: &'b Batch, chunk: usize, into: &mut Vec<Parsed<'b>>) {
    let from = chunk * CHUNK_LINES;
    let to = (from + CHUNK_LINES).min(batch.slots.len());
    into.extend(batch.slots[from..to].iter().map(|slot| match *slot {
        Slot::Line { number, start, end } => (number, parse_line(&batch.bytes[start..end])),
        Slot::Oversized { number, len } => (number, Err(LineError::Oversized { len })),
        Slot::Truncated { number } => (number, Err(LineError::Truncated)),
    }));
}

/// Reads the next batch of lines into `batch` (emptied first).
fn fill<R: BufRead>(reader: &mut LineReader<R>, batch: &mut Batch) {
    batch.bytes.clear();
    batch.slots.clear();
    batch.ended = false;
    batch.error = None;
    while batch.slots.len() < BATCH_LINES && batch.bytes.len() < BATCH_BYTES {
        match reader.next_line() {
            Ok(Some(ReadLine::Line { number, bytes })) => {
                let start = batch.bytes.len();
                batch.bytes.extend_from_slice(bytes);
                let end = batch.bytes.len();
                batch.slots.push(Slot::Line { number, start, end });
            }
            // `Long` comes from a skimming splitter only, never from this reader's.
            Ok(Some(ReadLine::Oversized { number, len } | ReadLine::Long { number, len, .. })) => {
                batch.slots.push(Slot::Oversized { number, len });
            }
            Ok(Some(ReadLine::Truncated { number, .. })) => {
                batch.slots.push(Slot::Truncated { number });
            }
            Ok(None) => {
                batch.ended = true;
                return;
            }
            Err(e) => {
                batch.error = Some(e);
                return;
            }
        }
    }
}
