//! Fuzz `orrery import ray-cluster`: any YAML must end in a scenario or a refusal, never a
//! panic. A refusal of a malformed or misshapen YAML points inside the text; and the import
//! never writes a scenario that does not parse or check (its "bug in the import" refusal).
#![no_main]

use libfuzzer_sys::fuzz_target;
use orrery::raycluster::{Failure, Options, Workers, import};

fuzz_target!(init: {
    // As the binary: a panic libyaml-safer is known to raise, caught by `orrery::quiet`, does
    // not reach libFuzzer's hook (which aborts on every panic, caught or not).
    orrery::quiet::install_hook();
}, |data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for workers in [Workers::Min, Workers::Max] {
        let opts = Options {
            name: None,
            workers,
            file_name: "fuzz.yaml".into(),
        };
        match import(text, &opts) {
            Ok(i) => {
                let l = orrery::load_str("imported.orr", &i.text);
                assert!(!l.has_errors(), "{}", l.render(false));
            }
            Err(Failure::Located(e)) => {
                // Lines end as libyaml (and PyYAML, Ray's reader) count them, YAML 1.1, 5.4:
                // \r\n, \n, a lone \r, NEL, LS and PS (`raycluster::yaml::end_of`).
                let lines = text
                    .replace("\r\n", "\n")
                    .matches(['\n', '\r', '\u{85}', '\u{2028}', '\u{2029}'])
                    .count()
                    + 1;
                assert!(e.at.line >= 1 && e.at.line <= lines, "{e:?}");
                assert!(e.at.col >= 1, "{e:?}");
            }
            Err(Failure::Unmapped { message, .. }) => {
                assert!(!message.contains("bug in the import"), "{message}");
            }
        }
    }
});
