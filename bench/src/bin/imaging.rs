//! `vellum-bench-imaging`: the transform figures of issue 8.
//!
//! The requirement: for a 4000x3000 JPEG, `size-400` and `thumbnail` each under 40 ms cold
//! (release build, this 2-core machine). "Cold" means every call starts from the raw file bytes
//! with nothing cached; the figure is the median of `--runs` calls.
//!
//! Without `--input`, a photographic-like 4000x3000 JPEG is generated: smooth gradients, cloud-like
//! multi-octave value noise for structure and per-pixel grain, so it compresses like a photo and
//! not like a flat test card; encoded at quality 90 with 4:2:0 chroma subsampling (what cameras and
//! phones write; `--chroma-444` for full-resolution chroma, which doubles the coefficients to
//! decode).
//!
//! For comparison the same `size-400` (and thumbnail) is done with the `image` crate alone in the
//! same run: `image::load_from_memory`, `resize` (`resize_to_fill` for the thumbnail) with Lanczos3
//! (the filter vellum-imaging uses) and `image`'s JPEG encoder at the same quality.
//!
//! Output: a table for people on stderr, one JSON line for machines on stdout. This is a tool run
//! by hand, never a timed test: it reports the targets, it does not fail on them.

use std::hint::black_box;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use image::codecs::jpeg::JpegEncoder;
use image::imageops::FilterType;
use serde_json::{Value as Json, json};
use vellum_imaging::{Preset, TransformOptions, transform};

/// The requirement's median for `size-400` and `thumbnail`, in milliseconds.
const TARGET_MS: f64 = 40.0;
const WIDTH: u32 = 4000;
const HEIGHT: u32 = 3000;
const SOURCE_QUALITY: u8 = 90;

/// Command line of `vellum-bench-imaging`.
#[derive(Debug, Parser)]
#[command(
    name = "vellum-bench-imaging",
    about = "Cold transform latency of vellum-imaging against the image crate"
)]
struct Cli {
    /// A JPEG to use instead of the generated 4000x3000 one.
    #[arg(long)]
    input: Option<PathBuf>,

    /// Timed calls per measurement.
    #[arg(long, default_value_t = 21, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,

    /// Generate the source with full-resolution (4:4:4) chroma instead of 4:2:0.
    #[arg(long)]
    chroma_444: bool,

    /// Also time `small`, `medium` and `large`.
    #[arg(long)]
    all_presets: bool,

    /// Write the source JPEG to this file (e.g. to profile with it, or reuse it with `--input`).
    #[arg(long)]
    save_source: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
enum BenchError {
    #[error("could not read {path}")]
    Input {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("could not write {path}")]
    Save {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("could not generate the source image: {0}")]
    Generate(String),
    #[error(transparent)]
    Imaging(#[from] vellum_imaging::ImagingError),
    #[error("image crate: {0}")]
    Image(#[from] image::ImageError),
    #[error("could not write the report")]
    Output(#[source] std::io::Error),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "vellum-bench-imaging: {err}");
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                let _ = writeln!(stderr, "  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::FAILURE
        }
    }
}

/// A message for people, on stderr (a closed stderr is not worth failing a benchmark over).
fn say(message: &str) {
    let _ = writeln!(std::io::stderr(), "{message}");
}

/// Timings of one measurement, in milliseconds.
#[derive(Debug)]
struct Stats {
    median: f64,
    min: f64,
    max: f64,
    output: (u32, u32),
}

impl Stats {
    fn json(&self, target: Option<f64>) -> Json {
        let mut value = json!({
            "median_ms": round(self.median),
            "min_ms": round(self.min),
            "max_ms": round(self.max),
            "output": [self.output.0, self.output.1],
        });
        if let (Some(target), Some(object)) = (target, value.as_object_mut()) {
            object.insert("target_median_ms".to_owned(), json!(target));
            object.insert("met".to_owned(), json!(self.median < target));
        }
        value
    }
}

fn round(ms: f64) -> f64 {
    (ms * 100.0).round() / 100.0
}

/// Runs `f` `runs` times and summarises the durations; `f` returns the output size.
fn measure<E>(runs: u32, mut f: impl FnMut() -> Result<(u32, u32), E>) -> Result<Stats, E> {
    let mut times = Vec::new();
    let mut output = (0, 0);
    for _ in 0..runs {
        let start = Instant::now();
        output = f()?;
        times.push(start.elapsed());
    }
    times.sort_unstable();
    let ms = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    Ok(Stats {
        median: ms(times.get(times.len() / 2)),
        min: ms(times.first()),
        max: ms(times.last()),
        output,
    })
}

fn run(cli: &Cli) -> Result<(), BenchError> {
    let (source, description) = match &cli.input {
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|source| BenchError::Input {
                path: path.display().to_string(),
                source,
            })?;
            (bytes, format!("{}", path.display()))
        }
        None => {
            let started = Instant::now();
            let bytes = generate(cli.chroma_444)?;
            let chroma = if cli.chroma_444 { "4:4:4" } else { "4:2:0" };
            say(&format!(
                "generated the source in {:.1} s",
                started.elapsed().as_secs_f64()
            ));
            (
                bytes,
                format!("generated photo-like JPEG, quality {SOURCE_QUALITY}, {chroma}"),
            )
        }
    };
    if let Some(path) = &cli.save_source {
        std::fs::write(path, &source).map_err(|source| BenchError::Save {
            path: path.display().to_string(),
            source,
        })?;
    }
    let probe = vellum_imaging::probe(&source);
    let (width, height) = (probe.width.unwrap_or(0), probe.height.unwrap_or(0));
    let pixels = f64::from(width) * f64::from(height);
    let bits_per_pixel = if pixels > 0.0 {
        source.len() as f64 * 8.0 / pixels
    } else {
        0.0
    };
    say(&format!(
        "input: {description}: {width}x{height} {}, {:.2} MB ({bits_per_pixel:.2} bits/pixel)",
        probe.mime_type,
        source.len() as f64 / 1e6,
    ));
    say(&format!(
        "{} runs per measurement, each from the raw bytes (nothing cached); median, min, max in ms",
        cli.runs
    ));

