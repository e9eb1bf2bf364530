//! `orrery validate --record`: a validation's summary appended to a calibration profile as a
//! `[[validation]]` table (schema 5). The profile's own text is kept as written (comments
//! and layout too): the record is appended, and `schema_version` is raised to 5 when it is
//! lower. The result must parse as a profile, or nothing is written.

use crate::profile::schema::ValidationRecord;

#[derive(serde::Serialize)]
struct Wrapper<'a> {
    validation: [&'a ValidationRecord; 1],
}

/// The profile text with `rec` appended.
pub fn append_validation(text: &str, rec: &ValidationRecord) -> Result<String, String> {
    let before = crate::profile::parse(text).map_err(|e| {
        format!(
            "the profile does not read: {}",
            e.first().map_or_else(String::new, |e| e.message.clone())
        )
    })?;
    let mut out = String::with_capacity(text.len() + 512);
    let mut raised = before.schema_version >= 5;
    for line in text.lines() {
        if !raised && line.trim_start().starts_with("schema_version") {
            out.push_str("schema_version = 5");
            raised = true;
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    let table = toml::to_string(&Wrapper { validation: [rec] })
        .map_err(|e| format!("cannot write the record: {e}"))?;
    out.push('\n');
    out.push_str(&table);
    match crate::profile::parse(&out) {
        Ok(after) if after.validation.len() == before.validation.len() + 1 => Ok(out),
        Ok(_) => Err("the record did not land in the profile's `[[validation]]` list".into()),
        Err(e) => Err(format!(
            "the profile with the record does not read: {}",
            e.first().map_or_else(String::new, |e| e.message.clone())
        )),
    }
}
