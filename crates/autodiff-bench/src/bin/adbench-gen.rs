//! Writes a seeded ADBench instance of any size to standard output, in ADBench's layout:
//!
//! ```text
//! cargo run --release -p autodiff-bench --bin adbench-gen -- gmm D K N [SEED] > gmm.txt
//! cargo run --release -p autodiff-bench --bin adbench-gen -- lstm L C B [SEED] > lstm.txt
//! ```
//!
//! `autodiff_bench::adbench::parse_gmm` and `parse_lstm` read the files back.

use autodiff_bench::adbench::{write_gmm, write_lstm};
use autodiff_bench::generate::{gmm_instance, lstm_instance};
use std::io::Write;
use std::process::ExitCode;

const USAGE: &str = "usage: adbench-gen gmm D K N [SEED] | adbench-gen lstm L C B [SEED]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(text) => {
            let mut out = std::io::stdout().lock();
            if out.write_all(text.as_bytes()).is_err() {
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("adbench-gen: {e}\n{USAGE}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<String, String> {
    let (problem, sizes) = args.split_first().ok_or("no problem named")?;
    if !(3..=4).contains(&sizes.len()) {
        return Err(format!("expected three sizes and a seed, got {sizes:?}"));
    }
    let num = |i: usize| -> Result<usize, String> {
        sizes[i]
            .parse()
            .map_err(|_| format!("`{}` is not a size", sizes[i]))
    };
    let seed = match sizes.get(3) {
        Some(s) => s.parse().map_err(|_| format!("`{s}` is not a seed"))?,
        None => 1,
    };
    let (a, b, c) = (num(0)?, num(1)?, num(2)?);
    match problem.as_str() {
        "gmm" if a > 0 && b > 0 => Ok(write_gmm(&gmm_instance(a, b, c, seed))),
        "lstm" if a > 0 && c > 0 && b >= 2 => Ok(write_lstm(&lstm_instance(a, b, c, seed))),
        "gmm" => Err("D and K must be positive".into()),
        "lstm" => Err("L and B must be positive, and C at least 2".into()),
        other => Err(format!("unknown problem `{other}`")),
    }
}
