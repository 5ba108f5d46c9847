//! Helpers shared by the test modules.

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// `tests/data/<name>`.
#[cfg(feature = "report")]
pub fn data(name: &str) -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Compares `actual` with the golden file `tests/data/<name>`; rewrites the file instead when
/// `HERMES_UPDATE_GOLDEN=1`.
#[cfg(feature = "report")]
pub fn check_golden(name: &str, actual: &str) {
    let path = data(name);
    if std::env::var("HERMES_UPDATE_GOLDEN").as_deref() == Ok("1") {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read golden {}: {e}", path.display()));
    assert_eq!(
        actual, expected,
        "golden {name} differs (HERMES_UPDATE_GOLDEN=1 rewrites it)"
    );
}

/// An in-memory log sink for a tracing subscriber.
#[derive(Clone, Default)]
pub struct Capture(Arc<Mutex<Vec<u8>>>);

impl Capture {
    pub fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8(bytes.clone()).unwrap()
    }
}

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Runs `f` with a thread-local subscriber writing human lines (`json = false`) or tracing
/// JSON lines into the returned text.
pub fn capture(json: bool, f: impl FnOnce()) -> String {
    let sink = Capture::default();
    let writer = sink.clone();
    let builder = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone());
    if json {
        tracing::subscriber::with_default(builder.json().finish(), f);
    } else {
        tracing::subscriber::with_default(builder.finish(), f);
    }
    sink.text()
}
