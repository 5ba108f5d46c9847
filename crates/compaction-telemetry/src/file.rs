//! A telemetry file for binaries: this thread's event lines written to a file, with a write
//! failure reported rather than lost.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use tracing_subscriber::util::SubscriberInitExt;

use crate::TARGET;

/// Writes this thread's telemetry lines (target [`TARGET`], INFO; the plain `tracing` format
/// the report reads) to a file while it is alive. Call [`FileSink::finish`] when the passes
/// are done: a line that could not be written (a full disk, a device that refuses writes) is
/// then an error, so a run never reports success with its telemetry silently lost. Every
/// error names the file (`cannot create the telemetry file PATH: CAUSE`, or `cannot write
/// ...` when the file exists), with the cause's [`ErrorKind`](std::io::ErrorKind), so a
/// binary prints it as it is.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let dir = std::env::temp_dir().join(format!("compaction-telemetry-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let path = dir.join("telemetry.log");
/// let sink = compaction_telemetry::FileSink::create(&path)?;
/// tracing::info!(target: compaction_telemetry::TARGET, "compaction turn telemetry: {{}}");
/// tracing::info!(target: "elsewhere", "not telemetry");
/// sink.finish()?;
/// let text = std::fs::read_to_string(&path)?;
/// assert!(text.contains("compaction turn telemetry: {}"));
/// assert!(!text.contains("not telemetry"));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct FileSink {
    guard: Option<tracing::subscriber::DefaultGuard>,
    file: Arc<Mutex<CheckedFile>>,
    path: PathBuf,
}

impl FileSink {
    /// Creates (or truncates) `path` and collects this thread's telemetry lines into it.
    ///
    /// # Errors
    ///
    /// The file cannot be created.
    pub fn create(path: &Path) -> std::io::Result<FileSink> {
        let file = File::create(path).map_err(|e| naming(path, e))?;
        FileSink::collect(
            path,
            CheckedFile {
                file: Some(file),
                deferred: None,
                error: None,
            },
        )
    }

    /// Collects this thread's telemetry lines in memory and writes them to `path` only at
    /// [`finish`](Self::finish), which creates (or truncates) the file then: a sink dropped
    /// without `finish` (a run that failed) creates nothing and leaves an existing file as
    /// it was.
    ///
    /// ```
    /// # fn main() -> std::io::Result<()> {
    /// let dir = std::env::temp_dir().join(format!("compaction-telemetry-deferred-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("telemetry.log");
    /// let sink = compaction_telemetry::FileSink::deferred(&path)?;
    /// tracing::info!(target: compaction_telemetry::TARGET, "compaction turn telemetry: {{}}");
    /// drop(sink); // a failed run: no file
    /// assert!(!path.exists());
    /// let sink = compaction_telemetry::FileSink::deferred(&path)?;
    /// tracing::info!(target: compaction_telemetry::TARGET, "compaction turn telemetry: {{}}");
    /// sink.finish()?;
    /// assert!(std::fs::read_to_string(&path)?.contains("compaction turn telemetry: {}"));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The telemetry filter cannot be built (creating the file is left to `finish`).
    pub fn deferred(path: &Path) -> std::io::Result<FileSink> {
        FileSink::collect(
            path,
            CheckedFile {
                file: None,
                deferred: Some(Vec::new()),
                error: None,
            },
        )
    }

    fn collect(path: &Path, file: CheckedFile) -> std::io::Result<FileSink> {
        let filter = tracing_subscriber::EnvFilter::try_new(format!("{TARGET}=info"))
            .map_err(|e| naming(path, std::io::Error::other(e)))?;
        let file = Arc::new(Mutex::new(file));
        let subscriber = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(SharedFile(file.clone()))
            .finish();
        Ok(FileSink {
            guard: Some(subscriber.set_default()),
            file,
            path: path.to_owned(),
        })
    }

