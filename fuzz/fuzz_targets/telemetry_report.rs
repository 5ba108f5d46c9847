//! The telemetry report's log reader on any bytes (plain or gzip-looking): never a panic, and
//! the report renders as text and JSON.
#![no_main]

use compaction_telemetry::{Report, ReportOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let options = ReportOptions {
        per_session: true,
        json: false,
    };
    if let Ok(report) = Report::from_readers([data], options) {
        let _ = report.to_string();
        let _ = report.to_json();
    }
});
