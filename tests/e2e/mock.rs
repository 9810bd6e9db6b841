//! The mock model server every end-to-end test (and the keystroke benchmark,
//! `benches/keystroke.rs`) drives its agent against: `mock_model.py` on 127.0.0.1.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The mock model server: its port comes on the first stdout line.
pub(crate) struct Mock {
    child: Child,
    pub(crate) port: u16,
}

impl Mock {
    pub(crate) fn start(python: &Path) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/mock_model.py");
        let mut child = Command::new(python)
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the mock model server");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("mock port");
        let port = first.trim().parse().expect("mock port number");
        Self { child, port }
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        // Closing its stdin stops it; kill in case it does not.
        drop(self.child.stdin.take());
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
