//! Fuzz the readers of the other files a user hands Orrery: calibration profiles, arrival
//! traces, sweep shards, standard benchmark outputs, flow files (`orrery flows`) and accuracy
//! tables (`orrery accuracy --table`). Any input must end in a value or an
//! error (located inside the text where the reader locates errors), never a panic; a profile
//! that reads must survive its own TOML round trip, and appending a validation record to it
//! must give a profile that reads.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match orrery::profile::parse(text) {
        Ok(p) => {
            let again = p.to_toml().expect("a profile that reads writes");
            assert_eq!(orrery::profile::parse(&again).ok().as_ref(), Some(&p), "round trip");
        }
        Err(errs) => {
            for e in errs {
                assert!(e.span.start <= e.span.end && e.span.end <= text.len().max(1));
            }
        }
    }
    for tokens in [false, true] {
        if let Err(e) = orrery::scenario::arrivals::parse(text, tokens) {
            assert!(e.line >= 1 && e.column >= 1);
        }
    }
    let _ = orrery::experiment::json::shard_from_json(text);
    // `orrery flows` files: a flow file that reads, or located errors inside it.
    if let Err(diags) = orrery::network::flowfile::FlowFile::parse(text, 0) {
        for d in diags {
            assert!(d.span.start <= d.span.end && d.span.end <= text.len().max(1), "{d:?}");
        }
    }
    // `orrery accuracy --table DIR` tables and the known gaps they cite.
    let _ = orrery::accuracy::table::parse("fuzz.toml", text);
    let _ = orrery::accuracy::table::parse_gaps("gaps.toml", text);
    use orrery::calibrate::import::{ImportOptions, Input, import};
    let input = Input {
        text: text.to_string(),
        name: "fuzz.txt".into(),
        modified: "2026-12-03T00:00:00Z".into(),
        buffer_bytes: Some(2 << 20),
    };
    let o = ImportOptions {
        accelerator: Some("H100_SXM".into()),
        known_accelerators: vec!["H100_SXM".into()],
        base: None,
        in_place: false,
        seed: 1,
        command: "fuzz".into(),
        date: "2026-12-03T00:00:00Z".into(),
    };
    if let Ok(i) = import(&[input], &o) {
        let t = i.profile.to_toml().expect("an imported profile writes");
        assert!(orrery::profile::parse(&t).is_ok(), "an imported profile reads back");
    }
});
