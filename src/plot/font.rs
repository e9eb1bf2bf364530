//! The one font every plot draws its text with: DejaVu Sans, embedded in the binary (see
//! `assets/fonts/LICENSE-DejaVu`), so plotting needs no system font libraries.

use std::sync::OnceLock;

use plotters::style::FontStyle;

/// DejaVu Sans (regular), as shipped in `assets/fonts/`.
pub static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Registers the embedded font as plotters' `sans-serif` (once per process; later calls return
/// the first outcome).
pub fn ensure() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font(super::FONT, FontStyle::Normal, DEJAVU_SANS)
            .map_err(|_| "plot: the embedded DejaVu Sans font could not be parsed".to_string())
    })
    .clone()
}

#[cfg(test)]
mod tests {
    #[test]
    fn embedded_font_registers() {
        assert!(super::DEJAVU_SANS.len() > 100_000);
        super::ensure().unwrap();
        super::ensure().unwrap();
    }
}
