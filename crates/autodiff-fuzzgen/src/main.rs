//! `autodiff-fuzzgen`: prints generated functions, for reproducing and minimising failures
//! of the differential test.
//!
//! ```text
//! autodiff-fuzzgen show --index K [--seed S] [--features F]   function K and its helpers
//! autodiff-fuzzgen batch [--seed S] [--count N] [--features F] the batch the test includes
//! autodiff-fuzzgen locate --line L [--seed S] [--count N]      the function at line L of a batch
//! autodiff-fuzzgen features                                    the constructs and the exclusions
//! ```
//!
//! Unset options take the values of `AUTODIFF_FUZZ_SEED`, `AUTODIFF_FUZZ_COUNT`,
//! `AUTODIFF_FUZZ_FEATURES` and `AUTODIFF_FUZZ_SKIP`, then the CI defaults.

use autodiff_fuzzgen::*;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("autodiff-fuzzgen: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cmd = args.first().map(String::as_str).unwrap_or("help");
    let mut opts = std::collections::HashMap::new();
    let mut it = args.iter().skip(1);
    while let Some(k) = it.next() {
        let Some(name) = k.strip_prefix("--") else {
            return Err(format!("unexpected argument `{k}`"));
        };
        let v = it.next().ok_or(format!("--{name} needs a value"))?;
        opts.insert(name.to_string(), v.clone());
    }
    let env_name = |o: &str| format!("AUTODIFF_FUZZ_{}", o.to_uppercase());
    let cfg = config_from(|k| {
        for o in ["seed", "count", "features", "skip"] {
            if k == env_name(o)
                && let Some(v) = opts.get(o)
            {
                return Some(v.clone());
            }
        }
        std::env::var(k).ok()
    })?;
    match cmd {
        "show" => {
            let k: usize = opts
                .get("index")
                .and_then(|s| s.parse().ok())
                .ok_or("show needs --index K")?;
            let f = function(cfg.seed, k, &cfg.features);
            println!(
                "// seed {}, function {k}, features: {}",
                cfg.seed,
                cfg.features.list()
            );
            for j in helper_closure(cfg.seed, &cfg.features, &f.helpers) {
                let h = helper(cfg.seed, j, &cfg.features);
                println!("{}\n{}", h.plain, h.oracle);
            }
            println!("{}\n{}{}", f.plain, f.checks, f.oracle);
            Ok(())
        }
        "batch" => {
            print!("{}", generate(&cfg).text);
            Ok(())
        }
        "locate" => {
            let line: usize = opts
                .get("line")
                .and_then(|s| s.parse().ok())
                .ok_or("locate needs --line L")?;
            let batch = generate(&cfg);
            match batch
                .spans
                .iter()
                .find(|(_, a, b)| (*a..=*b).contains(&line))
            {
                Some((name, a, b)) => {
                    println!("{name} (lines {a}..={b})");
                    Ok(())
                }
                None => Err(format!("line {line} is in no generated function")),
            }
        }
        "features" => {
            for (name, what) in FEATURES {
                let off = if EXCLUDED.contains(name) {
                    " [excluded by default]"
                } else {
                    ""
                };
                println!("{name:16} {what}{off}");
            }
            Ok(())
        }
        _ => {
            println!(
                "{}",
                include_str!("main.rs")
                    .lines()
                    .take(12)
                    .map(|l| l.trim_start_matches("//! ").trim_start_matches("//!"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            Ok(())
        }
    }
}
