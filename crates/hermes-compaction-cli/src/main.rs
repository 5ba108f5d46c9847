//! `hermes-compaction`: see `hermes-compaction --help`.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match hermes_compaction_cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap quotes what the user typed; a control character in it must not reach the
            // terminal raw (help and version go to stdout, exit 0).
            let text = hermes_compaction_cli::escape_controls(&e.render().to_string());
            #[allow(clippy::print_stderr, clippy::print_stdout)]
            if e.use_stderr() {
                eprint!("{text}");
            } else {
                print!("{text}");
            }
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let mut stdout = std::io::stdout().lock();
    match hermes_compaction_cli::run(cli, &mut stdout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!(
                    "error: {}",
                    hermes_compaction_cli::escape_controls(&e.to_string())
                );
            }
            ExitCode::from(e.exit_code())
        }
    }
}