    let options = TransformOptions::default();
    let ours = |preset: Preset| {
        measure(cli.runs, || {
            let out = transform(black_box(&source), preset, None, &options)?;
            black_box(&out.bytes);
            Ok::<_, BenchError>((out.width, out.height))
        })
    };
    let size_400 = ours(Preset::Size(400))?;
    let thumbnail = ours(Preset::Thumbnail)?;
    let mut others = Vec::new();
    if cli.all_presets {
        for preset in [Preset::Small, Preset::Medium, Preset::Large] {
            others.push((preset.key(), ours(preset)?));
        }
    }

    let image_crate = |thumbnail: bool| {
        measure(cli.runs, || {
            let decoded = image::load_from_memory(black_box(&source))?;
            let resized = if thumbnail {
                decoded.resize_to_fill(200, 200, FilterType::Lanczos3)
            } else {
                decoded.resize(400, 400, FilterType::Lanczos3)
            };
            let mut out = Vec::new();
            resized.write_with_encoder(JpegEncoder::new_with_quality(
                &mut out,
                options.jpeg_quality,
            ))?;
            black_box(&out);
            Ok::<_, BenchError>((resized.width(), resized.height()))
        })
    };
    let image_size_400 = image_crate(false)?;
    let image_thumbnail = image_crate(true)?;

    let verdict = |s: &Stats| {
        if s.median < TARGET_MS {
            format!("< {TARGET_MS} ms: met")
        } else {
            format!("< {TARGET_MS} ms: MISSED")
        }
    };
    let row = |name: &str, s: &Stats, note: &str| {
        say(&format!(
            "{name:<28} {:>8.1} {:>8.1} {:>8.1}   {:>9}   {note}",
            s.median,
            s.min,
            s.max,
            format!("{}x{}", s.output.0, s.output.1)
        ));
    };
    say(&format!(
        "{:<28} {:>8} {:>8} {:>8}   {:>9}",
        "case", "median", "min", "max", "output"
    ));
    row("vellum-imaging size-400", &size_400, &verdict(&size_400));
    row("vellum-imaging thumbnail", &thumbnail, &verdict(&thumbnail));
    for (key, stats) in &others {
        row(&format!("vellum-imaging {key}"), stats, "");
    }
    row("image crate size-400", &image_size_400, "");
    row("image crate thumbnail", &image_thumbnail, "");
    let ratio_size_400 = image_size_400.median / size_400.median.max(f64::EPSILON);
    let ratio_thumbnail = image_thumbnail.median / thumbnail.median.max(f64::EPSILON);
    say(&format!(
        "image crate / vellum-imaging (median): size-400 {ratio_size_400:.1}x, thumbnail {ratio_thumbnail:.1}x"
    ));

