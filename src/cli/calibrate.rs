//! `orrery calibrate`.

use super::args::CalibrateArgs;
use super::error::Outcome;
use std::path::PathBuf;
use std::process::ExitCode;

/// Whether `out` can be written: not a folder, its folder creatable, a file creatable in it.
fn writable(out: &std::path::Path) -> Result<(), String> {
    if out.is_dir() {
        return Err("is a folder".into());
    }
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    orrery::atomic::create_dir(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    tempfile::tempfile_in(dir)
        .map(drop)
        .map_err(|e| format!("cannot write in {}: {e}", dir.display()))
}

pub(super) fn calibrate(a: CalibrateArgs) -> Outcome {
    use orrery::calibrate;
    let (device, out) = (a.device, a.out);
    let mut o = calibrate::Options::new(device, a.quick, a.seed);
    o.check = a.check;
    o.command = std::iter::once("orrery".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ");
    let out = out.unwrap_or_else(|| {
        let host: String = calibrate::detect::detect()
            .hostname
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        let dev = device.to_string().replace(':', "");
        PathBuf::from("calibration").join(format!("{dev}_{host}.toml"))
    });
    // The output must be writable before minutes of measuring, not after.
    writable(&out).map_err(|e| format!("--out {}: {e}", out.display()))?;
    if super::out::terminal() {
        let bar = indicatif::ProgressBar::new(calibrate::steps(&o));
        if let Ok(style) =
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {msg} · {elapsed}")
        {
            bar.set_style(style);
        }
        o.progress = Some(bar);
    }
    let result = calibrate::calibrate(&o);
    if let Some(bar) = &o.progress {
        bar.finish_and_clear();
    }
    let cal = result?;
    // Write first: a closed stdout must not lose a measurement.
    let files = calibrate::write(&cal, &out)?;
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    out!("{}", cal.summary());
    outln!("wrote {}", names.join(", "));
    Ok(ExitCode::SUCCESS)
}
