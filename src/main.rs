//! The `addonctl` binary: parse, set up logging and the runtime, run, map the result to an exit code.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::parse();
    cli::init_logging(&args);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return cli::report(&anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    match runtime.block_on(cli::run(args)) {
        Ok(code) => code,
        Err(e) => cli::report(&e),
    }
}
