//! Calibration profiles: the versioned TOML files `orrery calibrate` writes (measured) or that
//! are derived by hand from datasheets and published measurements, referenced by scenarios
//! by name. [`schema`] holds the types, [`load`] parses and validates a profile's text.
//! Finding and reading the file is `scenario::load`'s job (only it and `atomic` touch the file
//! system).

pub use evidence::LINKS as P2P_LINKS;
mod evidence;
pub mod load;
mod paths;
pub mod schema;

pub use load::{ProfileError, parse};
pub use schema::{Profile, SCHEMA_VERSION, Source};