    /// Stops collecting, flushes the file to disk and reports the first write failure. A
    /// [deferred](Self::deferred) sink creates its file and writes its lines now.
    ///
    /// # Errors
    ///
    /// A line could not be written, the file could not be synced, or (deferred) the file
    /// could not be created.
    pub fn finish(mut self) -> std::io::Result<()> {
        drop(self.guard.take());
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        file.finish(&self.path).map_err(|e| naming(&self.path, e))
    }
}

/// `e` with a message that names the telemetry file: `cannot write` when the file exists
/// (afterwards), else `cannot create`; the kind is kept.
fn naming(path: &Path, e: std::io::Error) -> std::io::Error {
    let what = if path.exists() { "write" } else { "create" };
    std::io::Error::new(
        e.kind(),
        format!("cannot {what} the telemetry file {}: {e}", path.display()),
    )
}

/// A file that remembers its first write error (the logging layer drops errors), or the
/// lines of a deferred sink, held until [`FileSink::finish`] writes them.
#[derive(Debug)]
struct CheckedFile {
    file: Option<File>,
    deferred: Option<Vec<u8>>,
    error: Option<std::io::Error>,
}

impl CheckedFile {
    /// Writes the deferred lines to `path` (creating it), syncs, and returns the first error.
    fn finish(&mut self, path: &Path) -> std::io::Result<()> {
        if let Some(lines) = self.deferred.take() {
            let mut f = File::create(path)?;
            f.write_all(&lines)?;
            self.file = Some(f);
        }
        // A device or a FIFO (`/dev/null`) has nothing to sync, and refuses to (EINVAL).
        let synced = match &self.file {
            Some(f) if f.metadata().is_ok_and(|m| m.is_file()) => f.sync_all(),
            _ => Ok(()),
        };
        self.error.take().map_or(synced, Err)
    }
}

impl Write for CheckedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let result = match (&mut self.file, &mut self.deferred) {
            (_, Some(lines)) => {
                lines.extend_from_slice(buf);
                Ok(buf.len())
            }
            // All or nothing per line: a short write would leave half an event in the log.
            (Some(file), None) => file.write_all(buf).map(|()| buf.len()),
            (None, None) => Ok(buf.len()),
        };
        if let Err(e) = &result
            && self.error.is_none()
        {
            self.error = Some(std::io::Error::new(e.kind(), e.to_string()));
        }
        result
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().map_or(Ok(()), File::flush)
    }
}

/// A writer handed to the logging layer: one lock of the shared checked file per line.
#[derive(Debug, Clone)]
struct SharedFile(Arc<Mutex<CheckedFile>>);

impl Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for SharedFile {
    type Writer = SharedFile;

    fn make_writer(&'a self) -> SharedFile {
        self.clone()
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A device that refuses writes: the lost line is an error at `finish`, not a success.
    #[test]
    fn a_refused_write_is_reported() {
        let sink = FileSink::create(Path::new("/dev/full")).unwrap();
        tracing::info!(target: TARGET, "compaction turn telemetry: {{}}");
        let e = sink.finish().unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::StorageFull, "{e}");
        let sink = FileSink::deferred(Path::new("/dev/full")).unwrap();
        tracing::info!(target: TARGET, "compaction turn telemetry: {{}}");
        let e = sink.finish().unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::StorageFull, "{e}");
        assert!(
            e.to_string()
                .starts_with("cannot write the telemetry file /dev/full: "),
            "{e}"
        );
    }

    /// A file that cannot be created is named, whether at once or at `finish`.
    #[test]
    fn an_uncreatable_file_is_named() {
        let path = Path::new("/nonexistent-dir/telemetry.log");
        let e = FileSink::create(path).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
        let named = "cannot create the telemetry file /nonexistent-dir/telemetry.log: ";
        assert!(e.to_string().starts_with(named), "{e}");
        let e = FileSink::deferred(path).unwrap().finish().unwrap_err();
        assert!(e.to_string().starts_with(named), "{e}");
    }
}
