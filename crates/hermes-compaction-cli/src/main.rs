//! `hermes-compaction`: see `hermes-compaction --help`.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = hermes_compaction_cli::Cli::parse();
    let mut stdout = std::io::stdout().lock();
    match hermes_compaction_cli::run(cli, &mut stdout) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("error: {e}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}