    let mut report = json!({
        "input": {
            "description": description,
            "width": width,
            "height": height,
            "bytes": source.len(),
        },
        "runs": cli.runs,
        "size_400": size_400.json(Some(TARGET_MS)),
        "thumbnail": thumbnail.json(Some(TARGET_MS)),
        "image_crate_size_400": image_size_400.json(None),
        "image_crate_thumbnail": image_thumbnail.json(None),
        "ratio_size_400": round(ratio_size_400),
        "ratio_thumbnail": round(ratio_thumbnail),
    });
    if let Some(object) = report.as_object_mut() {
        for (key, stats) in &others {
            object.insert(key.clone(), stats.json(None));
        }
    }
    writeln!(std::io::stdout(), "{report}").map_err(BenchError::Output)
}

/// A deterministic pseudo-random value in `-1..=1` for a lattice point.
fn lattice(seed: u32, x: u32, y: u32) -> f32 {
    let mut h = u64::from(seed) << 40 ^ u64::from(x) << 20 ^ u64::from(y);
    // splitmix64 finaliser
    h = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^= h >> 31;
    // The top 24 bits, exactly representable in f32.
    let unit = f32::from(u16::try_from(h >> 48).unwrap_or(0)) / f32::from(u16::MAX);
    unit * 2.0 - 1.0
}

/// Smoothly interpolated value noise with lattice spacing `cell` pixels.
fn value_noise(seed: u32, x: u32, y: u32, cell: u32) -> f32 {
    let (cx, cy) = (x / cell, y / cell);
    let cell_f = cell as f32;
    let smooth = |t: f32| t * t * (3.0 - 2.0 * t);
    let tx = smooth((x % cell) as f32 / cell_f);
    let ty = smooth((y % cell) as f32 / cell_f);
    let top = lattice(seed, cx, cy) * (1.0 - tx) + lattice(seed, cx + 1, cy) * tx;
    let bottom = lattice(seed, cx, cy + 1) * (1.0 - tx) + lattice(seed, cx + 1, cy + 1) * tx;
    top * (1.0 - ty) + bottom * ty
}

/// The photographic-like source: gradients, multi-octave structure and grain, as a JPEG.
fn generate(chroma_444: bool) -> Result<Vec<u8>, BenchError> {
    let mut rgb = Vec::with_capacity(usize::try_from(WIDTH * HEIGHT * 3).unwrap_or(0));
    let mut grain_state: u32 = 0x2545_f491;
    let mut grain = move || {
        // xorshift32, in -1..=1
        grain_state ^= grain_state << 13;
        grain_state ^= grain_state >> 17;
        grain_state ^= grain_state << 5;
        f32::from(u16::try_from(grain_state >> 16).unwrap_or(0)) / f32::from(u16::MAX) * 2.0 - 1.0
    };
    for y in 0..HEIGHT {
        let fy = y as f32 / HEIGHT as f32;
        for x in 0..WIDTH {
            let fx = x as f32 / WIDTH as f32;
            let structure = 45.0 * value_noise(1, x, y, 480)
                + 25.0 * value_noise(2, x, y, 120)
                + 12.0 * value_noise(3, x, y, 30)
                + 6.0 * value_noise(4, x, y, 7);
            let tint = 18.0 * value_noise(5, x, y, 350);
            let luma_grain = 5.0 * grain();
            let base = [
                70.0 + 120.0 * fy + 30.0 * fx + tint,
                110.0 + 70.0 * (1.0 - fy) + 20.0 * fx - tint * 0.5,
                190.0 - 130.0 * fy - 20.0 * fx - tint,
            ];
            for channel in base {
                let value = channel + structure + luma_grain + 2.0 * grain();
                // Clamped to 0..=255 first, so the cast is exact.
                rgb.push(value.round().clamp(0.0, 255.0) as u8);
            }
        }
    }
    let mut out = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, SOURCE_QUALITY);
    encoder.set_sampling_factor(if chroma_444 {
        jpeg_encoder::SamplingFactor::F_1_1
    } else {
        jpeg_encoder::SamplingFactor::F_2_2
    });
    let (width, height) = (
        u16::try_from(WIDTH).unwrap_or(u16::MAX),
        u16::try_from(HEIGHT).unwrap_or(u16::MAX),
    );
    encoder
        .encode(&rgb, width, height, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| BenchError::Generate(e.to_string()))?;
    Ok(out)
}
