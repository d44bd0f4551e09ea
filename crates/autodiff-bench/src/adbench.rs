//! Loaders of the ADBench input and expected-output files in `data/adbench/`.
//!
//! The files come from microsoft/ADBench (MIT License, Copyright (c) Microsoft
//! Corporation); `data/adbench/README.md` describes their formats.

use std::fs;
use std::path::PathBuf;

/// The folder holding the ADBench files.
pub fn data_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/data/adbench"))
}

fn read(rel: &str) -> String {
    let path = data_dir().join(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn numbers(text: &str) -> impl Iterator<Item = f64> + '_ {
    text.split_whitespace().map(|t| {
        t.parse::<f64>()
            .unwrap_or_else(|e| panic!("bad number {t:?}: {e}"))
    })
}

/// One GMM instance (`gmm/*.txt`).
#[derive(Clone, Debug, PartialEq)]
pub struct GmmInput {
    /// Dimension of the points.
    pub d: usize,
    /// Number of mixture components.
    pub k: usize,
    /// Number of points.
    pub n: usize,
    /// `k` mixture weights (log scale).
    pub alphas: Vec<f64>,
    /// `k * d` means, row by row.
    pub means: Vec<f64>,
    /// `k * d(d+1)/2` inverse-covariance factors: per component `q` (d) then `l`.
    pub icf: Vec<f64>,
    /// `n * d` points, row by row.
    pub x: Vec<f64>,
    /// Wishart prior `gamma`.
    pub gamma: f64,
    /// Wishart prior `m` (an integer in the reference).
    pub m: f64,
}

impl GmmInput {
    /// The parameters the gradient is taken with respect to: `[alphas, means, icf]`.
    pub fn params(&self) -> Vec<f64> {
        let mut p = self.alphas.clone();
        p.extend_from_slice(&self.means);
        p.extend_from_slice(&self.icf);
        p
    }
}

/// Loads `gmm/<name>.txt` (`name` is `test`, `gmm_d2_K5` or `gmm_d10_K25`).
pub fn load_gmm(name: &str) -> GmmInput {
    parse_gmm(&read(&format!("gmm/{name}.txt")))
}

/// Reads a GMM instance in ADBench's layout (see `data/adbench/README.md`).
///
/// # Panics
/// If the text ends early or holds something other than numbers.
pub fn parse_gmm(text: &str) -> GmmInput {
    let mut it = numbers(text);
    let mut next = || it.next().expect("GMM file ends early");
    let d = next() as usize;
    let k = next() as usize;
    let n = next() as usize;
    let icf_sz = d * (d + 1) / 2;
    let alphas = (0..k).map(|_| next()).collect();
    let means = (0..k * d).map(|_| next()).collect();
    let icf = (0..k * icf_sz).map(|_| next()).collect();
    let x = (0..n * d).map(|_| next()).collect();
    let gamma = next();
    let m = next();
    GmmInput {
        d,
        k,
        n,
        alphas,
        means,
        icf,
        x,
        gamma,
        m,
    }
}

/// One LSTM instance (`lstm/*.txt`).
#[derive(Clone, Debug, PartialEq)]
pub struct LstmInput {
    /// Layers.
    pub l: usize,
    /// Sequence length.
    pub c: usize,
    /// Width of a layer (the "b" of the reference).
    pub b: usize,
    /// `2 * l * 4b` main parameters: per layer a weight block then a bias block.
    pub main: Vec<f64>,
    /// `3 * b` extra parameters: input weight, output weight, output bias.
    pub extra: Vec<f64>,
    /// `2 * l * b` initial state: per layer hidden then cell.
    pub state: Vec<f64>,
    /// `c * b` sequence, row by row.
    pub seq: Vec<f64>,
}

impl LstmInput {
    /// The parameters the gradient is taken with respect to: `[main, extra]`.
    pub fn params(&self) -> Vec<f64> {
        let mut p = self.main.clone();
        p.extend_from_slice(&self.extra);
        p
    }
}

/// Loads `lstm/<name>.txt` (`name` is `lstm_l2_c1024` or `lstm_l4_c1024`).
pub fn load_lstm(name: &str) -> LstmInput {
    parse_lstm(&read(&format!("lstm/{name}.txt")))
}

/// Reads an LSTM instance in ADBench's layout (see `data/adbench/README.md`).
///
/// # Panics
/// If the text ends early or holds something other than numbers.
pub fn parse_lstm(text: &str) -> LstmInput {
    let mut it = numbers(text);
    let mut next = || it.next().expect("LSTM file ends early");
    let l = next() as usize;
    let c = next() as usize;
    let b = next() as usize;
    let main = (0..2 * l * 4 * b).map(|_| next()).collect();
    let extra = (0..3 * b).map(|_| next()).collect();
    let state = (0..2 * l * b).map(|_| next()).collect();
    let seq = (0..c * b).map(|_| next()).collect();
    LstmInput {
        l,
        c,
        b,
        main,
        extra,
        state,
        seq,
    }
}

/// Writes `values`, `width` of them a line, each in its shortest exact form.
fn write_rows(out: &mut String, values: &[f64], width: usize) {
    use std::fmt::Write;
    for row in values.chunks(width.max(1)) {
        let line: Vec<String> = row.iter().map(|v| v.to_string()).collect();
        let _ = writeln!(out, "{}", line.join(" "));
    }
}

/// `input` in ADBench's GMM layout, which [`parse_gmm`] reads back exactly (for
/// instances of [`crate::generate::gmm_instance`], or bigger ones of your own).
pub fn write_gmm(input: &GmmInput) -> String {
    let GmmInput { d, k, n, .. } = *input;
    let mut out = format!("{d} {k} {n}\n");
    write_rows(&mut out, &input.alphas, 1);
    write_rows(&mut out, &input.means, d);
    write_rows(&mut out, &input.icf, d * (d + 1) / 2);
    write_rows(&mut out, &input.x, d);
    out.push_str(&format!("{} {}\n", input.gamma, input.m));
    out
}

/// `input` in ADBench's LSTM layout, which [`parse_lstm`] reads back exactly.
pub fn write_lstm(input: &LstmInput) -> String {
    let LstmInput { l, c, b, .. } = *input;
    let mut out = format!("{l} {c} {b}\n\n");
    for (values, width) in [
        (&input.main, 4 * b),
        (&input.extra, b),
        (&input.state, b),
        (&input.seq, b),
    ] {
        write_rows(&mut out, values, width);
        out.push('\n');
    }
    out
}

/// Reads `expected/<name>`: one value a line.
pub fn load_expected(name: &str) -> Vec<f64> {
    numbers(&read(&format!("expected/{name}"))).collect()
}
